"""Run ``steps``' measurements on real ranks, and measure what this machine allows (a probe: starts processes).

``splits`` times a list of plans on 1 or more ranks with one launch; ``machine_ceiling`` measures how much faster 2
ranks can run at most on this machine's cores: 2 independent single-threaded processes doing the same work (matmuls,
or one point's own training steps) against one; ``gloo_link`` measures the all-reduce's latency (a 4-byte message) and
bandwidth (the slope between 4 KiB and 8 MiB, after a warm-up); ``ddp_sync_s`` what a DDP step of 2 ranks pays beyond
those (a tiny model's step). Taught in ``notebooks/07_scaling.ipynb``.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..core.arguments import positive_number, whole_number
from ..core.units import format_seconds
from ..core.verdicts import NotMeasured
from ..ranks.launcher import launch
from ..ranks.own_device import on_own_device
from ..ranks.plan import plan_ranks
from .cost import Link, Meeting, allreduce_s, mlp_parameters
from .steps import StepPlan, StepSplit, allreduce_seconds, matmul_seconds, own_work_seconds, summarise, time_plans

__all__ = ["splits", "Ceiling", "machine_ceiling", "gloo_link", "ddp_sync_s", "meeting_from", "TINY"]

LATENCY_BYTES, SMALL_BYTES, LARGE_BYTES = 4, 4 * 1024, 8 * 1024 * 1024
# The tiny model of ``ddp_sync_s``: one Linear(8, 8), 288 bytes of gradients; its steps take well under a millisecond,
# so 200 of them cost little and leave enough undisturbed steps on a busy machine. Not a point of the sweep.
TINY = StepPlan(8, 1, depth=1, steps=200)


def splits(plans: list[StepPlan], world_size: int, *, device: str = "cpu") -> list[StepSplit]:
    """Every plan measured on ``world_size`` DDP ranks of one thread each."""
    if not plans:
        raise ValueError("splits needs at least one StepPlan to measure.")
    _refuse_other_than_plans("splits", plans)
    if device not in ("cpu", "cuda"):
        raise ValueError(f"device is 'cpu' (gloo) or 'cuda' (NCCL, a GPU per rank); got {device!r}.")
    if device == "cuda":  # refused before any process starts where a rank would have no GPU of its own
        plan_ranks("nccl", world_size)
    per_rank = launch(
        on_own_device(time_plans),
        world_size,
        args=(plans,),
        all_ranks=True,
        threads_per_rank=1,
        backend="nccl" if device == "cuda" else "gloo",
        timeout_s=120,
    )
    return summarise(plans, per_rank, 1)


@dataclass(frozen=True)
class Ceiling:
    """How much faster 2 ranks can run at most on this machine's cores: ``speedup`` = 2 × ``alone_s`` ÷ ``pair_s``,
    from independent processes doing the same work, without DDP. Two processes cannot do more than twice the work of
    one, so a ceiling above 2× means the 1-process run was disturbed (other programs slowed it more than the pair)."""

    alone_s: float  # the fastest step of 1 process alone
    pair_s: float  # the fastest step of 2 processes together, as long as the slower of the pair

    def __post_init__(self) -> None:
        positive_number(self.alone_s, "alone_s", what="the fastest step of one process alone, in seconds")
        positive_number(self.pair_s, "pair_s", what="the fastest step of the pair, in seconds")

    @property
    def speedup(self) -> float:
        """2 × one process's step ÷ the pair's step: how much more work the pair gets done than one process."""
        return 2 * self.alone_s / self.pair_s

    @property
    def reading(self) -> float | NotMeasured:
        """The speed-up, or why it is no measurement: above 2× two processes would have done more than twice the
        work of one, which only a disturbed 1-process run shows."""
        if self.speedup > 2:
            return NotMeasured(
                f"2 processes ÷ 1 came out at {self.speedup:.2f}×, above the 2× that two processes can reach: "
                "another program slowed the 1-process run more than the pair"
            )
        return self.speedup

    def __str__(self) -> str:
        reading = self.reading
        return f"{reading:.2f}×" if isinstance(reading, float) else str(reading)


MATMUL_SIDE, CHUNKS, PER_CHUNK = 512, 8, 5  # machine_ceiling's matmuls without a plan: side, chunks, per chunk


def machine_ceiling(plan: StepPlan | None = None, *, chunks: int = CHUNKS) -> Ceiling:
    """How much faster 2 ranks can run at most here: 2 independent single-threaded processes ÷ 1, each step (or chunk)
    started together after a barrier (nothing else is shared); a step of the pair lasts as long as its slower process,
    and the fastest step counts on both sides (other programs only ever slow a step down).

    Without ``plan``: ``chunks`` chunks of ``PER_CHUNK`` float32 ``MATMUL_SIDE``² matmuls (5 of 512×512), work that
    stays in a core's cache (what the cores allow). With ``plan``: that plan's own training steps without DDP (no
    all-reduce), as many as the plan has, which is the ceiling the cost model needs for that point, because

    - **the memory bus.** Two cores share it. Matmuls that fit in a core's cache hardly touch it; a light step of a
      wide model mostly streams weights and gradients through it (width 1024: 12.6 MB of each per step), so two such
      processes slow each other where two loops of matmuls as long do not;
    - **the length of the work.** On a busy machine the operating system shares the cores out in time slices of a
      few milliseconds. A step shorter than a slice often runs whole while the other process runs too; a long step is
      always interrupted, so on a busy machine the ceiling falls as the work per step grows."""
    if plan is not None:
        _refuse_other_than_plans("machine_ceiling", [plan])
        if chunks != CHUNKS:
            raise ValueError(
                f"machine_ceiling times {plan!r}'s own steps, so chunks (of the matmuls timed without a plan) "
                "does not apply. Pass either a plan or chunks."
            )
        one = launch(own_work_seconds, 1, args=([plan],), threads_per_rank=1, backend="gloo")[0]
        two = launch(own_work_seconds, 2, args=([plan],), threads_per_rank=1, backend="gloo", all_ranks=True)
        return Ceiling(min(one), _fastest_pair([rank[0] for rank in two]))
    chunks = whole_number(
        chunks, "chunks", minimum=1, what="how many chunks of matmuls are timed", example="machine_ceiling(chunks=8)"
    )
    work = (MATMUL_SIDE, chunks, PER_CHUNK)
    one = launch(matmul_seconds, 1, args=work, threads_per_rank=1, backend="gloo")
    two = launch(matmul_seconds, 2, args=work, threads_per_rank=1, backend="gloo", all_ranks=True)
    return Ceiling(min(one), _fastest_pair(two))


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
    if large <= small:  # a rate read from a slope of 0 or below would be infinite or negative: no measurement
        raise RuntimeError(
            f"gloo's bandwidth was not measured, because the 8 MiB all-reduce ({large * 1e3:.2f} ms) was no slower "
            f"than the 4 KiB one ({small * 1e3:.2f} ms): other programs disturbed the small ones. Run it again, with "
            "more launches (gloo_link(launches=3)) or on a quieter machine."
        )
    bandwidth = factor * (LARGE_BYTES - SMALL_BYTES) / (large - small)
    return Link(
        bandwidth,
        tiny / (2 * (world_size - 1)),
        f"gloo on this machine: bare all-reduces of 4 B ({tiny * 1e3:.2f} ms), 4 KiB ({small * 1e3:.2f} ms) "
        f"and 8 MiB ({large * 1e3:.1f} ms)" + (f", the fastest of {launches} launches" if launches > 1 else ""),
    )


def ddp_sync_s(link: Link, world_size: int = 2, device: str = "cpu") -> Meeting:
    """Seconds a DDP step of ``world_size`` ranks pays once per step beyond its messages: the ranks meeting at the
    all-reduce (the scheduler waking gloo's threads, the slower rank's lag) and DDP's hook and future around it.

    Measured on ``TINY`` (a model whose compute and bytes are next to nothing): its step on ``world_size`` ranks minus
    its 1-rank step slowed to the ceiling's pace (× ``world_size`` ÷ ``machine_ceiling(TINY)``) minus the all-reduce of
    its gradients on ``link``. ``device="cuda"``: one GPU per rank, which no rank shares (ceiling ``world_size``).
    A difference of 0 or below is no meeting time (the ranks met for free, which they cannot): the ``Meeting`` then
    says that it was not measured, and why."""
    one, many = splits([TINY], 1, device=device)[0], splits([TINY], world_size, device=device)[0]
    ceiling = world_size if device == "cuda" else min(world_size, machine_ceiling(TINY).speedup)
    gradient_bytes = 4 * mlp_parameters(TINY.width, TINY.depth)
    return meeting_from(many.step_s, one.step_s * world_size / ceiling, allreduce_s(gradient_bytes, world_size, link))


def meeting_from(many_s: float, paced_one_s: float, allreduce: float) -> Meeting:
    """The meeting: the tiny model's ``many_s`` step less its 1-rank step at the ceiling's pace and its all-reduce; a
    result of 0 or below (a step no slower than its parts) is the run's noise, not a meeting time."""
    left = many_s - paced_one_s - allreduce
    if left > 0:
        return Meeting(left)
    return Meeting(
        0.0,
        NotMeasured(
            f"the tiny model's step on several ranks ({format_seconds(many_s)}) was no longer than its 1-rank step "
            f"at the ceiling's pace ({format_seconds(paced_one_s)}) plus its all-reduce ({format_seconds(allreduce)}): "
            "the meeting is smaller than this run's noise"
        ),
    )
