"""``watch``'s idle time follows jupyter-server's own ``last_activity`` (the culler's clock), relayed by the kernel
provisioner into the reservation file's modification time; slow (a real jupyter-server, and seconds of waiting).

A kernel nobody uses grows idle; a client that runs code in it (connected to the kernel as a second client, the
server watching its IOPub as for any kernel) makes the server's ``last_activity`` move, and the reservation's idle time
drops back."""

from __future__ import annotations

import time

import pytest
from jupyter_client import BlockingKernelClient

from gpulab.machine.simulated import SimulatedGpuReader
from gpulab.server.reservation_list import reservation_rows

from .jupyter import jupyter

pytestmark = pytest.mark.slow
IDLE8 = SimulatedGpuReader("idle-8")
GPUS = [IDLE8.info(i) for i in range(8)]


def test_a_reservations_idle_time_is_the_servers_last_activity(tmp_path):
    quiet = "--ServerApp.jpserver_extensions=" + repr(
        {e: False for e in ("jupyterlab", "jupyter_lsp", "notebook_shim", "jupyter_server_terminals")}
    )
    with jupyter(
        tmp_path, env={"GPULAB_CULL_IDLE_S": "0"}, args=(quiet, "--GpuKernelProvisioner.activity_every_s=0.5")
    ) as server:
        session = server.api(
            "/api/sessions", "POST", {"path": "idle.ipynb", "type": "notebook", "kernel": {"name": "gpulab-1-gpu"}}
        )
        kernel = session["kernel"]["id"]
        # a kernel nobody uses grows idle (polled, not slept: on a loaded machine the kernel's start-up, which the
        # server counts as activity, can end later than the request that started it)
        row = _row_once(tmp_path, lambda r: r.idle_s >= 3, "grew idle for 3 s")
        assert row.kernel == kernel, row
        client = BlockingKernelClient(connection_file=str(tmp_path / "runtime" / f"kernel-{kernel}.json"))
        client.load_connection_file()
        client.start_channels()
        try:
            client.wait_for_ready(timeout=60)
            time.sleep(1)  # connecting is activity too: a second older than the code's, so the two can be told apart
            ran = time.monotonic()
            client.execute_interactive("x = 1", timeout=60)
        finally:
            client.stop_channels()
        assert server.api(f"/api/kernels/{kernel}")["last_activity"] > session["kernel"]["last_activity"]
        # the provisioner relays it: the reservation's idle time starts again after the code ran (before it, the kernel
        # had
        # been idle for 3 s and more)
        _row_once(tmp_path, lambda r: r.idle_s <= time.monotonic() - ran + 0.1, "dropped back after the code ran")


def _row_once(tmp_path, ok, what: str, within_s: float = 30.0):
    """The reservation's row as soon as ``ok`` holds for it (read every 0.2 s, for at most ``within_s``)."""
    deadline = time.monotonic() + within_s
    while True:
        [row] = reservation_rows(GPUS, tmp_path / "locks")
        if ok(row):
            return row
        if time.monotonic() > deadline:
            pytest.fail(f"the reservation's idle time never {what} within {within_s:.0f} s: {row}")
        time.sleep(0.2)
