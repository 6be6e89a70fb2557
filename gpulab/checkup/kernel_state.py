"""What this kernel's process holds that decides whether the next launch works: the facts ``doctor`` judges (probes).

Each fact is read without starting anything: no CUDA, no fork, no new thread. ``KernelState`` is plain data, so
``doctor``'s findings are tested on states built by hand as well as on real kernels.
"""

from __future__ import annotations

import functools
import multiprocessing
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from ..machine import compat
from ..machine.cuda import CudaState, cuda_state
from ..machine.cuda_start import CudaStart
from ..machine.nvml import GpuReader
from ..machine.threads import native_threads, threads_at_torch_import

__all__ = ["KernelState", "kernel_state", "listening_ports", "visible_at_start"]


@dataclass(frozen=True)
class KernelState:
    """What the doctor reads of this kernel: CUDA's state, ``CUDA_VISIBLE_DEVICES`` then and now, the start method,
    threads, open process groups and ports, the reservation held, and what would make accelerate refuse. Built by
    ``kernel_state()`` or by hand in tests."""

    cuda: CudaState
    visible_at_start: str | None  # CUDA_VISIBLE_DEVICES when this process started (None: unset)
    visible_now: str | None
    start_method: str | None  # multiprocessing's default here, if one was set (None: not chosen yet)
    fork_available: bool
    torch_threads: int | None  # torch.get_num_threads() (None: torch not imported)
    extra_threads: int  # threads this process runs that neither Python nor torch's import started: OpenMP's pool
    process_group: str | None  # the backend of a torch.distributed process group still open here
    ports: tuple[int, ...]  # TCP ports this process listens on, Jupyter's own left out
    launch_port: int | None  # the rendezvous port of this kernel's last gpulab.launch
    reservation: tuple[tuple[int, str], ...] = ()  # (physical index, UUID) of each GPU reserved by this notebook
    accelerator_made: bool = False  # accelerate's AcceleratorState already holds state in this process
    bitsandbytes: bool = False  # imported here: accelerate's notebook_launcher refuses then
    usable_cores: int = 1  # cores this process may run on, as Lightning counts them (os.sched_getaffinity)
    server_held: tuple[tuple[int, str], ...] = ()  # (physical index, UUID) of each GPU held for this server

    @property
    def cuda_started_by(self) -> CudaStart | None:
        """The line that started CUDA here (or asked it to), None when none is known."""
        return self.cuda.started_by


def visible_at_start() -> str | None:
    """``CUDA_VISIBLE_DEVICES`` as this process was started with it: the kernel's birth environment, which Linux
    keeps in ``/proc/self/environ`` whatever ``os.environ`` says since. ``None`` when unset (or not Linux: then the
    current value is returned)."""
    try:
        raw = Path("/proc/self/environ").read_bytes()
    except OSError:
        return os.environ.get("CUDA_VISIBLE_DEVICES")
    for item in raw.split(b"\0"):
        if item.startswith(b"CUDA_VISIBLE_DEVICES="):
            return item.split(b"=", 1)[1].decode(errors="replace")
    return None


@functools.lru_cache(maxsize=1)
def _threads_of_torch_import() -> int:
    """How many threads torch's import starts (``machine.threads``): counted as it was imported when gpulab came first,
    else measured once in a fresh Python (the number depends on the build)."""
    counted = threads_at_torch_import()
    if counted is not None:
        return counted
    root = str(Path(__file__).resolve().parents[2])
    code = (
        f"import torch, sys; sys.path.insert(0, {root!r}); from gpulab.machine.threads import native_threads; "
        "print(native_threads())"
    )
    try:
        out = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, start_new_session=True
        )
        return int(out.stdout.strip().splitlines()[-1])
    except (OSError, ValueError, IndexError, subprocess.TimeoutExpired):
        return 1


def listening_ports() -> tuple[int, ...]:
    """TCP ports this process listens on, without Jupyter's own (the kernel's shell, iopub, stdin, control and
    heartbeat sockets from its connection file, and the pipe that carries its subprocesses' output)."""
    import psutil

    proc = psutil.Process()
    # psutil < 6 (the lower bound is 5.9.6) has only the old name, connections()
    read = getattr(proc, "net_connections", None) or proc.connections
    try:
        conns = read(kind="tcp")
    except (psutil.Error, OSError):
        return ()
    own = set(compat.jupyter_ports())
    return tuple(sorted({c.laddr.port for c in conns if c.status == psutil.CONN_LISTEN and c.laddr} - own))


def _reservation(
    machine: GpuReader | str | None, reservations: str | os.PathLike[str] | None
) -> tuple[tuple[tuple[int, str], ...], tuple[tuple[int, str], ...]]:
    """The GPUs held for this process: by itself, and for the server it runs in (JupyterHub's model)."""
    from ..machine.inventory import devices
    from ..reservations.holders import reservation_holders

    gpus = devices(machine, processes=False).gpus
    holders = reservation_holders([g.uuid for g in gpus], reservations)
    mine = tuple((g.physical_index, g.uuid) for g in gpus if g.uuid in holders and holders[g.uuid].mine)
    server_held = tuple((g.physical_index, g.uuid) for g in gpus if g.uuid in holders and holders[g.uuid].this_server)
    return mine, server_held


def kernel_state(
    machine: GpuReader | str | None = None, reservations: str | os.PathLike[str] | None = None
) -> KernelState:
    """Read this process's state (nothing is started; the first call measures torch's own threads in a child)."""
    torch = sys.modules.get("torch")
    threads = torch.get_num_threads() if torch is not None else None
    extra = max(0, native_threads() - _threads_of_torch_import()) if torch is not None else native_threads()
    dist = sys.modules.get("torch.distributed")
    group = None
    if dist is not None and dist.is_available() and dist.is_initialized():
        group = str(dist.get_backend())
    launcher = sys.modules.get("gpulab.ranks.launcher")
    last = launcher.last_launch() if launcher is not None else None
    state = sys.modules.get("accelerate.state")
    made = bool(getattr(getattr(state, "AcceleratorState", None), "_shared_state", None))
    mine, server_held = _reservation(machine, reservations)
    return KernelState(
        cuda_state(),
        visible_at_start(),
        os.environ.get("CUDA_VISIBLE_DEVICES"),
        multiprocessing.get_start_method(allow_none=True),
        "fork" in multiprocessing.get_all_start_methods(),
        threads,
        extra,
        group,
        listening_ports(),
        last.master_port if last is not None else None,
        mine,
        made,
        "bitsandbytes" in sys.modules,
        len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1,
        server_held,
    )
