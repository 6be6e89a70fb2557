"""Run ``steps``' measurements on real ranks, and measure this machine's own limits (a probe: starts processes).

``splits`` times a list of plans on 1 or more ranks with one launch; ``machine_limit`` is what 2 independent
single-threaded processes doing the same matmuls reach against one (the most 2 ranks can reach here); ``gloo_link``
measures the all-reduce's bandwidth (two message sizes) and its latency as DDP meets it (a tiny model's step).
Taught in ``notebooks/07_scaling.ipynb``.
"""
from __future__ import annotations

from ..ranks.launcher import launch
from .cost import Link
from .steps import StepPlan, StepSplit, allreduce_seconds, matmul_seconds, summarise, time_plans

__all__ = ["splits", "machine_limit", "gloo_link"]

SMALL_BYTES, LARGE_BYTES = 4 * 1024, 8 * 1024 * 1024


def splits(plans: list[StepPlan], ranks: int, *, threads_per_rank: int = 1, ddp: bool = True,
           device: str = "cpu") -> list[StepSplit]:
    """Every plan measured on ``ranks`` ranks (``ddp=False``: one process, no DDP, for the threads comparison)."""
    if not plans:
        raise ValueError("splits needs at least one StepPlan to measure.")
    if not ddp and ranks != 1:
        raise ValueError(f"ddp=False measures one process without DDP; got ranks={ranks}. Use ranks=1.")
    if device not in ("cpu", "cuda"):
        raise ValueError(f"device is 'cpu' (gloo) or 'cuda' (NCCL, a GPU per rank); got {device!r}.")
    per_rank = launch(_time_on_own_device if device == "cuda" else time_plans, ranks,
                      args=(plans,) if device == "cuda" else (plans, "cpu"), all_ranks=True,
                      threads_per_rank=threads_per_rank, init_process_group=ddp,
                      backend="auto" if device == "cuda" else "gloo", timeout_s=120)
    return summarise(plans, per_rank, threads_per_rank)


def _time_on_own_device(plans: list[StepPlan]) -> list:
    import os

    return time_plans(plans, f"cuda:{os.environ['LOCAL_RANK']}")


def machine_limit(n: int = 512, chunks: int = 8) -> float:
    """2 independent single-threaded processes ÷ 1, in matmuls per second: each process does the same chunks of
    matmuls, every chunk started together (a barrier; nothing else is shared); a chunk lasts as long as its slower
    process, and the fastest chunk counts (as for the steps: other programs only slow a chunk down)."""
    one = launch(matmul_seconds, 1, args=(n, chunks), threads_per_rank=1, backend="gloo")
    two = launch(matmul_seconds, 2, args=(n, chunks), threads_per_rank=1, backend="gloo", all_ranks=True)
    return 2 * min(one) / min(max(pair) for pair in zip(*two))


def gloo_link(ranks: int = 2) -> Link:
    """Latency and bandwidth of gloo's all-reduce between ``ranks`` ranks here, as DDP meets them.

    Bandwidth: the slope between a bare all-reduce of 4 KiB and one of 8 MiB. Latency: the waiting at the end of a
    DDP step of a tiny model (one ``Linear(8, 8)``: 288 bytes of gradients), which holds what every step pays whatever
    its size — the message's own latency and DDP's bookkeeping around it (hook, future, copies back) — spread over
    the ring's 2 (N − 1) messages. The tiny model is not a point of the sweep."""
    small, large = launch(allreduce_seconds, ranks, args=([SMALL_BYTES, LARGE_BYTES],), backend="gloo",
                          threads_per_rank=1)
    factor = 2 * (ranks - 1) / ranks
    bandwidth = factor * (LARGE_BYTES - SMALL_BYTES) / max(large - small, 1e-9)
    tiny = splits([StepPlan(8, 1, depth=1, steps=10)], ranks)[0]
    latency = max(small, tiny.waiting_s) / (2 * (ranks - 1))
    return Link(bandwidth, latency,
                f"gloo on this machine: bandwidth from bare all-reduces of 4 KiB ({small * 1e3:.2f} ms) and 8 MiB "
                f"({large * 1e3:.1f} ms), latency from a tiny DDP step's waiting ({tiny.waiting_s * 1e3:.2f} ms)")
