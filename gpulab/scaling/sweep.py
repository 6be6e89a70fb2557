"""The scaling sweep: work per step (width × batch per rank) on 1 and 2 ranks, split and predicted (a probe).

Every point shows the step of 1 rank and of 2, the speed-up (2 × step₁ ÷ step₂: each rank keeps its batch), the
2-rank step split into compute, all-reduce and its exposed part (``steps``), and what the cost model (``cost``)
predicted for 2 ranks from four measured inputs: the FLOP rate this work size reaches on 1 rank (its 1-rank step), the
ceiling on 2 ranks' speed-up for this point's own work (2 independent processes doing it ÷ 1:
``probes.machine_ceiling(plan)``), gloo's link (``probes.gloo_link``) and what a DDP step of 2 ranks pays to meet
(``probes.ddp_sync_s``). The link and the meeting are measured once; none of the inputs comes from a 2-rank step of
the point it predicts.

Light points get more timed steps than heavy ones (up to ``MAX_STEPS``): about ``WORK_FLOPS`` of work, and at least
about ``TWO_RANK_S`` seconds of the 2-rank step that the model predicts from a first, sizing 1-rank run. A step of a
few milliseconds is easily disturbed by other programs, and the fastest of many is the undisturbed one. Counting the
FLOPs alone is not enough: a point with little compute but many gradient bytes (a wide model at a small batch) has
long 2-rank steps whose times spread widely, and the fastest of the few steps its FLOPs alone would give it can land
anywhere in that spread. All three measurements of a point take the same number of steps, because the fastest of many
is faster than the fastest of few: a 2-rank step timed more often than its 1-rank step could show a speed-up above
the point's own ceiling.
Taught in ``notebooks/07_scaling.ipynb``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from ..core.arguments import positive_number, whole_number
from ..core.tables import Table, TableView
from .cost import Link, Meeting, meeting_seconds, meeting_text, mlp_parameters, predict_step, speedup, train_flops
from .probes import Ceiling, machine_ceiling, splits
from .steps import StepPlan, StepSplit

__all__ = [
    "ScalingPoint",
    "ScalingSweep",
    "scaling_sweep",
    "predict_two_ranks",
    "steps_for",
    "WORK_FLOPS",
    "MAX_STEPS",
    "TWO_RANK_S",
]

WORK_FLOPS, MAX_STEPS, TWO_RANK_S = 2e9, 200, 1.0


def _ms(s: float) -> str:
    return f"{s * 1e3:.1f}"


def steps_for(width: int, batch: int, depth: int, steps: int, step_s: float | None = None) -> int:
    """Timed steps for a point: at least ``steps``, more for light points (about ``WORK_FLOPS`` in all, at most
    ``MAX_STEPS``); with ``step_s`` (the 2-rank step the model predicts), also at least about ``TWO_RANK_S`` of
    steps."""
    flops = train_flops(mlp_parameters(width, depth), batch)
    wanted = math.ceil(WORK_FLOPS / flops)
    if step_s is not None:
        step_s = positive_number(step_s, "step_s", what="the predicted step in seconds")
        wanted = max(wanted, math.ceil(TWO_RANK_S / step_s))
    return max(steps, min(MAX_STEPS, wanted))


def predict_two_ranks(
    one: StepSplit, ceiling: float, link: Link, sync_s: float | Meeting, hidden: float = 0.0
) -> float:
    """The cost model's 2-rank speed-up at ``one``'s work size, from its measured FLOP rate, ``ceiling`` (2.0 where
    each rank owns its device; a measured ceiling above 2 counts as 2), ``link``, ``sync_s`` and the fraction
    ``hidden`` of the all-reduce under the backward pass."""
    params = mlp_parameters(one.plan.width, one.plan.depth)
    flops = train_flops(params, one.plan.batch)
    rate = flops / one.step_s  # the FLOP rate this work size reaches on one core: measured, per-step overhead included
    kw = dict(flops_per_s=rate, link=link, sync_s=meeting_seconds(sync_s), hidden=hidden)
    return speedup(
        predict_step(flops, 4 * params, 1, **kw), predict_step(flops, 4 * params, 2, ceiling=min(2.0, ceiling), **kw)
    )


@dataclass(frozen=True)
class ScalingPoint:
    """One width and batch measured on 1 and 2 ranks, beside the model's prediction and what 2 independent processes
    reach."""

    one: StepSplit
    two: StepSplit
    predicted: float
    ceiling: float  # 2 independent processes ÷ 1 doing this point's own work, without DDP (``machine_ceiling``)

    @property
    def measured(self) -> float:
        """Samples per second on 2 ranks ÷ on 1: the speed-up measured at this point."""
        return self.two.samples_per_s / self.one.samples_per_s

    @property
    def error(self) -> float:
        """(predicted − measured) ÷ measured."""
        return (self.predicted - self.measured) / self.measured


@dataclass(frozen=True)
class ScalingSweep(TableView):
    """The sweep of work per step on 1 and 2 ranks, with the link, the model depth and the cost of meeting it was
    predicted with."""

    points: tuple[ScalingPoint, ...]
    link: Link
    depth: int
    sync_s: float | Meeting

    def best(self) -> ScalingPoint:
        """The point where 2 ranks gained most."""
        return max(self.points, key=lambda p: p.measured)

    def pays_from(self, width: int) -> int | None:
        """The smallest batch per rank in the sweep at which 2 ranks beat 1 for ``width`` (None: none did)."""
        paying = [p.one.plan.batch for p in self.points if p.one.plan.width == width and p.measured > 1]
        return min(paying) if paying else None

    def table(self) -> Table:
        """Each point's steps, measured and predicted speed-ups and the prediction's error, with where 2 ranks start to
        pay."""
        rows = [
            [
                p.one.plan.width,
                p.one.plan.batch,
                _ms(p.one.step_s),
                _ms(p.two.step_s),
                f"{p.measured:.2f}×",
                _ms(p.two.compute_s),
                _ms(p.two.allreduce_s),
                _ms(p.two.exposed_s),
                _ms(p.two.tail_s),
                f"{p.ceiling:.2f}×" if p.ceiling <= 2 else "n/m",
                f"{p.predicted:.2f}×",
                f"{p.error * 100:+.0f} %",
            ]
            for p in self.points
        ]
        widths = sorted({p.one.plan.width for p in self.points})
        notes = [
            f"width {w}: 2 ranks pay from batch {self.pays_from(w)} per rank"
            if self.pays_from(w)
            else f"width {w}: 2 ranks never paid in this sweep"
            for w in widths
        ]
        notes += [
            f"model inputs: the 1-rank step; ceiling (2 independent processes ÷ 1, each doing the point's own "
            f"work without DDP); gloo link {self.link.bandwidth_bytes_per_s / 1e9:.2f} GB/s, "
            f"{self.link.latency_s * 1e6:.0f} µs per message; 2 ranks meeting: {meeting_text(self.sync_s)}",
            f"worst model error: {max(abs(p.error) for p in self.points) * 100:.0f} %",
        ]
        notes += [
            f"ceiling at width {p.one.plan.width}, batch {p.one.plan.batch}: not measured (n/m), because 2 processes "
            f"÷ 1 came out at {p.ceiling:.2f}×, above the 2× two processes can reach (another program slowed the "
            "1-process run); the model counts 2×"
            for p in self.points
            if p.ceiling > 2
        ]
        return Table(
            [
                "width",
                "batch/rank",
                "1 rank ms",
                "2 ranks ms",
                "speed-up",
                "compute ms",
                "all-reduce ms",
                "exposed ms",
                "tail ms",
                "ceiling",
                "model",
                "error",
            ],
            rows,
            title=f"{self.depth} Linear(width, width) layers, float32, 1 thread per rank; 2-rank split "
            "measured (rank 0, fastest step)",
            notes=notes,
        )


def scaling_sweep(
    widths: Sequence[int],
    batches: Sequence[int],
    *,
    depth: int = 3,
    steps: int = 6,
    link: Link,
    sync_s: float | Meeting,
    tries: int = 1,
) -> ScalingSweep:
    """Measure every (width, batch per rank) on 1 and on 2 gloo ranks, one after the other, with the machine's
    ceiling for its own work, and predict each point (``steps``: the fewest timed steps per point; light points get
    more, see ``steps_for``).

    ``tries``: how many times each point's three measurements are taken in turn (1 rank, its ceiling, 2 ranks;
    again); each keeps its least disturbed try (the fastest step; for the ceiling, the fastest process alone and the
    fastest pair, which may come from different tries). On a shared machine whole stretches of time run slow, on
    either core; a point measured once can have its 1-rank step in such a stretch and its 2-rank step outside it, and
    its speed-up is then off by as much."""
    if not widths or not batches:
        raise ValueError("scaling_sweep needs at least one width and one batch size.")
    tries = whole_number(
        tries, "tries", minimum=1, what="how many times each point is measured", example="scaling_sweep(tries=3)"
    )
    points = []
    for plan in (StepPlan(w, b, depth=depth, steps=steps_for(w, b, depth, steps)) for w in widths for b in batches):
        # a first 1-rank run sizes the point: as many steps as about TWO_RANK_S of the 2-rank step the model
        # predicts, for all three measurements alike (the fastest of many steps is faster than the fastest of few);
        # it is the first 1-rank measurement when it already took that many
        sizing = splits([plan], 1)[0]
        guess = 2 * sizing.step_s / predict_two_ranks(sizing, 2.0, link, sync_s)  # the shortest it can be
        steps_all = steps_for(plan.width, plan.batch, depth, plan.steps, guess)
        ones = [sizing] if steps_all == plan.steps else []
        plan = plan.but(steps=steps_all)
        ceilings, twos = [], []
        for k in range(tries):
            # 1 rank, the ceiling, 2 ranks, one right after the other: load from other programs changes over
            # seconds, so all three see about the same
            if len(ones) <= k:
                ones.append(splits([plan], 1)[0])
            ceilings.append(machine_ceiling(plan))
            twos.append(splits([plan], 2)[0])
        one, two = min(ones, key=lambda s: s.step_s), min(twos, key=lambda s: s.step_s)
        ceiling = Ceiling(min(c.alone_s for c in ceilings), min(c.pair_s for c in ceilings)).speedup
        points.append(ScalingPoint(one, two, predict_two_ranks(one, ceiling, link, sync_s), ceiling))
    return ScalingSweep(tuple(points), link, depth, sync_s)
