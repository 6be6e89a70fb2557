"""Verdicts the cells print (held / missed, with the numbers that decided) and readings that cannot be true."""

from __future__ import annotations

import pytest

from gpulab.core.verdicts import NotMeasured, rises_verdict


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
