"""Run ``steps``' measurements on real ranks, and measure this machine's own limits (a probe: starts processes).

``splits`` times a list of plans on 1 or more ranks with one launch; ``machine_limit`` is what 2 independent
single-threaded processes doing the same matmuls reach against one (the most 2 ranks can reach here), ``limit_at``
the same for work as long as a given step; ``gloo_link`` measures the all-reduce's latency (a 4-byte message) and
bandwidth (the slope between 4 KiB and 8 MiB, after a warm-up); ``ddp_sync_s`` what a DDP step of 2 ranks pays beyond
those (a tiny model's step). Taught in ``notebooks/07_scaling.ipynb``.
"""
from __future__ import annotations

from ..ranks.launcher import launch
from .cost import Link, allreduce_s, mlp_parameters
from .steps import StepPlan, StepSplit, allreduce_seconds, matmul_seconds, summarise, time_plans

__all__ = ["splits", "machine_limit", "matmul_s", "limit_at", "gloo_link", "ddp_sync_s", "TINY", "LIMIT_N"]

LATENCY_BYTES, SMALL_BYTES, LARGE_BYTES = 4, 4 * 1024, 8 * 1024 * 1024
LIMIT_N = 256  # limit_at's matmuls: about 0.3 ms each on one core here, as short as the lightest steps
# The tiny model of ``ddp_sync_s``: one Linear(8, 8), 288 bytes of gradients; its steps take well under a millisecond,
# so 200 of them cost little and leave enough undisturbed steps on a busy machine. Not a point of the sweep.
TINY = StepPlan(8, 1, depth=1, steps=200)


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


def machine_limit(n: int = 512, chunks: int = 8, per_chunk: int = 5) -> float:
    """2 independent single-threaded processes ÷ 1, in matmuls per second: each process does the same chunks of
    ``per_chunk`` ``n``×``n`` matmuls, every chunk started together (a barrier; nothing else is shared); a chunk lasts
    as long as its slower process, and the fastest chunk counts (as for the steps: other programs only slow a chunk
    down)."""
    one = launch(matmul_seconds, 1, args=(n, chunks, per_chunk), threads_per_rank=1, backend="gloo")
    two = launch(matmul_seconds, 2, args=(n, chunks, per_chunk), threads_per_rank=1, backend="gloo", all_ranks=True)
    return 2 * min(one) / min(max(pair) for pair in zip(*two))


def matmul_s(n: int = LIMIT_N) -> float:
    """Seconds of one single-threaded ``n``×``n`` float32 matmul here (the fastest of 20): the unit ``limit_at``
    builds its chunks from."""
    return min(launch(matmul_seconds, 1, args=(n, 20, 1), threads_per_rank=1, backend="gloo"))


def limit_at(step_s: float, chunks: int, one_matmul_s: float) -> float:
    """The machine limit for work that lasts ``step_s`` at a time, measured ``chunks`` times: chunks of ``LIMIT_N``
    matmuls as long as the step (``one_matmul_s`` each, from ``matmul_s``).

    Why not one limit for every point: on a busy machine the operating system shares the cores out in time slices of
    a few milliseconds. A step shorter than a slice often runs whole while the other rank runs too, so its fastest
    steps see nearly 2 cores; a step of 100 ms is always interrupted. Measured here under load: chunks of 0.3 ms
    reached 1.95×, of 20 ms 1.62×, of 300 ms 0.87×. Each point's share is therefore measured at its own step's
    length, with as many chunks as the point has steps, so that both sides take their fastest of as many tries."""
    per_chunk = max(1, round(step_s / one_matmul_s))
    return machine_limit(LIMIT_N, max(3, chunks), per_chunk)


def gloo_link(ranks: int = 2) -> Link:
    """Latency and bandwidth of gloo's all-reduce between ``ranks`` ranks here (bare all-reduces, no DDP).

    Latency: a 4-byte all-reduce, spread over the ring's 2 (N − 1) messages. Bandwidth: the slope between an
    all-reduce of 4 KiB and one of 8 MiB, each rank sending 2 (N − 1)/N of the bytes. Each is the fastest of 15.

    A round of 8 MiB all-reduces goes first, untimed: a fresh process group's first large messages are slower than
    later ones (the loopback sockets' buffers grow with the traffic they carry), and a DDP step all-reduces the same
    gradients every step, so it runs warm. Measured here, three launches: the first 8 MiB size timed took 5.6, 3.2
    and 4.4 ms, the same size timed again later in the same launch 3.7, 3.2 and 3.1 ms."""
    _, tiny, small, large = launch(allreduce_seconds, ranks,
                                   args=([LARGE_BYTES, LATENCY_BYTES, SMALL_BYTES, LARGE_BYTES], 15),
                                   backend="gloo", threads_per_rank=1)
    factor = 2 * (ranks - 1) / ranks
    bandwidth = factor * (LARGE_BYTES - SMALL_BYTES) / max(large - small, 1e-9)
    return Link(bandwidth, tiny / (2 * (ranks - 1)),
                f"gloo on this machine: bare all-reduces of 4 B ({tiny * 1e3:.2f} ms), 4 KiB ({small * 1e3:.2f} ms) "
                f"and 8 MiB ({large * 1e3:.1f} ms)")


def ddp_sync_s(link: Link, ranks: int = 2, device: str = "cpu", one_matmul_s: float | None = None) -> float:
    """Seconds a DDP step of ``ranks`` ranks pays once per step beyond its messages: the ranks meeting at the
    all-reduce (the scheduler waking gloo's threads, the slower rank's lag) and DDP's hook and future around it.

    Measured on ``TINY`` (a model whose compute and bytes are next to nothing): its step on ``ranks`` ranks minus
    its 1-rank step slowed to the share a rank keeps (``limit_at`` its step's length ÷ ``ranks``; ``one_matmul_s``
    from ``matmul_s``, measured when not given) minus the all-reduce of its gradients on ``link``. Never below 0.
    ``device="cuda"``: one GPU per rank, which no rank shares (share 1)."""
    one, many = splits([TINY], 1, device=device)[0], splits([TINY], ranks, device=device)[0]
    if device == "cuda":
        share = 1.0
    else:
        limit = limit_at(one.step_s, TINY.steps, one_matmul_s or matmul_s())
        share = min(1.0, limit / ranks)
    gradient_bytes = 4 * mlp_parameters(TINY.width, TINY.depth)
    return max(0.0, many.step_s - one.step_s / share - allreduce_s(gradient_bytes, ranks, link))
