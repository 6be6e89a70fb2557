"""A small cost model of one data-parallel step (pure): compute from a FLOP rate, all-reduce from a link.

    step on 1 rank  = compute = FLOPs per rank ÷ FLOP rate (+ fixed, a cost per step that does not scale with work)
    step on N ranks = compute × N ÷ ceiling + exposed (sync + all-reduce, less the part the backward pass hides)
    all-reduce      = 2 (N − 1) × latency + 2 (N − 1) / N × gradient bytes ÷ bandwidth      (ring all-reduce)
    speed-up        = N × step on 1 rank ÷ step on N ranks        (each rank keeps its batch: N times the samples)

A ring all-reduce sends every rank's gradients round the ring twice (reduce-scatter, then all-gather), in 2 (N − 1)
messages of 1/N of the gradients each: that is where 2 (N − 1)/N comes from, and why the bytes per rank hardly grow
with N. Each term is one physical quantity, measured once per machine (never fitted to the point it predicts):

- the **FLOP rate** one rank reaches at this work size (on the CPU: the point's own 1-rank step, which holds its
  per-step overhead — Python, the optimiser, DDP's bookkeeping — so it is the rate the work really gets);
- the **ceiling**: how much faster N ranks compute together than one, at most (N when each rank owns a device; on a
  CPU, measured with independent processes doing the same work: ``probes.machine_ceiling``). Each rank computes at
  ceiling ÷ N of its rate alone;
- the **link**: ``latency_s`` per message (a bare all-reduce of 4 bytes) and ``bandwidth_bytes_per_s`` (the slope
  between a small and a large bare all-reduce);
- ``sync_s``: what a DDP step on N ranks pays once per step beyond its messages — the ranks meeting at the all-reduce
  (the scheduler waking gloo's threads, the slower rank's lag) and DDP's hook and future around it. Measured as the
  2-rank step of a tiny model minus what the other terms give for it; it is what the light end of a sweep is made of;
- ``hidden``: the fraction of the all-reduce that overlaps the backward pass (0 on this CPU, where the ranks' cores
  are busy computing; a GPU's copy engines and link work beside its cores).

On a CPU the ceiling comes from each point's own work (``probes.machine_ceiling(plan)``), not from matmuls that stay
in a core's cache: two ranks that divide and copy a wide model's gradients at once share the memory bus, and that
slowdown belongs in compute × N ÷ ceiling rather than in a per-byte term of its own (gradients small enough to stay in
a core's cache do not pay it). ``benchmarks/bench_scaling.py`` prints the model's error at every point of a sweep.

Taught in ``notebooks/07_scaling.ipynb``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..core.arguments import positive_number, whole_number
from ..core.units import format_seconds
from ..core.verdicts import NotMeasured

__all__ = [
    "Link",
    "Meeting",
    "meeting_seconds",
    "StepCost",
    "allreduce_s",
    "ring_bytes",
    "train_flops",
    "mlp_parameters",
    "predict_step",
    "speedup",
    "crossover_batch",
]


def _world_size(n: object) -> int:
    return whole_number(
        n, "world_size", minimum=1, what="how many processes (ranks) share the work", example="world_size=2"
    )


@dataclass(frozen=True)
class Meeting:
    """What a DDP step of several ranks pays per step to meet (``probes.ddp_sync_s``): ``seconds`` when measured, or
    ``not_measured`` (its reason) when the measurement came out at 0 or below, which no meeting can cost; the model
    then counts 0, and says so."""

    seconds: float
    not_measured: NotMeasured | None = None

    def __post_init__(self) -> None:
        if self.not_measured is None and not self.seconds > 0:
            raise ValueError(
                f"a measured meeting takes some time; got {self.seconds!r} s. A reading of 0 or below is no "
                "measurement: pass not_measured=NotMeasured(reason) and seconds=0."
            )

    def __str__(self) -> str:
        if self.not_measured is not None:
            return f"{self.not_measured} (the model counts 0)"
        return f"{format_seconds(self.seconds)} per step"


def meeting_seconds(sync: float | Meeting) -> float:
    """The seconds the model counts for a meeting given as a number or as a ``Meeting``."""
    return sync.seconds if isinstance(sync, Meeting) else sync


def meeting_text(sync: float | Meeting) -> str:
    """A meeting as a table's note prints it: the ``Meeting``'s own words, or a number's milliseconds."""
    return str(sync) if isinstance(sync, Meeting) else f"{format_seconds(sync)} per step"


@dataclass(frozen=True)
class Link:
    """What carries the all-reduce: ``bandwidth_bytes_per_s`` each way per rank, ``latency_s`` per message."""

    bandwidth_bytes_per_s: float
    latency_s: float
    source: str = "measured here"

    def __post_init__(self) -> None:
        positive_number(self.bandwidth_bytes_per_s, "bandwidth_bytes_per_s", what="the link's bytes per second")
        positive_number(
            self.latency_s, "latency_s", what="the time one message takes regardless of its size", zero_ok=True
        )


def ring_bytes(gradient_bytes: float, world_size: int) -> float:
    """Bytes each rank sends in a ring all-reduce of ``gradient_bytes``: 2 (N − 1)/N of them (0 on one rank)."""
    n = _world_size(world_size)
    size = positive_number(gradient_bytes, "gradient_bytes", what="the size of the gradients", zero_ok=True)
    return 2 * (n - 1) / n * size


def allreduce_s(gradient_bytes: float, world_size: int, link: Link) -> float:
    """Seconds of a ring all-reduce of ``gradient_bytes`` over ``world_size`` ranks on ``link``."""
    n = _world_size(world_size)
    if n == 1:
        return 0.0
    return 2 * (n - 1) * link.latency_s + ring_bytes(gradient_bytes, n) / link.bandwidth_bytes_per_s


def mlp_parameters(width: int, depth: int) -> int:
    """Weights and biases of ``depth`` square ``Linear(width, width)`` layers."""
    width = whole_number(width, "width", minimum=1, what="the model's features", example="mlp_parameters(256, 3)")
    depth = whole_number(depth, "depth", minimum=1, what="the model's layers", example="mlp_parameters(256, 3)")
    return depth * (width * width + width)


def train_flops(parameters: int, batch: int) -> float:
    """FLOPs of one training step of a stack of linear layers: 2 per weight and sample forward, 4 backward."""
    batch = whole_number(
        batch,
        "batch",
        minimum=1,
        what="the samples per rank and step",
        example="train_flops(mlp_parameters(256, 3), batch=32)",
    )
    return 6.0 * positive_number(parameters, "parameters", what="the model's parameter count") * batch


@dataclass(frozen=True)
class StepCost:
    """A predicted step: ``compute_s`` + ``exposed_s`` (the all-reduce the backward pass does not hide) = ``step_s``."""

    world_size: int
    compute_s: float
    allreduce_s: float
    exposed_s: float

    @property
    def step_s(self) -> float:
        """Seconds per step: the compute, plus the all-reduce time the backward pass does not hide."""
        return self.compute_s + self.exposed_s


def _ceiling(ceiling: float | None, n: int) -> float:
    """The ceiling of ``n`` ranks: ``n`` when None (each rank on a device of its own), else checked to lie in (0, n]."""
    if ceiling is None:
        return float(n)
    top = positive_number(ceiling, "ceiling", what="how much faster the ranks compute together than one, at most")
    if top > n:
        raise ValueError(
            f"ceiling={ceiling!r} is more than {n} ranks can reach: {n} ranks compute at most {n} times as fast as "
            f"one (a measured ceiling above {n} means the 1-process run was slowed by other programs). Pass "
            f"ceiling=min({n}, measured)."
        )
    return top


def predict_step(
    flops: float,
    gradient_bytes: float,
    world_size: int,
    *,
    flops_per_s: float,
    link: Link | None = None,
    ceiling: float | None = None,
    hidden: float = 0.0,
    fixed_s: float = 0.0,
    sync_s: float = 0.0,
) -> StepCost:
    """One rank's step when ``world_size`` ranks each do ``flops`` and all-reduce ``gradient_bytes``.

    ``flops_per_s`` is one rank's rate when it computes alone; ``ceiling`` how much faster the ranks compute together
    than one, at most (None: ``world_size``, each rank on a device of its own); ``hidden`` the fraction of the
    all-reduce the backward pass hides; ``fixed_s`` a cost per step that does not scale with the work (kernel
    launches, Python); ``sync_s`` a cost per step that only several ranks pay (meeting at the all-reduce), counted
    with the all-reduce.
    """
    n = _world_size(world_size)
    rate = positive_number(flops_per_s, "flops_per_s", what="one rank's FLOP rate")
    top = _ceiling(ceiling, n)
    if not 0 <= hidden <= 1:
        raise ValueError(
            f"hidden is the fraction of the all-reduce that the backward pass hides, in [0, 1]; got hidden={hidden!r}."
        )
    if n > 1 and link is None:
        raise ValueError(f"{n} ranks all-reduce their gradients: pass link=Link(bandwidth_bytes_per_s, latency_s).")
    work = positive_number(flops, "flops", what="the work per rank and step")
    compute = work * n / (rate * top) + positive_number(fixed_s, "fixed_s", what="a cost per step", zero_ok=True)
    meet = positive_number(sync_s, "sync_s", what="a cost per step of several ranks meeting", zero_ok=True)
    reduce = allreduce_s(gradient_bytes, n, link) + meet if n > 1 else 0.0
    exposed = reduce * (1 - hidden) if n > 1 else 0.0
    return StepCost(n, compute, reduce, exposed)


def speedup(one: StepCost, many: StepCost) -> float:
    """Samples per second of ``many`` ranks ÷ of one, each rank with the same batch."""
    return many.world_size * one.step_s / many.step_s


def crossover_batch(
    seconds_per_sample: float,
    allreduce_seconds: float,
    world_size: int = 2,
    ceiling: float | None = None,
) -> float:
    """The batch per rank from which ``world_size`` ranks start to pay: they reach the samples per second of one rank.

    With c seconds of compute per sample on one rank, a ceiling C (None: N) and an all-reduce of a:
    N·b·c ÷ (b·c·N/C + a) = 1  →  b = a ÷ (c·N·(1 − 1/C)). ``inf`` when no batch gets there (a ceiling of 1 or less).
    """
    n = _world_size(world_size)
    c = positive_number(seconds_per_sample, "seconds_per_sample", what="one rank's compute per sample")
    a = positive_number(allreduce_seconds, "allreduce_seconds", what="the all-reduce per step", zero_ok=True)
    room = n * (1 - 1 / _ceiling(ceiling, n))
    return math.inf if room <= 0 else a / (c * room)
