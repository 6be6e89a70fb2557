"""Subprocesses of the tests run in a process group of their own, and the whole group dies on a timeout.

``subprocess.run(..., timeout=...)`` kills only the process it started. A torchrun killed that way leaves its ranks
running; they hold ports, CPU and files, and can meet the next test's rendezvous. ``run`` below is
``subprocess.run`` with the command in a new session (its own process group), where a timeout or any other
exception (a KeyboardInterrupt, pytest-timeout) kills the group, not only its leader. ``kill_group`` does the same
for a ``Popen`` a test manages itself (start it with ``start_new_session=True``).

A command that ends normally is left alone: what it leaves behind is for the test to find (``no_process_left``).
"""

from __future__ import annotations

import os
import signal
import subprocess

__all__ = ["run", "kill_group"]


def kill_group(proc: subprocess.Popen, wait_s: float = 10) -> None:
    """SIGKILL every process in ``proc``'s group (``proc`` leads it: started with ``start_new_session=True``)."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:  # the group is empty already
        pass
    try:
        proc.wait(timeout=wait_s)
    except subprocess.TimeoutExpired:
        pass


def run(
    args, *, input=None, timeout: float | None = None, check: bool = False, capture_output: bool = False, **kwargs
) -> subprocess.CompletedProcess:
    """``subprocess.run`` with the command leading a process group that is killed whole on a timeout or error."""
    if capture_output:
        kwargs["stdout"] = kwargs["stderr"] = subprocess.PIPE
    if input is not None:
        kwargs["stdin"] = subprocess.PIPE
    with subprocess.Popen(args, start_new_session=True, **kwargs) as proc:
        try:
            stdout, stderr = proc.communicate(input, timeout=timeout)
        except subprocess.TimeoutExpired as exc:
            kill_group(proc)
            exc.stdout, exc.stderr = proc.communicate()
            raise
        except BaseException:
            kill_group(proc)
            raise
    done = subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr)
    if check:
        done.check_returncode()
    return done
