"""A workshop's worst minutes with shared GPUs: 20 real kernels from a ``--shares 3`` kernelspec on the described
``workshop-8`` server, started, shut down, restarted and killed with ``kill -9`` at random, many at once; slow.

After every step the test counts double bookings (one share of a card in two live kernels, or a card both shared and
held whole), leaked shares (a share locked by a process that is no live kernel holding it) and lost ones (a live
kernel's share that nobody holds); all must be 0, and no share may stay held at the end. ``workshop-8``'s busy cards
(others' memory and processes on them) are passed over: its 4 free cards give 12 shares, so some starts are refused
with what to do. The figures are printed (``pytest -s``)."""

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
SHARES = 3


def test_a_20_kernel_storm_at_3_shares_per_gpu_has_no_double_booking_and_no_leaked_share(tmp_path, monkeypatch):
    kernels = ProvisionedKernels(tmp_path, monkeypatch, "workshop-8")
    name = kernels.install(1, shares=SHARES)
    rng = random.Random(29)
    figures: Counter = Counter()
    live: list = []

    def check() -> None:
        reservations = [(km, km.provisioner.reservation) for km in live]
        owner = {(r["physical"][0], r["share"][0]): km.provisioner.pid for km, r in reservations}
        figures["double bookings"] += len(reservations) - len(owner)
        figures["double bookings"] += sum(1 for _, r in reservations if r["share"][1] != SHARES)
        held = {}
        for g, h in kernels.holders().items():
            if not h.shares:
                figures["double bookings"] += 1  # a card held whole in a room of shares
            for k, n, share_holder in h.shares:
                held[(g, k)] = share_holder.pid
                figures["double bookings"] += n != SHARES
        figures["leaked shares"] += sum(1 for slot, pid in held.items() if owner.get(slot) != pid)
        figures["lost shares"] += sum(1 for slot in owner if slot not in held)
        figures["most shares held at once"] = max(figures["most shares held at once"], len(held))
        figures["most cards shared at once"] = max(figures["most cards shared at once"], len({g for g, _ in held}))
        for _, r in reservations:
            figures["kernels without their cap"] += "GPULAB_MEMORY_CAP" not in r["env"]

    async def start() -> None:
        try:
            km = await kernels.start(name, notebook=f"student{figures['starts asked']}.ipynb")
        except GpuKernelStartFailed as exc:
            assert "No free share of a GPU" in str(exc) and "wait a few minutes" in str(exc)
            figures["starts refused (no free share)"] += 1
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
                figures["restarts refused (no free share)"] += 1
        elif what == "kill -9":
            os.kill(km.provisioner.pid, 9)
            await kernels.gone(km)
        live.remove(km)
        await km.shutdown_kernel(now=True)

    async def storm() -> None:
        while figures["kernels started"] < KERNELS:
            burst = rng.randint(3, 8)
            figures["starts asked"] += burst
            await asyncio.gather(*(start() for _ in range(burst)))
            check()
            await asyncio.gather(*(act(km) for km in list(live)))
            check()
        for k, km in enumerate(list(live)):  # the end of the day: half shut down, half killed
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
    figures["shares held at the end"] = sum(len(h.shares) or 1 for h in kernels.holders().values())
    print(f"\nshare storm on workshop-8 (4 free described GPUs, {SHARES} shares per GPU):")
    for key in (
        "starts asked",
        "kernels started",
        "starts refused (no free share)",
        "shutdown",
        "kill -9",
        "restart",
        "restarts refused (no free share)",
        "most shares held at once",
        "most cards shared at once",
        "double bookings",
        "leaked shares",
        "lost shares",
        "kernels without their cap",
        "shares held at the end",
    ):
        print(f"  {key}: {figures[key]}")
    assert figures["kernels started"] >= KERNELS and figures["kill -9"] > 0 and figures["restart"] > 0
    assert figures["most shares held at once"] > 4  # more kernels than free cards held a GPU at once
    assert figures["double bookings"] == 0 and figures["leaked shares"] == 0 and figures["lost shares"] == 0
    assert figures["kernels without their cap"] == 0 and figures["shares held at the end"] == 0
