"""A workshop's worst minutes: 20 real kernels started, shut down, restarted and killed with ``kill -9`` at random,
many at once, through gpulab's kernel provisioner on a described server with 8 free GPUs (``idle-8``); slow.

After every step the test counts double bookings (one GPU in two live kernels' reservations, or two kernels seeing the
same ``CUDA_VISIBLE_DEVICES``) and leaked reservations (a GPU locked by a process that is no live kernel, or one whose
kernel is gone); both must be 0, and no GPU may stay held at the end. The figures are printed (``pytest -s``)."""

from __future__ import annotations

import asyncio
import os
import random
from collections import Counter

import pytest

from gpulab.server.provisioner import GpuKernelStartFailed

from .kernels import ProvisionedKernels

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]
KERNELS = 20


def test_a_20_kernel_storm_on_8_gpus_has_no_double_booking_and_no_leaked_reservation(tmp_path, monkeypatch):
    kernels = ProvisionedKernels(tmp_path, monkeypatch, "idle-8")
    name = kernels.install(1)
    rng = random.Random(23)
    figures: Counter = Counter()
    live: list = []

    def check() -> None:
        reservations = [(km, km.provisioner.reservation) for km in live]
        per_gpu = Counter(g for _, reservation in reservations for g in reservation["physical"])
        figures["double bookings"] += sum(n - 1 for n in per_gpu.values() if n > 1)
        seen = Counter(reservation["env"]["CUDA_VISIBLE_DEVICES"] for _, reservation in reservations)
        figures["double bookings"] += sum(n - 1 for n in seen.values() if n > 1)
        holders = kernels.holders()
        owner = {g: km.provisioner.pid for km, reservation in reservations for g in reservation["physical"]}
        figures["leaked reservations"] += sum(1 for g, h in holders.items() if owner.get(g) != h.pid)
        figures["lost reservations"] += sum(1 for g in owner if g not in holders)
        figures["most GPUs held at once"] = max(figures["most GPUs held at once"], len(holders))

    async def start() -> None:
        try:
            km = await kernels.start(name, notebook=f"student{figures['starts asked']}.ipynb")
        except GpuKernelStartFailed as exc:
            assert "wait a few minutes" in str(exc)
            figures["starts refused (no free GPU)"] += 1
            return
        live.append(km)
        figures["kernels started"] += 1

    async def act(km) -> None:
        what = rng.choices(["keep", "shutdown", "kill -9", "restart"], [35, 25, 25, 15])[0]
        if what == "keep":
            return
        figures[what] += 1
        if what == "restart":
            try:
                await km.restart_kernel(now=True)
                kernels.pids.add(km.provisioner.pid)
                return
            except GpuKernelStartFailed:
                figures["restarts refused (no free GPU)"] += 1
        elif what == "kill -9":
            os.kill(km.provisioner.pid, 9)
            await kernels.gone(km)
        live.remove(km)
        await km.shutdown_kernel(now=True)  # a killed one: the manager cleans up what is left of it

    async def storm() -> None:
        while figures["kernels started"] < KERNELS:
            burst = rng.randint(2, 6)
            figures["starts asked"] += burst
            await asyncio.gather(*(start() for _ in range(burst)))
            check()
            await asyncio.gather(*(act(km) for km in list(live)))
            check()
        # the end of the day: half shut down, half killed
        for k, km in enumerate(list(live)):
            live.remove(km)
            if k % 2:
                os.kill(km.provisioner.pid, 9)
                await kernels.gone(km)
            await km.shutdown_kernel(now=True)
            check()

    try:
        asyncio.run(storm())
    finally:
        kernels.close()
    figures["GPUs held at the end"] = len(kernels.holders())
    print("\nkernel storm on idle-8 (8 described GPUs, 1 GPU per kernel):")
    for key in (
        "starts asked",
        "kernels started",
        "starts refused (no free GPU)",
        "shutdown",
        "kill -9",
        "restart",
        "restarts refused (no free GPU)",
        "most GPUs held at once",
        "double bookings",
        "leaked reservations",
        "lost reservations",
        "GPUs held at the end",
    ):
        print(f"  {key}: {figures[key]}")
    assert figures["kernels started"] >= KERNELS and figures["kill -9"] > 0 and figures["restart"] > 0
    assert figures["double bookings"] == 0 and figures["leaked reservations"] == 0 and figures["lost reservations"] == 0
    assert figures["GPUs held at the end"] == 0
