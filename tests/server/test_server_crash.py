"""The kernel model after a crash of its Jupyter server (slow: a real jupyter-server and kernel): nothing is left
holding a GPU for nobody. The provisioned kernel holds its own reservation; killed with SIGKILL, the server cannot
shut the kernel down, but ipykernel's parent poller (``JPY_PARENT_PID``, which jupyter_client sets) ends the kernel
within a second or so, and with it the reservation. So a server started again has the GPU to give: this is why the
kernel model needs no reconciliation of its own at start, unlike the Hub's server model (tests/server/test_hub.py)."""

from __future__ import annotations

import os
import signal

import psutil
import pytest

from gpulab.machine.simulated import SimulatedGpuReader
from gpulab.reservations.holders import reservation_holders
from tests.hub_processes import until

from .jupyter import jupyter

pytestmark = pytest.mark.slow
IDLE8 = SimulatedGpuReader("idle-8")
UUIDS = [IDLE8.info(i).uuid for i in range(8)]


def test_a_kernel_whose_server_was_killed_ends_and_frees_its_gpu(tmp_path):
    with jupyter(tmp_path, env={"GPULAB_CULL_IDLE_S": "0"}) as server:
        kernel = server.api("/api/kernels", "POST", {"name": "gpulab-1-gpu"})["id"]
        held = until("the kernel's reservation", lambda: reservation_holders(UUIDS, tmp_path / "locks"))
        (holder,) = held.values()
        assert holder.details["kernel"] == kernel
        server_pid = psutil.Process(holder.pid).ppid()
        os.kill(server_pid, signal.SIGKILL)
        until("the orphaned kernel to end", lambda: not psutil.pid_exists(holder.pid))
        assert reservation_holders(UUIDS, tmp_path / "locks") == {}
