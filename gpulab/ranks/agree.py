"""The ranks of a torchrun script agree on their backend and devices by comparing their GPUs across ranks.

A count on each node cannot see that two nodes share a GPU: two torchruns of one process each on a one-GPU machine
both see ``LOCAL_WORLD_SIZE=1`` and one GPU, both take ``cuda:0``, and NCCL refuses the duplicate GPU (seen on an
H100, ``evidence/``, 2026-11-26). So each rank names the GPU it could use by its UUID (the same GPU has the same UUID
in every process, on any node), the ranks gather all of them over a gloo process group (gloo needs only the CPU, so
it starts anywhere), and every rank decides the same plan from the same facts (``rank_devices``): NCCL only
when each rank has a GPU of its own. The course's script (``notebooks/scripts/digits_ddp.py``) keeps the standard
form, one count on each node; this is what a launcher that spans nodes can add.
"""

from __future__ import annotations

import torch
import torch.distributed as dist

from .rank_devices import RankDevices, RankGpu, decide_rank_devices

__all__ = ["this_rank_gpu", "agree_on_devices"]


def this_rank_gpu(local_rank: int) -> RankGpu | None:
    """The GPU this rank could use: ``cuda:LOCAL_RANK`` with its UUID, or None where this process sees fewer GPUs.

    Reading the UUID starts CUDA in this process (fine in a script's rank; a notebook never calls this)."""
    if local_rank >= torch.cuda.device_count():  # 0 on a CPU-only machine or build
        return None
    return RankGpu(local_rank, str(torch.cuda.get_device_properties(local_rank).uuid))


def agree_on_devices(mine: RankGpu | None, requested: str = "auto") -> RankDevices:
    """Every rank's possible GPU, gathered over the started (gloo) process group, decided into one plan: the same
    backend, device list and reason in every rank. Every rank must call it (it is a collective)."""
    if not dist.is_initialized():
        raise RuntimeError(
            "agree_on_devices compares the ranks' GPUs over a process group, and none is started. "
            "Call dist.init_process_group('gloo') first: gloo needs only the CPU."
        )
    everyone: list[RankGpu | None] = [None] * dist.get_world_size()
    dist.all_gather_object(everyone, mine)
    return decide_rank_devices(everyone, nccl_available=dist.is_nccl_available(), requested=requested)
