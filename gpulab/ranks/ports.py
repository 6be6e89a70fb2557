"""Which port a launch's rendezvous store listens on: any free one, or one of this kernel's private range (the store:
torch.distributed).

Alone on a machine, ``gpulab.launch`` lets the system pick a free port (``port 0``), as torchrun's agent does. On a
workshop server each provisioned kernel gets a private range of ports with its GPUs (``GPULAB_MASTER_PORTS``, for
example ``29510-29519``, and ``MASTER_PORT`` set to its first port), so two students' DDP runs never meet on a port
and a student can tell which port is theirs. The launcher then tries the range's ports in order.
Ranges are derived from the reservation's lowest physical GPU index, which no other reservation holds at the same time,
so ranges of reservations held together never overlap. ``open_store`` opens the launcher's store on
them. Taught in ``notebooks/02_choosing_gpus.ipynb``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = [
    "PORTS_VAR",
    "BASE_PORT",
    "PORTS_PER_RESERVATION",
    "reservation_ports",
    "parse_ports",
    "store_ports",
    "format_ports",
    "open_store",
]

PORTS_VAR = "GPULAB_MASTER_PORTS"
BASE_PORT = 29500  # torchrun's default MASTER_PORT
PORTS_PER_RESERVATION = 10


def reservation_ports(
    physical_indices: tuple[int, ...] | list[int], base: int = BASE_PORT, width: int = PORTS_PER_RESERVATION
) -> range:
    """The private ports of a reservation of these GPUs: ``width`` ports from ``base + width × (lowest index + 1)``.

    ``base`` itself (torchrun's default 29500) stays outside every range, for scripts that hard-code it."""
    if not physical_indices:
        raise ValueError("a reservation with no GPU has no port range; only GPU reservations get one.")
    first = base + width * (min(physical_indices) + 1)
    return range(first, first + width)


def format_ports(ports: range) -> str:
    """``ports`` as ``"29500-29509"`` (both ends included): how a reservation writes its range."""
    return f"{ports.start}-{ports.stop - 1}"


def parse_ports(text: str) -> range:
    """``"29510-29519"`` as a range; a clear error for anything else (the variable is set by the provisioner, but a
    learner may set it by hand)."""
    try:
        a, b = (int(part) for part in text.strip().split("-"))
    except ValueError:
        raise ValueError(
            f"{PORTS_VAR}={text!r}: expected a range of ports written first-last, for example "
            f"{PORTS_VAR}=29510-29519 (unset it to let the system pick a free port)."
        ) from None
    if not 1024 <= a <= b <= 65535:
        raise ValueError(
            f"{PORTS_VAR}={text!r}: the range must go upwards within 1024-65535, for example {PORTS_VAR}=29510-29519."
        )
    return range(a, b + 1)


def store_ports(env: Mapping[str, str] | None = None) -> list[int]:
    """Ports to try for the rendezvous store, in order: this kernel's private range, or ``[0]`` (the system picks)."""
    env = os.environ if env is None else env
    text = env.get(PORTS_VAR)
    return list(parse_ports(text)) if text else [0]


def open_store(world_size: int, timeout_s: float, candidates: Sequence[int] | None = None) -> Any:
    """The rendezvous store on a port the system picks, or on the first free port of this kernel's private range
    (``GPULAB_MASTER_PORTS``): torch.distributed's ``TCPStore``, hosted by the launching process. ``candidates``:
    the ports to try, in order (default ``store_ports()``; the launch plan holds them)."""
    from datetime import timedelta

    import torch.distributed as dist

    candidates = store_ports() if candidates is None else candidates
    for port in candidates:
        try:
            return dist.TCPStore(
                "127.0.0.1",
                port,
                world_size=world_size,
                is_master=True,
                wait_for_workers=False,
                timeout=timedelta(seconds=timeout_s),
            )
        except (RuntimeError, OSError):  # DistNetworkError (a RuntimeError): the port is in use; try the next one
            if port == 0:
                raise
    raise RuntimeError(
        f"every port of this kernel's range {os.environ[PORTS_VAR]} is in use (by launches still "
        f"running in this kernel, or by another program). Wait for the running launches to finish, or "
        f"unset {PORTS_VAR} in this kernel (os.environ.pop({PORTS_VAR!r})) to let the system pick a port."
    )
