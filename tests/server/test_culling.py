"""jupyter-server's own culler, as the course's server settings configure it, gives a culled kernel's GPUs back.

A real jupyter-server with the workshop's ``tools/workshop_server_config.py`` and ``GPULAB_CULL_IDLE_S=2`` (its knob):
a notebook's kernel from gpulab's kernelspec holds a GPU with its kernel id and notebook in the reservation; nobody uses
it; the server culls it, and the GPU is free again — with no reaper of gpulab's."""

from __future__ import annotations

import time

from gpulab.machine.simulated import SimulatedGpuReader
from gpulab.reservations.holders import reservation_holders

from .jupyter import jupyter

IDLE8 = SimulatedGpuReader("idle-8")
UUIDS = [IDLE8.info(i).uuid for i in range(8)]


def test_an_idle_kernel_is_culled_by_the_server_and_its_gpu_is_free_again(tmp_path):
    # only the server itself: the Lab, LSP and terminal extensions take seconds to load and play no part here
    quiet = "--ServerApp.jpserver_extensions=" + repr(
        {e: False for e in ("jupyterlab", "jupyter_lsp", "notebook_shim", "jupyter_server_terminals")}
    )
    # 2 s, not 1: the reservation is read right after the kernel started, and a 1 s stall of this process on a loaded
    # machine would let the culler end the kernel first
    workshop = "workshop_server_config.py"
    with jupyter(tmp_path, env={"GPULAB_CULL_IDLE_S": "2"}, args=(quiet,), config=workshop) as server:
        session = server.api(
            "/api/sessions",
            "POST",
            {"path": "week1/idle.ipynb", "type": "notebook", "kernel": {"name": "gpulab-1-gpu"}},
        )
        kernel = session["kernel"]["id"]
        held = reservation_holders(UUIDS, tmp_path / "locks")
        assert [h.details.get("kernel") for h in held.values()] == [kernel]
        assert [h.details.get("notebook") for h in held.values()] == ["week1/idle.ipynb"]
        deadline = time.monotonic() + 60
        while server.api("/api/kernels") and time.monotonic() < deadline:
            time.sleep(0.3)
        assert server.api("/api/kernels") == [], "the server did not cull the idle kernel"
        assert "Culling kernel" in (tmp_path / "server.log").read_text()
        assert reservation_holders(UUIDS, tmp_path / "locks") == {}
