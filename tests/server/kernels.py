"""Real Jupyter kernels started through gpulab's kernel provisioner, on a described server, for the tests.

``ProvisionedKernels`` installs gpulab's kernelspecs into a scratch ``JUPYTER_PATH``, points the lock directory at a
scratch folder and the GPUs at a described machine (``GPULAB_SIMULATE_GPUS``), and starts real kernels with
jupyter_client's ``AsyncKernelManager``. Every kernel's process group is killed at the end (jupyter_client starts
each kernel in a session of its own, as ``tests/process_group.py`` does for the tests' own subprocesses).
"""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path

from gpulab.machine.simulated import SimulatedGpuReader
from gpulab.reservations.holders import reservation_holders
from gpulab.server.kernelspec import install_kernelspec


class ProvisionedKernels:
    def __init__(self, tmp: Path, monkeypatch, machine: str = "idle-8") -> None:
        self.tmp = tmp
        self.locks = tmp / "locks"
        monkeypatch.setenv("JUPYTER_PATH", str(tmp / "share" / "jupyter"))
        monkeypatch.setenv("GPULAB_SIMULATE_GPUS", machine)
        monkeypatch.setenv("GPULAB_RESERVATIONS_DIR", str(self.locks))
        monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
        reader = SimulatedGpuReader(machine)
        self.gpus = [reader.info(i) for i in range(reader.count())]
        self.managers: list = []
        self.pids: set[int] = set()

    def install(self, n_gpus: int = 1, **kw) -> str:
        where, _ = install_kernelspec(n_gpus, prefix=str(self.tmp), **kw)
        return os.path.basename(where)

    async def start(self, name: str, notebook: str = "lesson.ipynb"):
        from jupyter_client import AsyncKernelManager

        km = AsyncKernelManager(kernel_name=name)
        self.managers.append(km)
        await km.start_kernel(env={**os.environ, "JPY_SESSION_NAME": notebook})
        self.pids.add(km.provisioner.pid)
        return km

    def holders(self) -> dict[int, object]:
        """Held GPUs by physical index -> Holder."""
        by_uuid = {g.uuid: g.physical_index for g in self.gpus}
        return {by_uuid[u]: h for u, h in reservation_holders([g.uuid for g in self.gpus], self.locks).items()}

    async def gone(self, km, timeout_s: float = 30.0) -> None:
        """Wait until a killed kernel's process has ended (reaped), as the kernel manager notices it."""
        for _ in range(int(timeout_s / 0.02)):
            if not await km.is_alive():
                return
            await asyncio.sleep(0.02)
        raise AssertionError("the kernel did not end")

    def close(self) -> None:
        for km in self.managers:
            pid = getattr(km.provisioner, "pid", None) if km.provisioner else None
            for p in {pid} - {None}:
                try:
                    os.killpg(p, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
            if km.provisioner is not None and km.provisioner.process is not None:
                km.provisioner.process.wait(10)
        left = [p for p in self.pids if _alive(p)]
        assert not left, f"kernel processes left behind: {left}"


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False
