"""Holding the GPUs you picked against the other kernels on the same server (a probe: files and locks).

Two notebooks that ask "which GPU is free?" at the same moment get the same answer. ``reserve_gpus`` therefore
chooses under the machine's selection lock and then holds each chosen GPU's lock file (``gpulab.reservations``: one
file per GPU in ``$GPULAB_RESERVATIONS_DIR``, default ``/tmp/gpulab-reservations``, that every user can lock). The
lock goes with the process that holds it, however it ends, so a reservation can never outlive its owner. The holder
writes its pid, user, host and details into files of its own beside it, so the picker can say who is using a GPU; the
details other than the kernel id, the user a server is for and the ports (a notebook's path, a server's name) are
private to the holder's user, root and the instructor group. Inside a server whose GPUs JupyterHub reserved for its
user (``gpulab.server.hub``), those GPUs are this user's already: ``reserve_gpus`` hands them over as they are, held by
the Hub, without a second reservation.
Never creates a CUDA context: the GPUs are read through NVML (or a described machine). Taught in
``notebooks/02_choosing_gpus.ipynb``.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from pathlib import Path

from ..core.arguments import function, seconds, whole_number
from ..core.readings import GpuInfo
from ..core.reservable import device_readings
from ..core.shares import GpuShare
from ..core.visible import visible_map
from ..machine.nvml import GpuReader
from ..machine.resolve import as_reader
from ..reservations.folder import hold, let_go, require_flock, reservations_dir, selection_lock
from ..reservations.holders import reservation_holders
from ..reservations.yours import yours_and_others
from .allowed import usable_gpus
from .selection import Choice, NoFreeGpu, Policy, choose_gpus, rank_gpus, validated_policy
from .setter import set_visible_devices

__all__ = ["Reservation", "reserve_gpus", "validated_details"]


@dataclass
class Reservation:
    """GPUs held by this process until ``release()``, the end of a ``with`` block, the object being dropped, or the
    end of the process (however it ends: the kernel releases the locks); or, inside a server JupyterHub reserved GPUs
    for, the server's GPUs, which the Hub holds for the server's whole life (``held_for`` says whose)."""

    choice: Choice
    reservations: Path
    """The reservations folder the locks are in (``reserve_gpus(reservations=...)``)."""
    _fds: dict[str, int]
    held_for: str = ""
    """For whom the Hub holds these GPUs (``"reserved for alice's server, …"``); empty when this process holds them."""
    share: GpuShare | None = None
    """The share of the one GPU held, when an instructor lets kernels share GPUs (``reserve_share``); None: whole."""

    @property
    def gpus(self) -> tuple[GpuInfo, ...]:
        """The GPUs held, in the order ``cuda:0``, ``cuda:1``… will number them."""
        return self.choice.chosen

    @property
    def physical_indices(self) -> tuple[int, ...]:
        """The held GPUs' physical indices (nvidia-smi's numbering), in ``cuda:k`` order."""
        return self.choice.physical_indices

    @property
    def visible_devices(self) -> str:
        """The ``CUDA_VISIBLE_DEVICES`` value that makes this process use the held GPUs (their UUIDs)."""
        return self.choice.visible_devices

    @property
    def held(self) -> bool:
        """Whether the locks are still held, by this process or for its server (False after ``release()``)."""
        return bool(self._fds) or bool(self.held_for)

    @property
    def lock_fds(self) -> tuple[int, ...]:
        """The descriptors of the held lock files: a process that ``exec``s another program with them left open hands
        the reservation to it (the workshop server's kernel provisioner, ``gpulab.server.reservation_start``)."""
        return tuple(self._fds.values())

    def env(self) -> dict[str, str]:
        """Environment for a process that should use exactly these GPUs (``cuda:0`` = the first one), and for a share
        its memory cap (``GPULAB_MEMORY_CAP``, enforced when CUDA starts in that process)."""
        return {"CUDA_VISIBLE_DEVICES": self.visible_devices, **(self.share.environment() if self.share else {})}

    def apply(self) -> None:
        """Make this process use these GPUs (``set_visible_devices``: refused once CUDA has read the variable here)."""
        set_visible_devices(self.visible_devices, order=None)

    def release(self) -> None:
        """Let go of every GPU held, so other notebooks may take them; doing it twice is harmless. A server's GPUs stay
        the server's (the Hub lets go when the server stops): this object only stops naming them."""
        for fd in self._fds.values():
            let_go(fd)
        self._fds = {}
        self.held_for = ""

    def __del__(self) -> None:  # a reservation nobody refers to any more is let go, like a file object
        self.release()

    def __enter__(self) -> Reservation:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()

    def _head(self) -> str:
        state = f"held: {self.held_for}" if self.held_for else "held" if self.held else "released"
        if self.share is not None:
            state += f", {self.share}"
        what = " of SIMULATED GPUs (described, not this computer's)" if self.choice.simulated else ""
        return f"Reservation{what} ({state}, in {self.reservations})"

    def __str__(self) -> str:
        return f"{self._head()}: CUDA_VISIBLE_DEVICES={self.visible_devices}\n{self.choice}"

    def _repr_html_(self) -> str:
        import html

        return f"<p>{html.escape(self._head())}</p>" + self.choice._repr_html_()


MAX_DETAILS_BYTES = 2048  # holders read the first 8192 bytes of a holder's file
POLL_S = 1.0  # between tries while waiting for a GPU: they free up in seconds, and each try takes the selection lock


def validated_details(details: Mapping[str, str] | None) -> dict[str, str]:
    """``details`` as a plain dict of short strings, or a clear error saying what to pass instead."""
    if details is None:
        return {}
    if not isinstance(details, Mapping):
        raise TypeError(
            f"details={details!r}: expected a dict of short strings, for example "
            "details={'kernel': kernel_id, 'notebook': 'lesson.ipynb'}."
        )
    bad = [k for k, v in details.items() if not isinstance(k, str) or not isinstance(v, str)]
    if bad:
        raise TypeError(
            f"details: {bad[0]!r} is not a string key with a string value; convert numbers with str() "
            "first, for example details={'ports': '29500-29509'}."
        )
    size = len(json.dumps(dict(details)).encode())
    if size > MAX_DETAILS_BYTES:
        raise ValueError(
            f"details take {size} bytes; a reservation keeps at most {MAX_DETAILS_BYTES}. Keep them to "
            "names and ids (a notebook path, a kernel id), not file contents."
        )
    return dict(details)


def reserve_gpus(
    n: int = 1,
    machine: GpuReader | str | None = None,
    policy: Policy | None = None,
    *,
    reservations: str | os.PathLike[str] | None = None,
    wait_s: float = 0.0,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
    details: Mapping[str, str] | None = None,
    prefer: Collection[str] = (),
) -> Reservation:
    """Pick ``n`` free GPUs and hold them against every other process on this machine.

    Candidates are the GPUs this process may use (those ``CUDA_VISIBLE_DEVICES`` allows, if set, and for this
    machine's GPUs, inside a SLURM job or a Kubernetes pod, only those the scheduler gave: ``placement.allowed``;
    where it gave fewer than ``n``, ``NoFreeGpu`` says how to ask it for more), read through
    ``machine`` (default: NVML, or ``GPULAB_SIMULATE_GPUS``; or a preset name such as ``"workshop-8"``); ``policy`` says
    what free means. GPUs reserved by others are passed over. With ``wait_s`` it retries every ``POLL_S`` seconds until
    then; otherwise, or after that, ``NoFreeGpu`` says why each GPU was passed over. ``details`` (short strings: kernel
    id, notebook, the user a server was started for) are written into the reservation for ``watch`` and the picker to
    show. Free GPUs whose UUID is in ``prefer`` are picked first (a restarted kernel gets its GPUs back). Inside a
    server whose GPUs JupyterHub reserved for its user, those GPUs are returned as they are (``Reservation.held_for``
    says whose), in ``CUDA_VISIBLE_DEVICES``'s order. Nothing here creates a CUDA context. Details other than
    ``gpulab.reservations.folder.PUBLIC_DETAILS`` (the notebook, a server's name) are shown only to this user, root
    and the instructor group.
    """
    require_flock()  # on Windows, refuse before touching any directory
    n = whole_number(n, "n", minimum=1, example="reserve_gpus(2) for two GPUs")
    reader = as_reader(machine)
    policy = validated_policy(policy)
    wait_s = seconds(wait_s, "wait_s", example="60")
    function(clock, "clock", example="time.monotonic")
    function(sleep, "sleep", example="time.sleep")
    details = validated_details(details)
    d = reservations_dir(reservations)
    deadline = clock() + wait_s
    while True:
        gpus = [reader.info(i) for i in range(reader.count())]
        # this machine's own GPUs: a SLURM job's or a Kubernetes pod's scheduler may have handed them out already
        usable = usable_gpus(gpus, os.environ, os.environ if machine is None else None)
        if usable.shortfall(n):  # the scheduler gave too few: waiting will not change that
            raise NoFreeGpu(usable.shortfall(n))
        allowed = usable.physical_indices
        with selection_lock(d):
            holders = reservation_holders([g.uuid for g in device_readings(gpus)], d)  # MIG slices too
            yours, taken = yours_and_others(holders)
            server_held = _server_held(gpus, holders, allowed)
            if len(server_held) >= n:  # the server's own GPUs: this user's already, no second reservation
                ranking = rank_gpus(gpus, policy, taken=taken, yours=yours)
                return Reservation(Choice(tuple(server_held[:n]), ranking), d, {}, yours[server_held[0].uuid])
            try:
                choice = choose_gpus(n, gpus, policy, taken=taken, yours=yours, allowed=usable, prefer=prefer)
            except NoFreeGpu:
                if clock() >= deadline:
                    raise
            else:
                fds: dict[str, int] = {}
                for g in choice.chosen:
                    fd = hold(d, g.uuid, details)
                    if fd is None:  # cannot happen under the selection lock unless a foreign tool holds it
                        for other in fds.values():
                            let_go(other)
                        raise NoFreeGpu(
                            f"GPU {g.physical_index} was locked by a process that does not use "
                            f"{d / 'select.lock'}; try again."
                        )
                    fds[g.uuid] = fd
                return Reservation(choice, d, fds)
        sleep(min(POLL_S, max(0.0, deadline - clock())))


def _share_of_mine(holder) -> bool:
    """A card this process (a kernel started on a share) holds a share of: its GPU, handed over as it is."""
    return any(h.mine for _, _, h in holder.shares)


def _server_held(gpus: list[GpuInfo], holders: Mapping, allowed: set[int] | None) -> list[GpuInfo]:
    """The GPUs held for this process's server (or a share of which this process holds) that it may use, in
    ``CUDA_VISIBLE_DEVICES``'s order."""
    mine = [g for g in gpus if g.uuid in holders and (holders[g.uuid].this_server or _share_of_mine(holders[g.uuid]))]
    if allowed is None or not mine:
        return mine
    order = [d.physical_index for d in visible_map(gpus).devices]
    return sorted((g for g in mine if g.physical_index in allowed), key=lambda g: order.index(g.physical_index))
