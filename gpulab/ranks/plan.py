"""Which backend ``gpulab.launch`` starts and which device each rank gets, from this machine's facts.

The decision itself is pure (``rank_devices``); this module reads the facts it needs on one machine — how many
CUDA GPUs this process sees (through NVML: no CUDA context in the notebook) and whether NCCL is built in — and hands
them over. Rank k may use ``cuda:k`` while k is below the count. Taught in ``notebooks/04_ddp.ipynb``.
"""

from __future__ import annotations

import torch.distributed as dist

from .rank_devices import RankDevices, decide_rank_devices

__all__ = ["plan_ranks", "choose_backend", "nccl_available"]


def plan_ranks(requested: str, world_size: int) -> RankDevices:
    """The backend and each rank's device for ``world_size`` ranks on this machine: ``auto`` is NCCL, rank k on
    ``cuda:k``, when every rank can have a GPU of its own and NCCL is built in; else gloo on the CPU."""
    from ..machine.cuda import cuda_gpu_count

    requested = requested.lower() if isinstance(requested, str) else requested  # the decision refuses a non-name
    if requested in ("mpi", "ucc", "xccl") and not dist.is_backend_available(requested):
        raise ValueError(
            f"backend={requested!r} is not available in this PyTorch build; use 'auto', 'gloo' or, with GPUs, 'nccl'."
        )
    gpus = cuda_gpu_count() if requested in ("auto", "nccl") else 0
    return decide_rank_devices(world_size, gpus, nccl_available=nccl_available(), requested=requested)


def nccl_available() -> bool:
    """Whether this PyTorch has NCCL built in (CUDA builds on Linux): a fact of the machine, read in one place."""
    return dist.is_nccl_available()


def choose_backend(requested: str, world_size: int) -> str:
    """The backend ``plan_ranks`` decides for ``world_size`` ranks on this machine."""
    return plan_ranks(requested, world_size).backend
