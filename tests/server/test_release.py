"""``python -m gpulab release N`` ends a notebook's kernel so that Jupyter does not start it again.

A real jupyter-server with gpulab's kernelspec: a notebook's kernel holds a GPU; ``release`` shuts it down through the
server (``DELETE /api/kernels/<id>``, found from the kernel's parent process and the server's own info file), so the
server no longer lists the kernel and nothing holds the GPU. A kernel merely killed stays in the server's list: its
restarter starts it again, and the new kernel reserves a free GPU. Where the server cannot be asked (its info file is
gone), ``release`` stops the kernel with a signal and says that it may come back, and what to do.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from gpulab.machine.simulated import SimulatedGpuReader
from gpulab.reservations.holders import reservation_holders
from tests.process_group import run

from .jupyter import ROOT, jupyter

IDLE8 = SimulatedGpuReader("idle-8")
UUIDS = [IDLE8.info(i).uuid for i in range(8)]
QUIET = "--ServerApp.jpserver_extensions=" + repr(
    {e: False for e in ("jupyterlab", "jupyter_lsp", "notebook_shim", "jupyter_server_terminals")}
)


def _held_gpu(server, kernel: str) -> int:
    held = reservation_holders(UUIDS, server.work / "locks")
    assert [h.details.get("kernel") for h in held.values()] == [kernel]
    return UUIDS.index(next(iter(held)))


def _release(server, gpu: int):
    env = {
        **os.environ,
        "GPULAB_SIMULATE_GPUS": "idle-8",
        "GPULAB_RESERVATIONS_DIR": str(server.work / "locks"),
        "PYTHONPATH": str(ROOT),
    }
    cmd = [sys.executable, "-m", "gpulab", "release", str(gpu)]
    return run(cmd, env=env, capture_output=True, text=True, timeout=120)


def _notebook_kernel(server) -> str:
    session = server.api(
        "/api/sessions", "POST", {"path": "lesson.ipynb", "type": "notebook", "kernel": {"name": "gpulab-1-gpu"}}
    )
    return session["kernel"]["id"]


def test_release_shuts_a_kernel_down_through_its_server_and_it_stays_down(tmp_path):
    with jupyter(tmp_path, env={"GPULAB_CULL_IDLE_S": "0"}, args=(QUIET,)) as server:
        kernel = _notebook_kernel(server)
        gpu = _held_gpu(server, kernel)
        done = _release(server, gpu)
        assert done.returncode == 0, done.stderr
        assert server.api("/api/kernels") == [], "the server still has the kernel: its restarter starts it again"
        assert f"GPU {gpu} is free: the kernel {kernel[:8]} (" in done.stdout
        assert "shut down through its Jupyter server, http://127.0.0.1:" in done.stdout
        assert "so Jupyter will not start it again" in done.stdout
        assert reservation_holders(UUIDS, tmp_path / "locks") == {}


def test_where_the_server_cannot_be_asked_release_stops_the_kernel_and_says_it_may_come_back(tmp_path):
    with jupyter(tmp_path, env={"GPULAB_CULL_IDLE_S": "0"}, args=(QUIET,)) as server:
        kernel = _notebook_kernel(server)
        gpu = _held_gpu(server, kernel)
        (info,) = (tmp_path / "runtime").glob("jpserver-*.json")
        info.unlink()  # as a server started with a runtime folder release cannot find
        done = _release(server, gpu)
        assert done.returncode == 0, done.stderr
        assert (
            f"GPU {gpu} is free for now: the kernel {kernel[:8]} (" in done.stdout
            and f"wrote no {info}" in done.stdout
            and "starts a kernel that stopped by itself again within seconds" in done.stdout
            and "Kernel → Shut Down Kernel" in done.stdout
        ), done.stdout
        assert [k["id"] for k in server.api("/api/kernels")] == [kernel]  # the server still has it: it restarts it


def test_the_runtime_folder_is_derived_as_jupyter_core_does(tmp_path, monkeypatch):
    from jupyter_core.paths import jupyter_runtime_dir

    from gpulab.server.kernel_server import runtime_dir

    for name in ("JUPYTER_PLATFORM_DIRS", "JUPYTER_RUNTIME_DIR", "JUPYTER_DATA_DIR", "XDG_DATA_HOME"):
        monkeypatch.delenv(name, raising=False)
    cases = [{}, {"XDG_DATA_HOME": str(tmp_path / "x")}, {"JUPYTER_DATA_DIR": str(tmp_path / "d")}]
    cases.append({"JUPYTER_RUNTIME_DIR": str(tmp_path / "r"), "JUPYTER_DATA_DIR": str(tmp_path / "d")})
    for extra in cases:
        with monkeypatch.context() as m:
            m.setenv("HOME", str(tmp_path / "home"))
            for name, value in extra.items():
                m.setenv(name, value)
            assert runtime_dir(dict(os.environ)) == Path(jupyter_runtime_dir()), extra
