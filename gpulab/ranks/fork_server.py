"""Where the launcher's ranks come from: a process that imported torch and never ran a parallel region, forking each.

Why not the two obvious ways. ``fork`` from the notebook copies a process that has already run CPU work: once the
kernel has done one multi-threaded matmul, its OpenMP (GNU libgomp) thread pool exists, a forked child inherits the
pool's state but not its threads, and the child's first multi-threaded op waits forever for threads that are not
there (accelerate's ``notebook_launcher`` and Lightning's ``ddp_notebook`` hang that way). ``spawn`` starts a fresh
interpreter per rank: safe, but every rank imports torch again (seconds each).

Python's ``forkserver`` start method sits between them: one fresh interpreter is started once per kernel, imports
the modules named by ``set_forkserver_preload`` (torch, and the rank trampoline) and then only forks. Its children
start in milliseconds with torch already imported and an untouched OpenMP runtime, and CUDA was never started there,
so it works after the notebook used CUDA too. Linux only: macOS and Windows use ``spawn`` (slower, said plainly).
Taught in ``notebooks/04_ddp.ipynb``.
"""

from __future__ import annotations

import multiprocessing
import multiprocessing.forkserver
import os
import signal
import sys
from dataclasses import dataclass
from pathlib import Path

from ..machine import compat

__all__ = ["PRELOAD", "ServerState", "choose_start_method", "warm_up_launcher", "server_state", "stop_server"]

# torch._dynamo: building the first optimizer imports it (torch.optim checks whether it is being compiled), about
# 2 s and 900 modules that every rank would otherwise import again; importing it starts no thread and no OpenMP region.
PRELOAD = ["torch", "torch.distributed", "torch._dynamo", "gpulab.ranks.worker"]


@dataclass(frozen=True)
class ServerState:
    """The fork server as this kernel sees it."""

    start_method: str  # "forkserver" on Linux, "spawn" on macOS / Windows
    pid: int | None  # the server's process id; None until the first launch (or warm_up)
    preloaded: tuple[str, ...]  # modules the server imports before forking ranks

    @property
    def fast(self) -> bool:
        """True when ranks are forked from a server with torch already imported."""
        return self.start_method == "forkserver" and "torch" in self.preloaded

    def __str__(self) -> str:
        if self.start_method != "forkserver":
            return (
                f"ranks start with {self.start_method!r}: each is a fresh Python that imports torch itself "
                f"(seconds per launch; {sys.platform} offers no safe fork)"
            )
        where = f"pid {self.pid}" if self.pid else "not started yet"
        what = ", ".join(self.preloaded) or "nothing"
        return f"ranks are forked by a fork server ({where}) that imported {what}"

    def _repr_html_(self) -> str:
        from html import escape

        return f"<code>{escape(str(self))}</code>"


def choose_start_method() -> str:
    """``forkserver`` where the platform has it (Linux), otherwise ``spawn``. Never ``fork``: a rank forked from a
    notebook that already ran CPU work inherits a broken OpenMP thread pool and hangs at its first multi-threaded op
    (and one forked after CUDA started cannot use CUDA)."""
    available = multiprocessing.get_all_start_methods()
    return "forkserver" if sys.platform.startswith("linux") and "forkserver" in available else "spawn"


def warm_up_launcher() -> ServerState:
    """Start the fork server now, so that its import of torch (1–3 s) happens while you read the next cell.

    Returns at once: the server imports in its own process. The first ``launch`` waits only for what is left.
    Does nothing on macOS / Windows (no fork server there).
    """
    if choose_start_method() == "forkserver":
        _ensure_server()
    return server_state()


def server_state() -> ServerState:
    """The start method ranks get here, and the fork server's process and what it preloads, if one runs."""
    return ServerState(choose_start_method(), compat.forkserver_pid(), compat.forkserver_preload())


def stop_server() -> None:
    """Stop this kernel's fork server (it frees the memory of its torch import) and multiprocessing's resource
    tracker that was started with it; the next launch starts both again.

    The server is ended with SIGTERM before multiprocessing's own stop (close its pipe, wait for it): it holds nothing
    to save — its ranks have ended, and this process removes its socket — while ending by itself it tears down an
    interpreter that imported torch, about a second on a busy 2-core machine, which a kernel's shutdown cannot spare
    (see ``_stop_before_kernel_shutdown``). Ranks it forked are not its to stop: each is this kernel's child.
    """
    pid = compat.forkserver_pid()
    if pid is not None:
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass  # already gone: multiprocessing's stop below only collects it
    compat.stop_forkserver()
    compat.stop_resource_tracker()


def _stop_before_kernel_shutdown() -> None:
    """In a Jupyter kernel, stop the server and tracker when the kernel is asked to shut down.

    ipykernel ends a shutdown by signalling its child processes and waiting until none is left, but it counts
    children that have exited and not yet been waited for, and the resource tracker ignores SIGTERM: with a fork server
    running, the kernel was still waiting when Jupyter's 5 s grace ran out and killed it, so nothing registered with
    ``atexit`` ran (``TemporaryDirectory`` folders and multiprocessing's own ``pymp-*`` folder stayed in /tmp). Stopping
    both first, as this kernel's own children that it waits for, lets the shutdown finish at once. ipykernel has no
    public hook for this, so its shutdown coroutine is wrapped; where it is missing, nothing changes.

    The grace is shorter than it looks: jupyter_client (``KernelManager.finish_shutdown``) sends SIGTERM after half of
    ``shutdown_wait_time``, 2.5 s. The ``pymp-*`` folder is this kernel's: ``multiprocessing.forkserver`` makes it for
    the server's socket, and only this kernel's ``atexit`` removes it. Waiting for the server to end by itself (its
    interpreter's teardown, torch imported: about 1 s here under load) plus the kernel's own teardown (about as long)
    passed 2.5 s on a busy machine, and the folder stayed: ``stop_server`` ends the server with a signal instead.
    """
    try:
        from IPython import get_ipython
    except ImportError:
        return
    kernel = getattr(get_ipython(), "kernel", None)
    original = getattr(kernel, "_at_shutdown", None)
    if original is None or getattr(original, "gpulab_stops_server", False):
        return

    async def at_shutdown(*args: object, **kwargs: object) -> object:
        try:
            stop_server()
        except OSError:
            pass  # already gone: ipykernel's own clean-up goes on
        return await original(*args, **kwargs)

    at_shutdown.gpulab_stops_server = True  # type: ignore[attr-defined]
    kernel._at_shutdown = at_shutdown


def _ensure_server() -> None:
    """Start the fork server with torch preloaded, unless one is running already (Python keeps one per process).

    A server that someone else started (a DataLoader with ``multiprocessing_context="forkserver"``, say) is used as
    it is: ranks then import torch themselves, slower but correct.
    """
    context = multiprocessing.get_context("forkserver")
    if compat.forkserver_pid() is None:
        context.set_forkserver_preload(PRELOAD)
    # The server runs `python -c ...` with the environment of this moment: make sure it imports *this* gpulab
    # (a checkout on sys.path rather than the installed copy, say) so that the trampoline it preloads is ours.
    root = str(Path(__file__).resolve().parents[2])
    paths = os.environ.get("PYTHONPATH", "")
    _stop_before_kernel_shutdown()
    if root in paths.split(os.pathsep):
        multiprocessing.forkserver.ensure_running()
        return
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (root, paths) if p)
    try:
        multiprocessing.forkserver.ensure_running()
    finally:
        if paths:
            os.environ["PYTHONPATH"] = paths
        else:
            del os.environ["PYTHONPATH"]
