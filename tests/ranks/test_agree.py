"""A torchrun script's ranks compare their GPUs across ranks (over a real gloo group) before choosing NCCL.

Two torchrun "nodes" of one process each on a one-GPU machine both see LOCAL_WORLD_SIZE=1 and one GPU; a count on
each node cannot tell that they share it. On the H100 (``evidence/``, run of 2026-11-26) both took ``cuda:0`` with
NCCL, which refuses duplicate GPUs. Here the ranks run for real on the CPU and are given the GPUs they would report
(``torch.cuda.get_device_properties(i).uuid`` on a GPU machine): the same UUID twice must give gloo on the CPU.
"""

from __future__ import annotations

import pytest
import torch.distributed as dist

from gpulab.ranks.agree import agree_on_devices, this_rank_gpu
from gpulab.ranks.launcher import launch
from gpulab.ranks.rank_devices import RankGpu


def _agree(uuids):
    rank = dist.get_rank()
    mine = None if uuids[rank] is None else RankGpu(0, uuids[rank])  # each "node" sees its one GPU as cuda:0
    plan = agree_on_devices(mine)
    return plan.backend, plan.devices, plan.reason


def test_two_nodes_reporting_the_same_gpu_agree_on_gloo_on_the_cpu(no_process_left):
    plans = launch(_agree, 2, args=(["GPU-4b6a9119", "GPU-4b6a9119"],), backend="gloo", all_ranks=True)
    assert plans[0] == plans[1], "every rank decides the same"
    backend, devices, reason = plans[0]
    assert (backend, devices) == ("gloo", ("cpu", "cpu"))
    assert "ranks 0 and 1 would share one GPU (GPU-4b6a9119)" in reason


def test_two_nodes_each_with_a_gpu_of_its_own_agree_on_nccl_each_on_its_cuda_0(no_process_left):
    plans = launch(_agree, 2, args=(["GPU-aaa", "GPU-bbb"],), backend="gloo", all_ranks=True)
    expected = ("nccl", ("cuda:0", "cuda:0")) if dist.is_nccl_available() else ("gloo", ("cpu", "cpu"))
    assert [p[:2] for p in plans] == [expected, expected]


def test_a_rank_without_a_gpu_makes_every_rank_use_gloo(no_process_left):
    plans = launch(_agree, 2, args=(["GPU-aaa", None],), backend="gloo", all_ranks=True)
    assert {p[:2] for p in plans} == {("gloo", ("cpu", "cpu"))}
    assert "rank 1 would have none" in plans[0][2]


def test_on_this_machine_a_rank_past_the_gpu_count_reports_none():
    import torch

    assert this_rank_gpu(torch.cuda.device_count()) is None


def test_agreeing_without_a_process_group_is_refused_with_what_to_do():
    with pytest.raises(RuntimeError, match=r"none is started. Call dist.init_process_group\('gloo'\) first"):
        agree_on_devices(None)
