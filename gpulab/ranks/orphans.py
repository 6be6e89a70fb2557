"""A child process group that ends when the notebook kernel that started it ends, however the kernel ended.

A helper interpreter that a cell starts in a session of its own (so that the cell can kill it and every process it
forked with one ``killpg``) outlives a kernel killed with ``kill -9``, a crashed kernel or a culled one: nothing sends
it a signal, and a run that hangs on purpose (``fork_experiment``) would hang on forever, holding cores. Linux's
``PR_SET_PDEATHSIG`` would signal only the interpreter, not the ranks it forked (the setting is cleared on ``fork``),
and macOS has none, so a thread watches the parent instead: when the parent process is gone, the thread kills the
whole process group, the interpreter and every rank in it.
"""

from __future__ import annotations

import os
import signal
import threading
import time

__all__ = ["end_group_with_parent"]


def end_group_with_parent(parent_pid: int, *, every_s: float = 0.5) -> threading.Thread | None:
    """Start a daemon thread that kills this process's group with SIGKILL once ``parent_pid`` is no longer its parent.

    Call it first thing in a child started with ``start_new_session=True``, passing the parent's pid from the parent
    (``os.getpid()`` there): read here, ``os.getppid()`` would already name init if the parent died during the start.
    Returns the thread, or None where there are no process groups to kill (Windows) or the process does not lead its
    own group (killing the group would then kill the parent's group: the caller forgot ``start_new_session``).
    """
    if not hasattr(os, "killpg") or os.getpgrp() != os.getpid():
        return None

    def watch() -> None:
        while os.getppid() == parent_pid:
            time.sleep(every_s)
        os.killpg(os.getpgrp(), signal.SIGKILL)

    thread = threading.Thread(target=watch, name="gpulab-end-with-parent", daemon=True)
    thread.start()
    return thread
