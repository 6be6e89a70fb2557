"""Run ``steps``' measurements on real ranks, and measure this machine's own limits (a probe: starts processes).

``splits`` times a list of plans on 1 or more ranks with one launch; ``machine_limit`` is what 2 independent
single-threaded processes doing the same matmuls reach against one (the most 2 ranks can reach here), ``limit_for``
the same for one point's own work; ``gloo_link`` measures the all-reduce's latency (a 4-byte message) and
bandwidth (the slope between 4 KiB and 8 MiB, after a warm-up); ``ddp_sync_s`` what a DDP step of 2 ranks pays beyond
those (a tiny model's step). Taught in ``notebooks/07_scaling.ipynb``.
"""

from __future__ import annotations

from ..core.arguments import positive_number, whole_number
from ..ranks.launcher import launch
from ..ranks.own_device import on_own_device
from ..ranks.plan import plan_ranks
from .cost import Link, allreduce_s, mlp_parameters
from .steps import StepPlan, StepSplit, allreduce_seconds, matmul_seconds, own_work_seconds, summarise, time_plans

__all__ = ["splits", "machine_limit", "limit_for", "limit_times", "limit_of", "gloo_link", "ddp_sync_s", "TINY"]

LATENCY_BYTES, SMALL_BYTES, LARGE_BYTES = 4, 4 * 1024, 8 * 1024 * 1024
# The tiny model of ``ddp_sync_s``: one Linear(8, 8), 288 bytes of gradients; its steps take well under a millisecond,
# so 200 of them cost little and leave enough undisturbed steps on a busy machine. Not a point of the sweep.
TINY = StepPlan(8, 1, depth=1, steps=200)


def splits(
    plans: list[StepPlan], world_size: int, *, threads_per_rank: int = 1, ddp: bool = True, device: str = "cpu"
) -> list[StepSplit]:
    """Every plan measured on ``world_size`` ranks (``ddp=False``: one process, no DDP, for the threads comparison)."""
    if not plans:
        raise ValueError("splits needs at least one StepPlan to measure.")
    _refuse_other_than_plans("splits", plans)
    if not ddp and world_size != 1:
        raise ValueError(f"ddp=False measures one process without DDP; got world_size={world_size}. Use world_size=1.")
    if device not in ("cpu", "cuda"):
        raise ValueError(f"device is 'cpu' (gloo) or 'cuda' (NCCL, a GPU per rank); got {device!r}.")
    if device == "cuda":  # refused before any process starts where a rank would have no GPU of its own
        plan_ranks("nccl", world_size)
    per_rank = launch(
        on_own_device(time_plans),
        world_size,
        args=(plans,),
        all_ranks=True,
        threads_per_rank=threads_per_rank,
        init_process_group=ddp,
        backend="nccl" if device == "cuda" else "gloo",
        timeout_s=120,
    )
    return summarise(plans, per_rank, threads_per_rank)


def machine_limit(n: int = 512, chunks: int = 8, per_chunk: int = 5) -> float:
    """2 independent single-threaded processes ÷ 1, in matmuls per second: each process does the same chunks of
    ``per_chunk`` ``n``×``n`` matmuls, every chunk started together (a barrier; nothing else is shared); a chunk lasts
    as long as its slower process, and the fastest chunk counts (as for the steps: other programs only slow a chunk
    down)."""
    one = launch(matmul_seconds, 1, args=(n, chunks, per_chunk), threads_per_rank=1, backend="gloo")
    two = launch(matmul_seconds, 2, args=(n, chunks, per_chunk), threads_per_rank=1, backend="gloo", all_ranks=True)
    return limit_of(min(one), _fastest_pair(two))


def limit_for(plan: StepPlan) -> float:
    """The machine limit for ``plan``'s own work: 2 independent single-threaded processes each training its model
    without DDP (no all-reduce; each of the ``plan.steps`` steps started together after a barrier) ÷ 1 process.

    Why each point gets its own, rather than the 512×512 matmuls of ``machine_limit``:

    - **the memory bus.** Two cores share it. Matmuls that fit in a core's cache hardly touch it; a light step of a
      wide model mostly streams weights and gradients through it (width 1024: 12.6 MB of each per step), so two
      such processes slow each other where two loops of matmuls as long do not;
    - **the length of the work.** On a busy machine the operating system shares the cores out in time slices of a
      few milliseconds. A step shorter than a slice often runs whole while the other process runs too; a step of
      100 ms is always interrupted, so on a busy machine the limit falls as the work per step grows.

    Both sides take the fastest of as many steps as the point has, as the point's own measurements do. Two processes
    cannot do more than twice the work of one, so a limit above 2 means the 1-process run was disturbed (other programs
    slowed it more than the pair)."""
    _refuse_other_than_plans("limit_for", [plan])
    return limit_of(*_limit_times(plan))


def limit_times(plan: StepPlan) -> tuple[float, float]:
    """``limit_for``'s two measurements, for a caller that keeps the fastest of several tries of each: the fastest
    step of 1 process alone, and the fastest step of 2 (as long as the slower of the pair)."""
    _refuse_other_than_plans("limit_times", [plan])
    return _limit_times(plan)


def _limit_times(plan: StepPlan) -> tuple[float, float]:
    one = launch(own_work_seconds, 1, args=([plan],), threads_per_rank=1, backend="gloo")[0]
    two = launch(own_work_seconds, 2, args=([plan],), threads_per_rank=1, backend="gloo", all_ranks=True)
    return min(one), _fastest_pair([rank[0] for rank in two])


def limit_of(one_s: float, pair_s: float) -> float:
    """How much more work 2 processes get done than 1: 2 × one process's step ÷ the pair's step."""
    return (
        2
        * positive_number(one_s, "one_s", what="the fastest step of one process alone, in seconds")
        / positive_number(pair_s, "pair_s", what="the fastest step of the pair, in seconds")
    )


def _refuse_other_than_plans(caller: str, plans: list[object]) -> None:
    """Before any process starts: a rank given something else would only fail inside, after importing torch."""
    for plan in plans:
        if not isinstance(plan, StepPlan):
            raise TypeError(
                f"{caller} measures StepPlans, such as StepPlan(width=64, batch=8); got {plan!r}. Build "
                "one with gpulab.scaling.steps.StepPlan."
            )


def _fastest_pair(two: list[list[float]]) -> float:
    """The fastest of the steps two processes took together (``two``: each process's times); a step of the pair lasts
    as long as its slower process."""
    return min(max(pair) for pair in zip(*two))


def gloo_link(world_size: int = 2, launches: int = 1) -> Link:
    """Latency and bandwidth of gloo's all-reduce between ``world_size`` ranks here (bare all-reduces, no DDP).

    Latency: a 4-byte all-reduce, spread over the ring's 2 (N − 1) messages. Bandwidth: the slope between an
    all-reduce of 4 KiB and one of 8 MiB, each rank sending 2 (N − 1)/N of the bytes. Each is the fastest of 15, and
    with ``launches`` > 1 the fastest over that many fresh process groups: how fast the same all-reduce runs depends
    on the launch, and the fastest launch is the link undisturbed.

    A round of 8 MiB all-reduces goes first, untimed: a fresh process group's first large messages are slower than
    later ones (the loopback sockets' buffers grow with the traffic they carry), and a DDP step all-reduces the same
    gradients every step, so it runs warm."""
    launches = whole_number(
        launches,
        "launches",
        minimum=1,
        what="how many process groups the link is measured in",
        example="gloo_link(launches=3)",
    )
    runs = [
        launch(
            allreduce_seconds,
            world_size,
            args=([LARGE_BYTES, LATENCY_BYTES, SMALL_BYTES, LARGE_BYTES], 15),
            backend="gloo",
            threads_per_rank=1,
        )[1:]
        for _ in range(launches)
    ]
    tiny, small, large = (min(sizes) for sizes in zip(*runs))
    factor = 2 * (world_size - 1) / world_size
    bandwidth = factor * (LARGE_BYTES - SMALL_BYTES) / max(large - small, 1e-9)
    return Link(
        bandwidth,
        tiny / (2 * (world_size - 1)),
        f"gloo on this machine: bare all-reduces of 4 B ({tiny * 1e3:.2f} ms), 4 KiB ({small * 1e3:.2f} ms) "
        f"and 8 MiB ({large * 1e3:.1f} ms)" + (f", the fastest of {launches} launches" if launches > 1 else ""),
    )


def ddp_sync_s(link: Link, world_size: int = 2, device: str = "cpu") -> float:
    """Seconds a DDP step of ``world_size`` ranks pays once per step beyond its messages: the ranks meeting at the
    all-reduce (the scheduler waking gloo's threads, the slower rank's lag) and DDP's hook and future around it.

    Measured on ``TINY`` (a model whose compute and bytes are next to nothing): its step on ``world_size`` ranks minus
    its 1-rank step slowed to the share a rank keeps (``limit_for(TINY)`` ÷ ``world_size``) minus the all-reduce of its
    gradients on ``link``. Never below 0. ``device="cuda"``: one GPU per rank, which no rank shares (share 1)."""
    one, many = splits([TINY], 1, device=device)[0], splits([TINY], world_size, device=device)[0]
    share = 1.0 if device == "cuda" else min(1.0, limit_for(TINY) / world_size)
    gradient_bytes = 4 * mlp_parameters(TINY.width, TINY.depth)
    return max(0.0, many.step_s - one.step_s / share - allreduce_s(gradient_bytes, world_size, link))
