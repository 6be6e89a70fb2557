"""The step split is measured on real gloo ranks (tiny sizes: what is checked is the bookkeeping, not the speed)."""

from __future__ import annotations

import math

import pytest

from gpulab.scaling.cost import Link, Meeting
from gpulab.scaling.probes import TINY, Ceiling, ddp_sync_s, gloo_link, machine_ceiling, meeting_from, splits
from gpulab.scaling.steps import StepPlan, StepSplit, _clipped_s, _union_s, own_work_seconds
from gpulab.scaling.sweep import (
    MAX_STEPS,
    TWO_RANK_S,
    ScalingPoint,
    ScalingSweep,
    predict_two_ranks,
    scaling_sweep,
    steps_for,
)

from ..ranks.conftest import no_process_left  # noqa: F401  (the fixture)

SMALL = StepPlan(width=32, batch=4, steps=3)


def test_on_2_ranks_the_all_reduce_is_timed_and_compute_plus_tail_is_the_step(no_process_left):
    one, two = splits([SMALL], 1)[0], splits([SMALL], 2)[0]
    assert (one.world_size, two.world_size) == (1, 2)
    for s in (one, two):
        assert s.step_s > 0 and s.compute_s > 0 and s.exposed_s >= 0 and s.tail_s > 0
        # the definitions hold by construction: a part of the all-reduce cannot exceed it, nor the tail it lies in
        assert s.exposed_s <= s.allreduce_s + 1e-9 and s.exposed_s <= s.tail_s + 1e-9
    assert one.compute_s + one.tail_s == pytest.approx(one.step_s)  # one rank: its own step, split
    assert two.compute_s + two.tail_s <= two.step_s * 1.0001  # rank 0's split of a step as long as the slower rank
    assert two.allreduce_s > 0  # the hook saw the bucket go out and come back
    assert two.samples_per_s == pytest.approx(2 * 4 / two.step_s)


def test_the_sweep_the_ceiling_and_the_link_are_measured_and_predicted(no_process_left):
    ceiling = machine_ceiling(chunks=3)
    link = gloo_link(launches=2)
    # only that they were measured: how fast either runs depends on what else this machine does meanwhile (a ceiling
    # above 2 is a disturbed 1-process run; benchmarks/bench_scaling.py reports how steady the numbers are)
    assert ceiling.alone_s > 0 and ceiling.pair_s > 0 and ceiling.speedup == 2 * ceiling.alone_s / ceiling.pair_s
    assert link.bandwidth_bytes_per_s > 0 and link.latency_s >= 0
    assert "gloo on this machine: bare all-reduces of 4 B" in link.source and "the fastest of 2 launches" in link.source
    sync = ddp_sync_s(link)
    # seconds: a tiny model's 2-rank step is nowhere near a second; a reading of 0 or below is no measurement.
    # NotMeasured is falsy by design, so it is compared with None: a bare `and sync.not_measured` failed whenever the
    # meeting was within the run's noise (an intermittent failure of the full suite)
    assert (0 < sync.seconds < 1 and sync.not_measured is None) or (sync.seconds == 0 and sync.not_measured is not None)
    sweep = scaling_sweep([16], [2, 8], steps=2, link=link, sync_s=sync, tries=2)
    assert [(p.one.plan.width, p.one.plan.batch) for p in sweep.points] == [(16, 2), (16, 8)]
    assert [p.one.plan.steps for p in sweep.points] == [MAX_STEPS, MAX_STEPS]  # light points: many steps
    assert all(p.two.plan == p.one.plan for p in sweep.points)  # 1 and 2 ranks: the fastest of as many steps
    assert all(p.predicted > 0 and p.measured > 0 and math.isfinite(p.ceiling) and p.ceiling > 0 for p in sweep.points)
    text = str(sweep)
    assert "compute ms" in text and "all-reduce ms" in text and "exposed ms" in text and "worst model error" in text
    assert "ceiling (2 independent processes ÷ 1, each doing the point's own work without DDP)" in text
    assert f"2 ranks meeting: {sync}" in text and "0.00 ms" not in text
    assert "<table" in sweep._repr_html_()


def test_the_table_says_from_which_batch_2_ranks_paid():
    def split(batch, world_size, step):
        return StepSplit(StepPlan(64, batch), world_size, 1, step, step, 0.0, 0.0)

    points = (
        ScalingPoint(split(8, 1, 1.0), split(8, 2, 4.0), 0.5, 1.9),
        ScalingPoint(split(64, 1, 1.0), split(64, 2, 1.5), 1.3, 1.8),
    )
    sweep = ScalingSweep(points, Link(1e9, 0), 3, 0.0)
    assert sweep.pays_from(64) == 64 and sweep.best() is points[1]
    assert "n/m" not in str(sweep)  # both ceilings at most 2×: measured
    assert "width 64: 2 ranks pay from batch 64 per rank" in str(sweep)
    assert points[1].error == pytest.approx((1.3 - 4 / 3) / (4 / 3))


def test_overlapping_spans_count_once():
    assert _union_s([(0, 2), (1, 3), (5, 6)]) == 4  # 0–3 and 5–6


def test_the_exposed_part_is_what_the_spans_cover_after_the_last_gradient():
    spans = [(0, 2), (1, 3), (5, 6)]
    assert _clipped_s(spans, 2.5) == 1.5  # 2.5–3 and 5–6
    assert _clipped_s(spans, 7) == 0 and _clipped_s(spans, -1) == _union_s(spans)


@pytest.mark.parametrize(
    "call, error, words",
    [
        (
            lambda: StepPlan(0, 4),
            ValueError,
            r"StepPlan.width=0: StepPlan.width must be a whole number ≥ 1 \(e.g. "
            r"StepPlan\(width=64, batch=8\)\)",
        ),
        (lambda: StepPlan(8, 4.0), TypeError, "StepPlan.batch=4.0 is a float; StepPlan.batch takes a whole number ≥ 1"),
        (lambda: splits([], 2), ValueError, "at least one StepPlan"),
        (lambda: splits([SMALL], 1, device="tpu"), ValueError, "device is 'cpu'"),
        (lambda: scaling_sweep([], [8], link=None, sync_s=0), ValueError, "at least one width"),
        (
            lambda: scaling_sweep([8], [8], link=None, sync_s=0, tries=0),
            ValueError,
            r"tries=0: tries \(how many times each point is measured\) must be a whole number ≥ 1",
        ),
        (lambda: gloo_link(launches=0), ValueError, r"launches \(how many process groups"),
        (
            lambda: machine_ceiling((64, 8)),
            TypeError,
            r"machine_ceiling measures StepPlans, such as StepPlan\(width=64, batch=8\); got \(64, 8\)",
        ),
        (lambda: splits([SMALL, (64, 8)], 1), TypeError, "splits measures StepPlans"),
        (
            lambda: machine_ceiling(SMALL, chunks=3),
            ValueError,
            r"machine_ceiling times StepPlan\(width=32, .*'s own steps, so chunks \(of the matmuls timed without a "
            r"plan\) does not apply",
        ),
        (lambda: machine_ceiling(chunks=2.5), TypeError, r"chunks=2.5 is a float; chunks \(how many chunks of matmuls"),
        (
            lambda: Ceiling(0.01, 0),
            ValueError,
            r"pair_s=0: pair_s \(the fastest step of the pair, in seconds\) must be a finite number > 0\.",
        ),
        (
            lambda: Ceiling("12 ms", 0.01),
            TypeError,
            r"alone_s='12 ms' is a str; alone_s \(the fastest step of one process alone, in seconds\) takes a finite "
            r"number > 0",
        ),
    ],
)
def test_wrong_settings_are_refused(call, error, words):
    with pytest.raises(error, match=words):
        call()


def test_a_points_ceiling_is_its_own_work_on_independent_processes(no_process_left):
    ceiling = machine_ceiling(SMALL)  # measured on real processes: 1, then 2 training SMALL's model without DDP
    assert math.isfinite(ceiling.speedup) and ceiling.speedup > 0  # its size depends on the load beside it
    alone = own_work_seconds([SMALL, SMALL.but(steps=5)])  # here, without a process group: no barrier, no DDP
    assert [len(steps) for steps in alone] == [3, 5] and all(0 < s < 1 for steps in alone for s in steps)


def test_the_ceiling_is_how_much_more_work_two_processes_do_than_one():
    assert Ceiling(0.010, 0.010).speedup == 2  # each of the pair as fast as one alone: twice the work
    assert Ceiling(0.010, 0.020).speedup == 1  # each twice as slow: no gain
    assert Ceiling(0.010, 0.008).speedup == 2.5  # a 1-process run slowed by other programs reads above 2


def test_light_points_get_more_steps_and_heavy_ones_the_fewest_asked():
    assert steps_for(64, 8, 3, 8) == MAX_STEPS  # 0.6 MFLOP per step: 200 steps are still only a few MFLOP
    assert steps_for(1024, 1024, 3, 8) == 8  # 19 GFLOP per step: the fewest asked for
    assert 8 < steps_for(256, 64, 3, 8) < MAX_STEPS
    assert TINY.steps == MAX_STEPS and TINY.width == 8


def test_on_2_ranks_a_point_with_long_steps_but_little_compute_gets_about_two_rank_s_of_them():
    flops_only = steps_for(1024, 8, 3, 8)  # 0.15 GFLOP per step: 14 steps by FLOPs
    assert flops_only == 14
    assert steps_for(1024, 8, 3, 8, step_s=TWO_RANK_S / 50) == 50  # its 12.6 MB all-reduce makes the step long
    assert steps_for(1024, 8, 3, 8, step_s=TWO_RANK_S) == flops_only  # the FLOPs asked for more: they count
    assert steps_for(1024, 1024, 3, 8, step_s=0.2) == 8  # a heavy point keeps the fewest asked for
    assert steps_for(64, 8, 3, 8, step_s=1e-6) == MAX_STEPS  # never more than MAX_STEPS


@pytest.mark.parametrize(
    "bad, error",
    [
        (0, ValueError),
        (-1.0, ValueError),
        (float("nan"), ValueError),
        (float("inf"), ValueError),
        (True, TypeError),
        ("20 ms", TypeError),
    ],
)
def test_a_predicted_step_that_is_not_a_positive_time_is_refused(bad, error):
    with pytest.raises(error, match=r"step_s \(the predicted step in seconds\) (must be|takes) a finite number > 0"):
        steps_for(64, 8, 3, 8, step_s=bad)


def test_the_prediction_is_the_1_rank_step_under_the_ceiling_plus_meeting_plus_the_ring():
    plan = StepPlan(64, 8)
    one = StepSplit(plan, 1, 1, 2e-3, 1.5e-3, 0.0, 0.5e-3)
    link = Link(1e9, 50e-6)
    gradient_bytes = 4 * 3 * (64 * 64 + 64)
    two_s = 2e-3 / 0.9 + 0.3e-3 + 2 * 50e-6 + gradient_bytes / 1e9  # 2 (N - 1)/N = 1 for N = 2
    assert predict_two_ranks(one, 1.8, link, 0.3e-3) == pytest.approx(2 * 2e-3 / two_s)
    assert predict_two_ranks(one, 2.4, link, 0) == pytest.approx(2 * 2e-3 / (2e-3 + 2 * 50e-6 + gradient_bytes / 1e9))
    # each rank on its own device (ceiling 2) with the whole all-reduce under the backward pass: compute alone, 2×
    assert predict_two_ranks(one, 2.0, link, 0.3e-3, hidden=1.0) == pytest.approx(2.0)
    assert predict_two_ranks(one, 2.0, link, 0.3e-3, hidden=0.5) == pytest.approx(
        2 * 2e-3 / (2e-3 + (0.3e-3 + 2 * 50e-6 + gradient_bytes / 1e9) / 2)
    )


@pytest.mark.parametrize(
    "gpus, world_size, why",
    [(1, 2, r"2 ranks but only 1 GPU\(s\), so rank 1 would have none"), (0, 1, "no rank has a CUDA GPU")],
)
def test_on_gpus_a_rank_without_a_gpu_of_its_own_is_refused_before_any_process_starts(
    monkeypatch, gpus, world_size, why, no_process_left
):  # noqa: F811
    """Each rank used to time on ``cuda:LOCAL_RANK`` whatever the launch decided: on one GPU, rank 1 of 2 asked for
    ``cuda:1`` ("invalid device ordinal" on the H100, evidence/2026-11-26-h100-80gb-hbm3.json). Now the ranks run
    where the plan puts them, and a rank the plan cannot give a GPU is refused up front with the reason."""
    import gpulab.machine.cuda
    import gpulab.ranks.plan

    monkeypatch.setattr(gpulab.machine.cuda, "cuda_gpu_count", lambda: gpus)  # our seams: NVML's count, NCCL built in
    monkeypatch.setattr(gpulab.ranks.plan, "nccl_available", lambda: True)
    with pytest.raises(ValueError, match=r"backend='nccl' cannot work here: " + why):
        splits([SMALL], world_size, device="cuda")


def test_a_ceiling_above_two_is_printed_as_not_measured_with_its_reason():
    def split(batch, world_size, step):
        return StepSplit(StepPlan(512, batch), world_size, 1, step, step, 0.0, 0.0)

    # chapter 07 once printed a point's ceiling as 2.04×: two processes cannot do more than twice one's work
    sweep = ScalingSweep((ScalingPoint(split(8, 1, 2.4), split(8, 2, 5.5), 1.1, 2.04),), Link(1e9, 0), 3, 0.0)
    text = str(sweep)
    assert "2.04×  " not in text and "  n/m  " in text
    assert "ceiling at width 512, batch 8: not measured (n/m), because 2 processes ÷ 1 came out at 2.04×" in text
    assert str(Ceiling(alone_s=1.02, pair_s=1.0)).startswith("not measured, because 2 processes ÷ 1 came out at 2.04×")
    assert str(Ceiling(alone_s=0.9, pair_s=1.0)) == "1.80×" and Ceiling(0.9, 1.0).reading == pytest.approx(1.8)


def test_a_meeting_of_zero_or_less_is_not_measured_and_never_printed_as_a_time():
    # chapter 07 once printed "2 ranks meeting at each DDP step: 0.00 ms", a difference clamped at 0
    met = meeting_from(many_s=0.0009, paced_one_s=0.0005, allreduce=0.0001)
    assert met.seconds == pytest.approx(0.0003) and met.not_measured is None and str(met) == "300 µs per step"
    for many in (0.0006, 0.0004):  # exactly its parts, or faster than them: noise, not a meeting
        missed = meeting_from(many_s=many, paced_one_s=0.0005, allreduce=0.0001)
        assert missed.seconds == 0 and not missed.not_measured
        assert str(missed).startswith("not measured, because the tiny model's step on several ranks")
        assert "(the model counts 0)" in str(missed) and "0.00 ms" not in str(missed)
    with pytest.raises(ValueError, match="a measured meeting takes some time; got 0.0 s"):
        Meeting(0.0)


def test_a_bandwidth_from_a_slope_of_zero_is_refused(monkeypatch):
    from gpulab.scaling import probes

    # the 8 MiB all-reduce no slower than the 4 KiB one: a rate of infinity (or below 0) is no measurement
    monkeypatch.setattr(probes, "launch", lambda *a, **k: [0.005, 0.0002, 0.002, 0.002])
    with pytest.raises(RuntimeError, match=r"gloo's bandwidth was not measured, because the 8 MiB all-reduce"):
        probes.gloo_link()
