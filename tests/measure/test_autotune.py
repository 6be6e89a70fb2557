"""cuDNN autotuning measured side by side: runs on the CPU (where the flag is a no-op control) and, marked, on CUDA."""

from __future__ import annotations

import math

import pytest
import torch

from gpulab.measure.autotune import AutotuneComparison, autotune_comparison
from gpulab.measure.timing import CUDA_TIMER, BenchmarkResult
from tests.seams import requires_gpus


def test_the_comparison_runs_on_the_cpu_and_leaves_the_flag_as_it_found_it():
    torch.backends.cudnn.benchmark = False
    result = autotune_comparison("cpu", batch=2, size=16, steps=3)
    assert torch.backends.cudnn.benchmark is False
    for r in (result.fixed_off, result.fixed_on, result.varying_off, result.varying_on):
        assert r.repeats == 3 and all(t > 0 for t in r.times_s)
    assert math.isfinite(result.fixed_speedup) and math.isfinite(result.varying_speedup)
    text = str(result)
    assert "new shape every step" in text and "flag changes no work" in text and "<table" in result._repr_html_()


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"steps": 0}, ValueError, r"steps=0: steps \(steps timed per way\) must be a whole number ≥ 1"),
        ({"batch": True}, TypeError, "batch=True is a bool"),
        ({"size": 2.5}, TypeError, "size=2.5 is a float"),
    ],
)
def test_bad_sizes_are_refused(kwargs, error, match):
    with pytest.raises(error, match=match):
        autotune_comparison("cpu", **kwargs)


@pytest.mark.gpu
@requires_gpus(1)
def test_the_comparison_runs_on_cuda():
    result = autotune_comparison("cuda", steps=5)
    assert result.device.startswith("cuda") and result.fixed_on.timer == CUDA_TIMER
    assert "flag made steps faster" in str(result)


def _way(times_ms):
    return BenchmarkResult("way", "cpu", tuple(t / 1e3 for t in times_ms), 1, 2, "perf_counter")


def test_the_cpu_verdict_reads_each_ratio_against_its_own_steps_spread():
    steady = [10.0, 10.0, 10.1, 10.2, 10.2]
    noisy = [20.0, 21.0, 22.0, 23.0, 24.0]  # its quartiles lie 9 % of its median apart
    slower = [x * 1.19 for x in noisy]  # 0.84×: beyond that spread
    within = AutotuneComparison("cpu", _way(steady), _way(steady), _way(noisy), _way([x * 1.05 for x in noisy]))
    note = within.cpu_note()
    assert "fixed shape 1.00× is within" in note and "new shape 0.95× is within" in note and "both are noise" in note
    outside = AutotuneComparison("cpu", _way(steady), _way(steady), _way(noisy), _way(slower))
    note = outside.cpu_note()
    assert "new shape 0.84× is outside its steps' spread (±" in note and "the flag is never read here" in note
    assert "both are noise" not in note and note in str(outside)
