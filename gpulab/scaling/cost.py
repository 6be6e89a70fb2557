"""A small cost model of one data-parallel step (pure): compute from a FLOP rate, all-reduce from a link.

    step on 1 rank  = compute = FLOPs per rank ÷ FLOP rate (+ fixed, a cost per step that does not scale with work)
    step on N ranks = compute ÷ contention + sync + all-reduce that the backward pass did not hide
    all-reduce      = 2 (N − 1) × latency + 2 (N − 1) / N × gradient bytes ÷ bandwidth      (ring all-reduce)
    speed-up        = N × step on 1 rank ÷ step on N ranks        (each rank keeps its batch: N times the samples)

A ring all-reduce sends every rank's gradients round the ring twice (reduce-scatter, then all-gather), in 2 (N − 1)
messages of 1/N of the gradients each: that is where 2 (N − 1)/N comes from, and why the bytes per rank hardly grow
with N. Each term is one physical quantity, measured once per machine (never fitted to the point it predicts):

- the **FLOP rate** one rank reaches at this work size (on the CPU: the point's own 1-rank step, which holds its
  per-step overhead — Python, the optimiser, DDP's bookkeeping — so it is the rate the work really gets);
- ``contention``: the share of its single-rank rate a rank keeps while all N compute at once (1 when each rank owns a
  device; on a CPU, the machine limit ÷ N, measured with independent processes doing the same work);
- the **link**: ``latency_s`` per message (a bare all-reduce of 4 bytes) and ``bandwidth_bytes_per_s`` (the slope
  between a small and a large bare all-reduce);
- ``sync_s``: what a DDP step on N ranks pays once per step beyond its messages — the ranks meeting at the all-reduce
  (the scheduler waking gloo's threads, the slower rank's lag) and DDP's hook and future around it. Measured as the
  2-rank step of a tiny model minus what the other terms give for it; it is what the light end of a sweep is made of;
- ``hidden``: the fraction of the all-reduce that overlaps the backward pass (0 on this CPU, where the ranks' cores
  are busy computing; a GPU's copy engines and link work beside its cores).

Where the 2-rank step once came out short, and why. While the share came from matmuls that stay in a core's cache,
the model's 2-rank step at width 1024, batch 8 (12.6 MB of gradients) was 2–4 ms shorter than the fastest measured
one. Timed inside that step (fastest of 40): dividing the gradients took 0.9 ms and copying the sums back into them
1.5 ms; on 1 rank, dividing and the 1-rank all-reduce together took 0.65 ms and the copy 0.68 ms. Two ranks
streaming 12.6 MB at once share the memory bus. The share is now measured with each point's own work
(``probes.limit_for``: 1.74× and 1.80× there, against 2.00× and 1.99× for matmul chunks of the same length), so that
slowdown is in compute ÷ share. A per-byte term tried before that, measured on one ``Linear(2048, 2048)`` at batch
1, came out at 0.22–0.56 ns per byte in three rounds: as noisy as the error it was meant to remove, and too large
for width 256's 0.8 MB, which fits in a core's cache. It is not in the model.

Taught in ``notebooks/07_scaling.ipynb``.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = ["Link", "StepCost", "allreduce_s", "ring_bytes", "train_flops", "mlp_parameters", "predict_step",
           "speedup", "crossover_batch"]


def _positive(value: object, name: str, what: str, *, zero_ok: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value) or math.isinf(value) \
            or value < 0 or (value == 0 and not zero_ok):
        bound = "≥ 0" if zero_ok else "> 0"
        raise ValueError(f"{name} is {what}, a finite number {bound}; got {value!r}. Pass it in the units the name "
                         "says (bytes, seconds, FLOP/s).")
    return float(value)


def _ranks(n: object) -> int:
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"ranks is how many processes share the work, a whole number ≥ 1; got {n!r}.")
    return n


@dataclass(frozen=True)
class Link:
    """What carries the all-reduce: ``bandwidth_bytes_per_s`` each way per rank, ``latency_s`` per message."""

    bandwidth_bytes_per_s: float
    latency_s: float
    source: str = "measured here"

    def __post_init__(self) -> None:
        _positive(self.bandwidth_bytes_per_s, "bandwidth_bytes_per_s", "the link's bytes per second")
        _positive(self.latency_s, "latency_s", "the time one message takes regardless of its size", zero_ok=True)


def ring_bytes(gradient_bytes: float, ranks: int) -> float:
    """Bytes each rank sends in a ring all-reduce of ``gradient_bytes``: 2 (N − 1)/N of them (0 on one rank)."""
    n = _ranks(ranks)
    return 2 * (n - 1) / n * _positive(gradient_bytes, "gradient_bytes", "the size of the gradients", zero_ok=True)


def allreduce_s(gradient_bytes: float, ranks: int, link: Link) -> float:
    """Seconds of a ring all-reduce of ``gradient_bytes`` over ``ranks`` ranks on ``link``."""
    n = _ranks(ranks)
    if n == 1:
        return 0.0
    return 2 * (n - 1) * link.latency_s + ring_bytes(gradient_bytes, n) / link.bandwidth_bytes_per_s


def mlp_parameters(width: int, depth: int) -> int:
    """Weights and biases of ``depth`` square ``Linear(width, width)`` layers."""
    for value, name in ((width, "width"), (depth, "depth")):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            what = "features" if name == "width" else "layers"
            raise ValueError(f"{name} is a whole number ≥ 1 (the model's {what}); got {value!r}.")
    return depth * (width * width + width)


def train_flops(parameters: int, batch: int) -> float:
    """FLOPs of one training step of a stack of linear layers: 2 per weight and sample forward, 4 backward."""
    if isinstance(batch, bool) or not isinstance(batch, int) or batch < 1:
        raise ValueError(f"batch is the samples per rank and step, a whole number ≥ 1; got {batch!r}.")
    return 6.0 * _positive(parameters, "parameters", "the model's parameter count") * batch


@dataclass(frozen=True)
class StepCost:
    """A predicted step: ``compute_s`` + ``exposed_s`` (the all-reduce not hidden) = ``step_s``."""

    ranks: int
    compute_s: float
    allreduce_s: float
    exposed_s: float

    @property
    def step_s(self) -> float:
        return self.compute_s + self.exposed_s


def predict_step(flops: float, gradient_bytes: float, ranks: int, *, flops_per_s: float, link: Link | None = None,
                 contention: float = 1.0, hidden: float = 0.0, fixed_s: float = 0.0, sync_s: float = 0.0) -> StepCost:
    """One rank's step when ``ranks`` ranks each do ``flops`` and all-reduce ``gradient_bytes``.

    ``flops_per_s`` is one rank's rate when it computes alone; ``contention`` the share of it each keeps when all
    compute at once; ``hidden`` the fraction of the all-reduce the backward pass hides; ``fixed_s`` a cost per step
    that does not scale with the work (kernel launches, Python); ``sync_s`` a cost per step that only several ranks
    pay (meeting at the all-reduce), counted with the all-reduce.
    """
    n = _ranks(ranks)
    rate = _positive(flops_per_s, "flops_per_s", "one rank's FLOP rate")
    share = _positive(contention, "contention", "the share of its FLOP rate a rank keeps beside the others")
    if share > 1 or not 0 <= hidden <= 1:
        raise ValueError(f"contention is a share in (0, 1] and hidden a fraction in [0, 1]; got contention="
                         f"{contention!r}, hidden={hidden!r}.")
    if n > 1 and link is None:
        raise ValueError(f"{n} ranks all-reduce their gradients: pass link=Link(bandwidth_bytes_per_s, latency_s).")
    compute = _positive(flops, "flops", "the work per rank and step") / (rate * (share if n > 1 else 1.0)) \
        + _positive(fixed_s, "fixed_s", "a cost per step", zero_ok=True)
    meet = _positive(sync_s, "sync_s", "a cost per step of several ranks meeting", zero_ok=True)
    reduce = allreduce_s(gradient_bytes, n, link) + meet if n > 1 else 0.0
    exposed = reduce * (1 - hidden) if n > 1 else 0.0
    return StepCost(n, compute, reduce, exposed)


def speedup(one: StepCost, many: StepCost) -> float:
    """Samples per second of ``many`` ranks ÷ of one, each rank with the same batch."""
    return many.ranks * one.step_s / many.step_s


def crossover_batch(seconds_per_sample: float, allreduce_seconds: float, ranks: int = 2, contention: float = 1.0,
                    target: float = 1.0) -> float:
    """The batch per rank from which ``ranks`` ranks reach ``target`` × one rank (1: they start to pay).

    With c seconds of compute per sample on one rank, a share s kept beside the others and an all-reduce of a:
    N·b·c ÷ (b·c/s + a) = target  →  b = target·a ÷ (c·(N − target/s)). ``inf`` when no batch gets there.
    """
    n = _ranks(ranks)
    c = _positive(seconds_per_sample, "seconds_per_sample", "one rank's compute per sample")
    a = _positive(allreduce_seconds, "allreduce_seconds", "the all-reduce per step", zero_ok=True)
    s = _positive(contention, "contention", "the share of its FLOP rate a rank keeps beside the others")
    t = _positive(target, "target", "the speed-up to reach")
    room = n - t / s
    return math.inf if room <= 0 else t * a / (c * room)
