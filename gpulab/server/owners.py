"""Whose process is this: the Unix user, the command, and the Jupyter kernel it is (a probe: psutil and /proc).

``hub_servers`` finds the JupyterHub single-user servers (and their kernels) that run, with the GPUs their
``CUDA_VISIBLE_DEVICES`` names, from each process's environment (which only root, or the process's own user, may read):
what a restarted Hub reserves again, and what ``watch`` names as running on a GPU nobody holds.
On a shared JupyterHub server each student is a Unix user and each notebook a kernel process
(``python -m ipykernel_launcher -f …/kernel-<id>.json``), so a pid on a GPU becomes "alice, kernel 1a2b3c4d".
NVML reports host pids: inside a container a pid may not be visible at all, which is said, not guessed.
Used by ``python -m gpulab watch``; taught in ``notebooks/workshop_guide.ipynb``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import psutil

from ..ranks.ports import PORTS_VAR  # set in a provisioned kernel's environment (reservation_start)

__all__ = ["Owner", "process_owner", "kernel_id", "HubServer", "hub_servers"]

_KERNEL_FILE = re.compile(r"kernel-([0-9a-fA-F-]{8,})\.json")


@dataclass(frozen=True)
class Owner:
    """A process as the room knows it: ``user`` (Unix), ``command`` and, for a Jupyter kernel, its ``kernel`` id."""

    pid: int
    user: str | None
    command: str
    kernel: str | None = None

    def __str__(self) -> str:
        what = f"kernel {self.kernel[:8]}" if self.kernel else self.command
        return f"{self.user or '?'}: {what} (pid {self.pid})"


def kernel_id(cmdline: list[str]) -> str | None:
    """The Jupyter kernel id in a kernel's command line (its connection file ``kernel-<id>.json``), else None."""
    if not any("ipykernel" in part for part in cmdline):
        return None
    for part in cmdline:
        found = _KERNEL_FILE.search(part)
        if found:
            return found.group(1)
    return "?"


def process_owner(pid: int) -> Owner:
    """Who runs ``pid`` and what it is; a pid this machine (or container) cannot see says so."""
    try:
        proc = psutil.Process(pid)
        with proc.oneshot():
            name = proc.name()
            try:
                user: str | None = proc.username()
            except (psutil.AccessDenied, KeyError):  # KeyError: a uid with no name (a container's user)
                user = None
            try:
                cmdline = proc.cmdline()
            except psutil.AccessDenied:
                cmdline = []
    except psutil.NoSuchProcess:
        return Owner(pid, None, "not visible here (another container, or the host)")
    except psutil.AccessDenied:
        return Owner(pid, None, "another user's process")
    return Owner(pid, user, name, kernel_id(cmdline))


@dataclass(frozen=True)
class HubServer:
    """A JupyterHub single-user server seen running: the lowest ``pid`` of its processes (the server, its kernels),
    its ``user`` and server ``name`` (``""``: the default one) and the GPUs it was given (UUIDs). With ``kernel`` set,
    a process of a gpulab kernel instead (the kernel, or a rank or worker it started), ``user`` its Unix user."""

    pid: int
    user: str
    name: str
    uuids: tuple[str, ...]
    kernel: bool = False

    def __str__(self) -> str:
        if self.kernel:
            return f"a process of {self.user}'s gpulab kernel (pid {self.pid})"
        return f"{self.user}'s server" + (f" {self.name!r}" if self.name else "") + f" (pid {self.pid})"


def hub_servers(kernels: bool = False) -> list[HubServer]:
    """Every JupyterHub server this process may see whose ``CUDA_VISIBLE_DEVICES`` names GPUs by UUID (as
    ``gpulab.server.hub`` gives them), one per (user, server, GPUs), read from the processes' environments; with
    ``kernels``, also the processes of gpulab's provisioned kernels (``GPULAB_MASTER_PORTS`` in their environment),
    which outlive their kernel when it is killed (ranks, workers)."""
    found: dict[tuple[str, str, tuple[str, ...], bool], int] = {}
    for proc in psutil.process_iter():
        try:
            env = proc.environ()
            uuids = tuple(u for u in env.get("CUDA_VISIBLE_DEVICES", "").split(",") if u.startswith(("GPU-", "MIG-")))
            kernel = PORTS_VAR in env
            user = (proc.username() if kernel else None) or env.get("JUPYTERHUB_USER")
        except (psutil.Error, OSError, KeyError):  # another user's process, gone meanwhile, a uid with no name
            continue
        if user and uuids and (kernels or not kernel):
            key = (user, "" if kernel else env.get("JUPYTERHUB_SERVER_NAME", ""), uuids, kernel)
            found[key] = min(found.get(key, proc.pid), proc.pid)
    return [HubServer(pid, user, name, uuids, kernel) for (user, name, uuids, kernel), pid in sorted(found.items())]
