"""The verdicts on one scaling run: a quiet machine by its ceiling, and the crossover prediction held or missed."""

from __future__ import annotations

import pytest

from gpulab.scaling.run_verdicts import QUIET_CEILING, crossover_verdict, quiet_verdict


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


def test_quiet_is_the_threshold_of_the_ceiling():
    assert quiet_verdict(QUIET_CEILING) and quiet_verdict(1.95, 0.4, 2)
    busy = quiet_verdict(1.57, 1.9, 2)
    assert not busy and "ceiling 1.57×, below the 1.7× of a quiet machine, load average 1.90 on 2 core(s)" in str(busy)
