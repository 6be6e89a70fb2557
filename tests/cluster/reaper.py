"""Runs one daemon in the foreground and reaps whatever it leaves: ``python reaper.py slurmd -D …``.

slurmd starts a ``slurmstepd`` per job step, which detaches from it; where the machine's first process does not reap
orphans (some container sandboxes), each one then stays as a zombie after its step ends. This wrapper makes itself
the "child subreaper" of its descendants (Linux ``prctl(PR_SET_CHILD_SUBREAPER)``), so orphans come to it and it
reaps them as they end. SIGTERM and SIGINT go on to the daemon; when the daemon has ended, every descendant still
alive is killed and reaped, and the wrapper exits with the daemon's code. Nothing of the daemon outlives it.
"""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys
import time

PR_SET_CHILD_SUBREAPER = 36


def _children() -> list[int]:
    """This process's children (after reparenting, orphans of its descendants are among them)."""
    pids = []
    for task in os.listdir(f"/proc/{os.getpid()}/task"):
        try:
            with open(f"/proc/{os.getpid()}/task/{task}/children") as f:
                pids += [int(p) for p in f.read().split()]
        except OSError:
            pass
    return pids


def main(argv: list[str]) -> int:
    if ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        print("reaper: prctl(PR_SET_CHILD_SUBREAPER) failed; orphans may stay as zombies", file=sys.stderr)
    daemon = subprocess.Popen(argv)
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda s, _frame: os.kill(daemon.pid, s))  # not send_signal: it may reap
    code = None
    while code is None:
        try:
            pid, status = os.waitpid(-1, 0)
        except ChildProcessError:
            break
        except InterruptedError:
            continue
        if pid == daemon.pid:
            code = os.waitstatus_to_exitcode(status)
    deadline = time.monotonic() + 10
    while (left := _children()) and time.monotonic() < deadline:
        for pid in left:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        try:
            while os.waitpid(-1, os.WNOHANG)[0]:
                pass
        except ChildProcessError:
            break
        time.sleep(0.05)
    return 0 if code is None else code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
