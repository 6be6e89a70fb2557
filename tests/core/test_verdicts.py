"""Verdicts the cells print (held / missed, with the numbers that decided) and readings that cannot be true."""

from __future__ import annotations

import pytest

from gpulab.core.verdicts import (
    QUIET_CEILING,
    NotMeasured,
    crossover_verdict,
    fastest_setup,
    overhead_verdict,
    quiet_verdict,
    rises_verdict,
)


def test_the_crossover_holds_exactly_when_the_ratio_at_the_prediction_is_within_15_percent_of_one():
    held = crossover_verdict({19: 0.75, 37: 0.96, 74: 1.14}, 37.4, ceiling=1.9)
    assert held and str(held) == (
        "held: 2 ranks break even near batch 37: 0.96× at the predicted batch 37 (within 15 % of 1× is 0.85–1.15×), "
        "0.75× at half (19) and 1.14× at twice (74)"
    )
    # twice the batch is reported, not required: the verdict reads the ratio at the prediction only
    assert crossover_verdict({11: 0.9, 22: 1.02, 44: 0.98}, 22, ceiling=1.9)
    assert crossover_verdict({11: 0.7, 22: 0.85, 44: 1.2}, 22, ceiling=1.9)  # the edge: 15 % below 1× holds
    assert not crossover_verdict({11: 0.7, 22: 0.84, 44: 1.2}, 22, ceiling=1.9)
    assert crossover_verdict({11: 0.9, 22: 1.15, 44: 1.3}, 22, ceiling=1.9)
    assert not crossover_verdict({11: 0.9, 22: 1.16, 44: 1.3}, 22, ceiling=1.9)


def test_a_missed_crossover_on_a_busy_run_blames_the_machine_and_on_a_quiet_one_the_model():
    # the committed chapter 07 once measured 0.67×, 0.75×, 0.88× beside a ceiling of 1.57×, and its prose said "held"
    busy = crossover_verdict({11: 0.67, 22: 0.75, 44: 0.88}, 22, ceiling=1.57)
    assert not busy and str(busy).startswith("missed: ")
    assert (
        "the real crossover is at a larger batch" in busy.reason
        and "This run's ceiling was 1.57× (another program held a core, so each pair ran" in (busy.reason)
    )
    quiet = crossover_verdict({11: 0.9, 22: 1.25, 44: 1.4}, 22, ceiling=1.9)
    assert not quiet and "2 ranks already paid there: the real crossover is at a smaller batch, on a quiet run" in (
        quiet.reason
    )
    disturbed = crossover_verdict({11: 0.6, 22: 0.7, 44: 0.98}, 22, ceiling=2.18)  # above 2×: not a quiet run
    assert not disturbed and "ceiling was 2.18× (above 2×: another program slowed the 1-process runs" in str(disturbed)
    with pytest.raises(ValueError, match="three measured batches"):
        crossover_verdict({11: 0.9, 22: 1.0}, 22, ceiling=1.9)


def test_the_fastest_setup_is_the_fastest_row_not_only_of_the_two_core_setups():
    # chapter 07 once showed 1 process × 1 thread fastest, then "faster here: 2 threads"
    line = fastest_setup({"1 thread": 57619, "2 threads": 31080, "2 ranks": 24191}, using_both=("2 threads", "2 ranks"))
    assert line == (
        "fastest here: 1 thread (2 threads at 0.54×, 2 ranks at 0.42×); of the setups that use both cores, 2 threads"
    )
    assert fastest_setup({"1 thread": 1.0, "2 ranks": 1.5}, using_both=("2 ranks",)) == (
        "fastest here: 2 ranks (1 thread at 0.67×)"
    )
    with pytest.raises(ValueError, match="at least one setup's speed"):
        fastest_setup({})


def test_the_overhead_verdict_judges_the_cpu_share_and_reads_the_wall_clock_against_the_same_bound():
    held = overhead_verdict(0.998, 0.952, 1.005, cpu_percent=1.01)
    assert held and "took 0.998× as long" in held.reason and "the sampler used 1.01 % of one core" in held.reason
    assert str(held).startswith("held: watching costs at most 3 % of one core") and "the wall clock agrees" in str(held)
    fixed = overhead_verdict(1.04, 1.02, 1.06, cpu_percent=1.0, fixed_percent=2.0)
    assert fixed and "the wall clock grew more" in fixed.reason and "with it the gap fits the bound" in fixed.reason
    jitter = overhead_verdict(1.056, 1.028, 1.060, cpu_percent=0.98)
    assert jitter and "more than 3 %" in jitter.reason and "jitter is as large as the gap" in jitter.reason
    threads = overhead_verdict(1.089, 1.041, 1.098, cpu_percent=1.28, fixed_percent=0.5)  # chapter 05's quiet run
    assert threads and "even the middle half lies above that" in threads.reason and "0.5 %" in threads.reason
    noisy = overhead_verdict(0.833, 0.636, 0.915, cpu_percent=0.5)  # a run on a busy machine
    assert noisy and "the wall clock cannot tell" in noisy.reason and "agrees" not in noisy.reason
    missed = overhead_verdict(1.2, 1.1, 1.3, cpu_percent=4.2)
    assert not missed and "above 3 %" in missed.reason and "reading that got slower" in missed.reason


def test_quiet_is_the_threshold_of_the_ceiling():
    assert quiet_verdict(QUIET_CEILING) and quiet_verdict(1.95, 0.4, 2)
    busy = quiet_verdict(1.57, 1.9, 2)
    assert not busy and "ceiling 1.57×, below the 1.7× of a quiet machine, load average 1.90 on 2 core(s)" in str(busy)


def test_not_measured_prints_its_reason_and_is_falsy():
    reading = NotMeasured("the clock did not move")
    assert str(reading) == "not measured, because the clock did not move" and not reading


def test_a_rise_holds_only_when_each_point_is_above_the_one_before():
    rising = rises_verdict("more at a larger batch", [("batch 32", 1.03), ("batch 128", 1.26)], "{:.2f}×".format)
    assert rising and str(rising) == "held: more at a larger batch: 1.03× at batch 32, 1.26× at batch 128"
    flat = rises_verdict("more at a larger batch", [("batch 16", 0.51), ("batch 64", 0.51)])
    assert not flat and str(flat).startswith("missed: more at a larger batch: 0.51 at batch 16, 0.51 at batch 64: ")
    with pytest.raises(ValueError, match="at least two measured points"):
        rises_verdict("x", [("a", 1.0)])
