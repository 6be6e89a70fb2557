"""Whose process is this: the Unix user, the command, and the Jupyter kernel it is (a probe: psutil and /proc).

On a shared JupyterHub server each student is a Unix user and each notebook a kernel process
(``python -m ipykernel_launcher -f …/kernel-<id>.json``), so a pid on a GPU becomes "alice, kernel 1a2b3c4d".
NVML reports host pids: inside a container a pid may not be visible at all, which is said, not guessed.
Used by ``python -m gpulab watch``; taught in ``notebooks/02_choosing_gpus.ipynb``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import psutil

__all__ = ["Owner", "process_owner", "kernel_id"]

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
