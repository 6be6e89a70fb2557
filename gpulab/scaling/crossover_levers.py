"""The levers that move the crossover, each measured on 1 and 2 ranks; and 1 process × 2 threads against 2 ranks ×
1 thread (a probe: starts processes). ``notebooks/07_scaling.ipynb`` times threads against ranks in a cell of its
own (plain torch in ``%%ranks``); ``threads_vs_ranks`` is the same comparison for scripts.

Every lever changes one thing of a base plan: a larger batch per rank (more compute per all-reduce), gradient
accumulation (``no_sync()`` on all micro-batches but the last: one all-reduce per 4 micro-batches), DDP's
``bucket_cap_mb`` (smaller buckets start all-reducing earlier in the backward pass, but pay the latency more often),
``gradient_as_bucket_view`` (gradients live in the buckets: one copy less), ``static_graph`` (DDP stops re-checking
which parameters got gradients) and the overlap itself (turned off: one all-reduce after the whole backward pass).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..core.tables import Table, TableView
from ..core.verdicts import fastest_setup
from .probes import splits
from .steps import StepPlan, StepSplit

__all__ = ["lever_plans", "LeverRow", "Levers", "levers", "ThreadsVsRanks", "threads_vs_ranks", "FAST_LEVERS"]

FAST_LEVERS = ("default", "larger batch ×4", "accumulate 4 with no_sync()", "no overlap")


def lever_plans(base: StepPlan) -> list[StepPlan]:
    """The base plan and one plan per lever, each changing one setting."""
    return [
        base.but(lever="default"),
        base.but(batch=base.batch * 4, lever="larger batch ×4"),
        base.but(accumulate=4, lever="accumulate 4 with no_sync()"),
        base.but(bucket_cap_mb=1, lever="bucket_cap_mb=1"),
        base.but(bucket_cap_mb=100, lever="bucket_cap_mb=100"),
        base.but(gradient_as_bucket_view=True, lever="gradient_as_bucket_view=True"),
        base.but(static_graph=True, lever="static_graph=True"),
        base.but(overlap=False, lever="no overlap"),
    ]


@dataclass(frozen=True)
class LeverRow:
    """One lever measured on 1 rank and on 2, side by side in time."""

    one: StepSplit
    two: StepSplit

    @property
    def speedup(self) -> float:
        """Samples per second on 2 ranks ÷ on 1: above 1, the second rank pays with this lever."""
        return self.two.samples_per_s / self.one.samples_per_s


@dataclass(frozen=True)
class Levers(TableView):
    """Every lever measured (the base plan first), and those not measured in this mode."""

    rows: tuple[LeverRow, ...]
    skipped: tuple[str, ...] = ()

    def speedup(self, lever: str) -> float:
        """The 2-rank speed-up with ``lever`` pulled (one of the levers measured)."""
        return next(r.speedup for r in self.rows if r.one.plan.lever == lever)

    def table(self) -> Table:
        """Each lever's step on 1 and 2 ranks, the speed-up, and how rank 0's all-reduce split into exposed and hidden
        time."""
        base = self.rows[0].one.plan
        rows = [
            [
                r.one.plan.lever,
                r.one.plan.batch * r.one.plan.accumulate,
                f"{r.one.step_s * 1e3:.1f}",
                f"{r.two.step_s * 1e3:.1f}",
                f"{r.speedup:.2f}×",
                f"{r.two.allreduce_s * 1e3:.1f}",
                f"{r.two.exposed_s * 1e3:.1f}",
                f"{r.two.hidden_s * 1e3:.1f}",
            ]
            for r in self.rows
        ]
        notes = (
            [
                f"fast mode: measured only {', '.join(r.one.plan.lever for r in self.rows)}; not measured here: "
                f"{', '.join(self.skipped)} (GPULAB_FAST=0 measures them)"
            ]
            if self.skipped
            else []
        )
        return Table(
            [
                "lever",
                "samples/rank/step",
                "1 rank ms",
                "2 ranks ms",
                "speed-up",
                "all-reduce ms",
                "exposed ms",
                "hidden ms",
            ],
            rows,
            title=f"levers at width {base.width}, batch {base.batch} per rank (2-rank split: rank 0, fastest "
            "step; hidden = all-reduce that ran under the backward pass)",
            notes=notes,
        )


def levers(base: StepPlan, only: tuple[str, ...] | None = None) -> Levers:
    """Measure the base plan and each lever (``only``: those named, e.g. ``FAST_LEVERS``) on 1 and 2 gloo ranks."""
    plans = lever_plans(base)
    known = [p.lever for p in plans]
    if only is not None:
        unknown = [name for name in only if name not in known]
        if unknown:
            raise ValueError(f"no lever is called {unknown[0]!r}; the levers are: {', '.join(known)}.")
        plans = [p for p in plans if p.lever in only]
    rows = tuple(LeverRow(splits([p], 1)[0], splits([p], 2)[0]) for p in plans)  # each pair side by side in time
    measured = {p.lever for p in plans}
    return Levers(rows, tuple(k for k in known if k not in measured))


@dataclass(frozen=True)
class ThreadsVsRanks(TableView):
    """The same work done by 1 process on 1 thread, 1 process on 2 threads, and 2 DDP ranks on 1 thread each."""

    single: StepSplit  # 1 process, 1 thread, no DDP
    threads: StepSplit  # 1 process, 2 threads, no DDP
    ranks: StepSplit  # 2 DDP ranks, 1 thread each

    def table(self) -> Table:
        """Each setup's step and samples/s, and its speed over 1 process on 1 thread."""
        p = self.single.plan
        base = self.single.samples_per_s
        rows = [
            [label, f"{s.step_s * 1e3:.1f}", f"{s.samples_per_s:,.0f}", f"{s.samples_per_s / base:.2f}×"]
            for label, s in (
                ("1 process × 1 thread", self.single),
                ("1 process × 2 threads", self.threads),
                ("2 ranks × 1 thread (DDP)", self.ranks),
            )
        ]
        speeds = {"1 thread": base, "2 threads": self.threads.samples_per_s, "2 ranks": self.ranks.samples_per_s}
        return Table(
            ["setup", "step ms", "samples/s", "÷ 1 thread"],
            rows,
            title=f"the same 2 cores, two ways: width {p.width}, {p.batch} samples per step in all (one "
            f"process), {self.ranks.plan.batch} per rank",
            notes=[fastest_setup(speeds, using_both=("2 threads", "2 ranks"))],
        )


def threads_vs_ranks(plan: StepPlan) -> ThreadsVsRanks:
    """One process with 1 and with 2 threads (no DDP, no all-reduce) taking both ranks' batches in one step, against
    2 DDP ranks of 1 thread each taking ``plan.batch`` each."""
    both = plan.but(batch=2 * plan.batch)  # one process does the work of both ranks in each step
    single = splits([both], 1, threads_per_rank=1, ddp=False)[0]
    threads = splits([both], 1, threads_per_rank=2, ddp=False)[0]
    ranks = splits([plan], 2)[0]
    return ThreadsVsRanks(single, threads, ranks)
