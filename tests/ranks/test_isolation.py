"""The launcher in fresh interpreters: no hang after the parent's CPU work, the stop button, spawn, CUDA first.

Each test runs a small program in its own process group (as a notebook kernel is), so that whatever it starts can be
counted and, should something hang, killed as a whole.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import psutil
import pytest

from tests import process_group

from .processes import ROOT

PARENT_MATMUL = """
    import os, sys, time, torch
    import gpulab.ranks.launcher as L
    torch.set_num_threads(2)
    a = torch.randn(1000, 1000); a @ a   # the notebook's own CPU work: its OpenMP pool of 2 threads now exists
"""


def start(code: str) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    return subprocess.Popen(
        [sys.executable, "-u", "-c", textwrap.dedent(code)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        start_new_session=True,
    )


def finish(proc: subprocess.Popen, timeout: float) -> tuple[str, str]:
    """Wait for ``proc``; on timeout kill its whole process group (ranks included) and fail."""
    try:
        return proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        pytest.fail(f"hung for {timeout} s; output so far:\n{out}\n{err}")


def gone(pids: list[int], wait_s: float = 5.0) -> bool:
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        if not any(psutil.pid_exists(p) and psutil.Process(p).status() != psutil.STATUS_ZOMBIE for p in pids):
            return True
        time.sleep(0.05)
    return False


def test_control_a_plain_fork_after_the_parents_matmul_hangs_at_two_threads():
    # What the launcher must avoid, shown on this machine: without it the next test would mean nothing.
    if not sys.platform.startswith("linux"):
        pytest.skip("fork after OpenMP work is the Linux (GNU libgomp) hazard")
    proc = start(
        PARENT_MATMUL
        + """
    pid = os.fork()
    if pid == 0:
        torch.set_num_threads(2)
        x = torch.randn(1000, 1000); x @ x
        os._exit(0)
    deadline = time.time() + 8
    while time.time() < deadline and not os.waitpid(pid, os.WNOHANG)[0]:
        time.sleep(0.05)
    hung = time.time() >= deadline
    if hung:
        os.kill(pid, 9)
    print("hung" if hung else "finished")
    """
    )
    out, _ = finish(proc, 120)
    assert out.strip() == "hung"


def test_ranks_never_hang_after_the_parents_matmul_at_two_threads_per_rank():
    proc = start(
        PARENT_MATMUL
        + """
    def mm():
        x = torch.randn(1000, 1000)
        for _ in range(3):
            x = (x @ x) / 1000
        return torch.get_num_threads()
    print(L.launch(mm, 2, threads_per_rank=2, all_ranks=True))
    print(L.launch(mm, 2, threads_per_rank=2, all_ranks=True))
    """
    )
    out, err = finish(proc, 120)
    assert out.splitlines() == ["[2, 2]", "[2, 2]"], err


@pytest.mark.parametrize("whole_group", [False, True], ids=["SIGINT to the kernel", "SIGINT to its process group"])
def test_interrupting_the_launch_stops_every_rank(whole_group):
    # A notebook's stop button sends SIGINT to the kernel's process group (jupyter_client); test that and the kernel
    # alone. Either way: KeyboardInterrupt in the cell, and no rank left running.
    # The stand-in kernel installs default_int_handler as ipykernel does around each cell (kernelbase.py,
    # pre_handler_hook): a pytest started from a non-interactive shell's `cmd &` inherits SIGINT ignored, and a
    # Python started with SIGINT ignored keeps ignoring it, so without this line the stop button is never heard.
    proc = start("""
    import os, signal, time, multiprocessing.forkserver as fs
    signal.signal(signal.SIGINT, signal.default_int_handler)
    import gpulab.ranks.launcher as L
    def forever():
        print("pid", os.getpid())
        time.sleep(600)
    try:
        L.launch(forever, 2)
    except KeyboardInterrupt:
        print("KeyboardInterrupt in the cell")
    print("server", fs._forkserver._forkserver_pid)
    time.sleep(0.5)
    """)
    pids = []
    while len(pids) < 2:
        line = proc.stdout.readline()
        assert line, proc.stderr.read()
        if " pid " in line:
            pids.append(int(line.split()[-1]))
    os.killpg(proc.pid, signal.SIGINT) if whole_group else os.kill(proc.pid, signal.SIGINT)
    out, err = finish(proc, 60)
    assert "KeyboardInterrupt in the cell" in out and "[launch] stopped all 2 ranks." in err
    assert gone(pids)
    server = int(out.split("server ")[-1].split()[0])
    assert gone([server])  # and the fork server went with the kernel


def test_spawn_works_with_a_function_defined_in_the_main_module():
    # macOS and Windows have no fork server: each rank is a fresh Python that imports torch itself.
    proc = start("""
    import gpulab.ranks.launch_plan, gpulab.ranks.launcher as L
    gpulab.ranks.launch_plan.choose_start_method = lambda: "spawn"  # as on macOS and Windows
    def where():
        import os, torch.distributed as dist
        return dist.get_rank(), os.environ["WORLD_SIZE"]
    print(L.launch(where, 2, all_ranks=True), L.last_launch().start_method)
    """)
    out, err = finish(proc, 240)
    assert out.strip() == "[(0, '2'), (1, '2')] spawn", err


def test_the_fork_server_imports_torch_once_and_stops_on_request():
    proc = start("""
    import psutil, torch
    from gpulab.ranks import fork_server
    state = fork_server.warm_up_launcher()
    print(state.pid is not None, state.fast, "torch" in state.preloaded)
    print(psutil.Process(state.pid).is_running())
    fork_server.stop_server()
    print(psutil.pid_exists(state.pid) and psutil.Process(state.pid).status() != psutil.STATUS_ZOMBIE)
    print(fork_server.server_state().pid)
    """)
    out, err = finish(proc, 120)
    assert out.splitlines() == ["True True True", "True", "False", "None"], err


@pytest.mark.gpu
def test_launching_works_after_the_notebook_used_cuda():
    proc = start("""
    import torch
    import gpulab.ranks.launcher as L
    x = torch.ones(1, device="cuda")  # the notebook started CUDA: a forked rank could not use it
    def on_gpu():
        import os
        return str(torch.ones(1, device=f"cuda:{os.environ['LOCAL_RANK']}").device)
    print(L.launch(on_gpu, 1), L.last_launch().backend)
    """)
    out, err = finish(proc, 240)
    assert out.strip() == "cuda:0 nccl", err


@pytest.mark.multigpu
def test_two_gpu_ranks_reduce_over_nccl():
    proc = start("""
    import torch
    import gpulab.ranks.launcher as L
    torch.ones(1, device="cuda")
    def reduce():
        import torch.distributed as dist
        t = torch.ones(1, device="cuda")  # set_device(LOCAL_RANK) was done before init_process_group
        dist.all_reduce(t)
        return t.item(), str(t.device)
    print(L.launch(reduce, 2, all_ranks=True), L.last_launch().backend)
    """)
    out, err = finish(proc, 240)
    assert out.strip() == "[(2.0, 'cuda:0'), (2.0, 'cuda:1')] nccl", err


def test_a_script_that_launches_without_the_main_guard_is_told_how_to_fix_it(tmp_path):
    script = tmp_path / "train_script.py"
    script.write_text("import gpulab.ranks.launcher as L\nL.launch(print, 2)\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    done = process_group.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 1
    assert "each rank first re-imports your script 'train_script.py'" in done.stderr
    assert 'under `if __name__ == "__main__":`' in done.stderr


def test_the_macos_and_windows_path_spawns_and_still_relays_output():
    # There elastic does not redirect file descriptors; the rank opens its log files itself. Shown here by telling
    # the launcher it runs on macOS (elastic, imported before, still redirects: both must land in the same file).
    proc = start("""
    import sys
    import gpulab.ranks.launcher as L
    sys.platform = "darwin"
    def hello():
        import os
        print("hello from", os.environ["RANK"])
        return os.environ["RANK"]
    print(L.launch(hello, 2, all_ranks=True), L.last_launch().start_method)
    """)
    out, err = finish(proc, 240)
    lines = out.splitlines()
    assert lines[-1] == "['0', '1'] spawn", err
    assert sorted(lines[:-1]) == ["[rank 0] hello from 0", "[rank 1] hello from 1"]


def test_a_fork_server_someone_else_started_is_used_as_it_is():
    # A DataLoader with multiprocessing_context="forkserver" (say) started Python's one fork server without torch
    # preloaded: ranks then import torch themselves. Slower, still correct, and the state says so.
    proc = start("""
    import multiprocessing as mp
    import gpulab.ranks.launcher as L
    from gpulab.ranks.fork_server import server_state
    p = mp.get_context("forkserver").Process(target=print, args=("someone else's process",))
    p.start(); p.join()
    print(L.launch(lambda: 7, 2), server_state().fast)
    """)
    out, err = finish(proc, 240)
    assert out.splitlines()[-1] == "7 False", err
