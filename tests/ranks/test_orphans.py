"""A helper interpreter started in a session of its own ends, with everything it forked, when its parent is killed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import psutil
import pytest

from tests.process_group import kill_group

pytestmark = pytest.mark.skipif(not hasattr(os, "killpg"), reason="no process groups on this platform (Windows)")

# The "kernel": starts a child in a new session that guards itself and forks a grandchild; both then sleep.
KERNEL = textwrap.dedent(
    """
    import os, subprocess, sys, time
    code = (
        "import os, sys, time\\n"
        "from gpulab.ranks.orphans import end_group_with_parent\\n"
        f"end_group_with_parent({os.getpid()}, every_s=0.1) if {GUARD} else None\\n"
        "pid = os.fork()\\n"
        "if pid == 0:\\n"
        "    time.sleep(600)\\n"
        "    os._exit(0)\\n"
        "print(os.getpid(), pid, flush=True)\\n"
        "time.sleep(600)\\n"
    )
    child = subprocess.Popen([sys.executable, '-c', code], stdout=subprocess.PIPE, text=True, start_new_session=True)
    print(child.stdout.readline().strip(), flush=True)
    time.sleep(600)
    """
)


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE  # an unreaped corpse is not running
    except psutil.NoSuchProcess:
        return False


def _orphans_after_killing_the_kernel(guard: bool, wait_s: float) -> list[int]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [os.getcwd(), os.environ.get("PYTHONPATH")]))}
    kernel = subprocess.Popen(
        [sys.executable, "-c", KERNEL.replace("{GUARD}", str(guard))],
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
        env=env,
    )
    pids: list[int] = []
    try:
        pids = [int(p) for p in kernel.stdout.readline().split()]  # type: ignore[union-attr]
        assert len(pids) == 2, "the child did not start"
        os.kill(kernel.pid, signal.SIGKILL)  # as a crashed, culled or kill -9'd kernel: no chance to clean up
        kernel.wait()
        for _ in range(int(wait_s * 10)):  # the guard looks every 0.1 s
            if not any(map(_alive, pids)):
                break
            time.sleep(0.1)
        return [p for p in pids if _alive(p)]
    finally:
        kill_group(kernel)
        for pid in pids:  # the child leads its own group: the test never leaves it behind, guarded or not
            try:
                os.killpg(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass


def test_a_killed_kernel_takes_the_guarded_group_with_it():
    assert _orphans_after_killing_the_kernel(guard=True, wait_s=10) == []  # 10 s for a loaded machine


def test_without_the_guard_the_group_outlives_the_kernel():
    """What the guard is for: the same tree without it keeps both processes running after the kernel is gone."""
    assert len(_orphans_after_killing_the_kernel(guard=False, wait_s=2)) == 2


def test_the_guard_refuses_to_kill_a_group_it_does_not_lead():
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            "import os; from gpulab.ranks.orphans import end_group_with_parent as g; "
            "print(g(os.getppid()) is None, os.getpgrp() == os.getpid())",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": os.getcwd()},
    )
    assert proc.stdout.split() == ["True", "False"]  # a child left in the caller's group gets no guard


def test_the_fork_experiment_passes_the_kernels_pid_to_its_interpreter(monkeypatch):
    from gpulab.lightning import fork_hang

    seen = {}

    class Stop(Exception):
        pass

    def popen(args, **kwargs):
        seen["code"], seen["session"] = args[-1], kwargs.get("start_new_session")
        raise Stop

    monkeypatch.setattr(fork_hang.subprocess, "Popen", popen)
    with pytest.raises(Stop):
        fork_hang._session([fork_hang.FIX], 1.0, 1.0)
    assert f"parent_pid={os.getpid()}" in seen["code"] and seen["session"] is True
    assert "from gpulab.lightning.fork_fit import" in seen["code"]
