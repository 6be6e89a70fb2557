"""The Hub's hooks with shares, without a Hub (cheap): ``gpu_hooks(n_gpus=1, shares=3)`` gives each server one share
of a card with its memory cap, a whole-GPU setting beside it never lands on a shared card, and the spawn page's "no
GPU" message counts shares and keeps other students' server names to themselves. The real Hub is in test_hub.py."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

import pytest

from gpulab.core.shares import MEMORY_CAP_VARIABLE, share_cap_bytes
from gpulab.machine.simulated import SimulatedGpuReader
from gpulab.placement.reservation import reserve_gpus
from gpulab.placement.share_reservation import reserve_share
from gpulab.server.hub import NoGpuForServer, gpu_hooks, no_gpu_message


def _spawner(user: str, name: str = "") -> SimpleNamespace:
    return SimpleNamespace(user=SimpleNamespace(name=user), name=name, environment={})


def test_servers_take_one_share_each_with_its_cap_and_the_ninth_full_room_is_told_in_shares(tmp_path):
    pre, post = gpu_hooks(n_gpus=1, shares=3, machine="idle-8", reservations=tmp_path)
    gpus = {g.uuid: g for g in (SimulatedGpuReader("idle-8").info(i) for i in range(8))}
    spawners = [_spawner(f"student{k}") for k in range(24)]
    try:
        for s in spawners:
            asyncio.run(pre(s))
        seen = [(s.environment["CUDA_VISIBLE_DEVICES"], s.environment[MEMORY_CAP_VARIABLE]) for s in spawners]
        assert sorted(set(u for u, _ in seen)) == sorted(gpus) and all(
            sum(1 for u, _ in seen if u == uuid) == 3 for uuid in gpus
        )
        assert all(cap == str(share_cap_bytes(gpus[u].memory_total_bytes, 3)) for u, cap in seen)
        with pytest.raises(NoGpuForServer) as refused:
            asyncio.run(pre(_spawner("late")))
        lines = str(refused.value).splitlines()
        assert lines[0] == (
            "No GPU for late's server: it needs one of 3 shares of a GPU, and 0 of this machine's 24 shares "
            "(8 GPUs × 3) are free now."
        )
        assert sum("3 of 3 shares held (share 1: student" in line for line in lines) == 8
        post(spawners[0])
        asyncio.run(pre(_spawner("late")))  # the share student0 let go
    finally:
        for s in spawners:
            post(s)
        post(_spawner("late"))


def test_shares_with_two_gpus_per_server_are_refused_when_the_hub_reads_its_config():
    with pytest.raises(ValueError, match=r"gpu_hooks\(n_gpus=2, shares=3\): a server holds one share of one GPU"):
        gpu_hooks(n_gpus=2, shares=3, machine="idle-8")
    with pytest.raises(ValueError, match=r"shares=0: shares \(how many single-user servers share each GPU\)"):
        gpu_hooks(n_gpus=1, shares=0, machine="idle-8")


def test_the_message_counts_free_shares_and_keeps_server_names_private(tmp_path):
    details = {"for_user": "alice", "server": "thesis-runs"}
    with (
        reserve_share(3, "idle-8", reservations=tmp_path, details=details) as alices,
        reserve_gpus(7, "idle-8", reservations=tmp_path, details={"kernel": "k1", "notebook": "bob/exam.ipynb"}),
    ):
        to_carol = no_gpu_message("carol", 1, "idle-8", None, tmp_path, shares=3)
        to_alice = no_gpu_message("alice", 1, "idle-8", None, tmp_path, shares=3)
    card = alices.physical_indices[0]
    assert to_carol.splitlines()[0].endswith("2 of this machine's 24 shares (8 GPUs × 3) are free now.")
    assert f"  GPU {card}: reserved by 1 of 3 shares held (share 1: alice's server)" in to_carol.splitlines()
    assert "thesis-runs" not in to_carol and "exam.ipynb" not in to_carol
    assert "share 1: alice's server 'thesis-runs'" in to_alice
