"""gpulab.measure.timing: statistics with a fake clock, errors, rendering, agreement with torch.utils.benchmark, CUDA
path."""

from __future__ import annotations

import statistics

import pytest
import torch

from gpulab.machine.cuda import cuda_gpu_count
from gpulab.measure.timing import (
    CUDA_TIMER,
    BenchmarkResult,
    benchmark,
    quartiles,
    resolve_device,
)
from tests.seams import FakeClock, requires_gpus


def work_that_takes(clock: FakeClock, durations: list[float], *, then: float | None = None):
    """A function that advances the fake clock by the next duration on each call (cycling through ``durations``, or
    taking ``then`` once they are used up), and counts its calls."""
    calls = []

    def fn() -> None:
        k = len(calls)
        clock.advance(durations[k % len(durations)] if then is None or k < len(durations) else then)
        calls.append(1)

    return fn, calls


UNTIMED = 2  # torch's Timer.timeit(n) makes max(n // 100, 2) untimed calls before each timed block


def test_median_iqr_min_come_from_the_clock() -> None:
    clock = FakeClock()
    durations = [0.010, 0.012, 0.011, 0.050, 0.009]  # one slow outlier
    fn, calls = work_that_takes(clock, durations)
    r = benchmark(fn, warmup=0, repeats=5, number=1, clock=clock, label="fake")
    timed = [durations[(k * (UNTIMED + 1) + UNTIMED) % len(durations)] for k in range(5)]  # the call after each 2
    assert r.times_s == pytest.approx(tuple(timed)) and sorted(timed) == sorted(durations)
    assert r.median_s == pytest.approx(0.011)
    assert r.min_s == pytest.approx(0.009) and max(r.times_s) == pytest.approx(0.050)
    assert r.q1_s == pytest.approx(0.010) and r.q3_s == pytest.approx(0.012)
    assert r.iqr_s == pytest.approx(0.002)  # the outlier moves neither the median nor the IQR
    assert len(calls) == 5 * (UNTIMED + 1) and r.timer == "FakeClock" and r.device == "cpu"


def test_warmup_calls_are_not_timed_and_number_divides_blocks() -> None:
    clock = FakeClock()
    fn, calls = work_that_takes(clock, [1.0, 1.0, 1.0], then=0.002)  # three slow first calls
    r = benchmark(fn, warmup=3, repeats=4, number=1, clock=clock)
    assert len(calls) == 3 + 4 * (UNTIMED + 1)
    assert r.times_s == pytest.approx((0.002,) * 4)  # the slow first calls were the untimed warm-up

    clock2 = FakeClock()
    fn2, calls2 = work_that_takes(clock2, [0.001])
    r2 = benchmark(fn2, warmup=0, repeats=3, number=10, clock=clock2)
    assert len(calls2) == 3 * (UNTIMED + 10) and r2.number == 10
    assert r2.times_s == pytest.approx((0.001,) * 3)  # seconds per call, not per block


def test_quartiles_interpolate_like_numpy_and_reject_empty() -> None:
    data = [5.0, 1.0, 4.0, 2.0, 3.0, 8.0]
    assert quartiles(data) == pytest.approx((2.25, statistics.median(data), 4.75))  # numpy.percentile's defaults
    assert quartiles([7.0]) == (7.0, 7.0, 7.0)
    with pytest.raises(ValueError, match="at least one repeat"):
        quartiles([])


def test_result_renders_as_text_and_html() -> None:
    r = BenchmarkResult("x @ x", "cpu", (0.002, 0.0021, 0.0019), 1, 3, "perf_counter")
    text = str(r)
    assert "x @ x on cpu: median 2.00 ms" in text and "3 repeats × 1 call(s)" in text and "perf_counter" in text
    page = r._repr_html_()
    assert page.startswith("<table") and "x @ x" in page and "2.00 ms" in page


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"repeats": 0}, r"repeats=0: repeats \(timed repeats, whose median is reported"),
        ({"warmup": -1}, r"warmup=-1: warmup \(untimed calls before timing\) must be a whole number ≥ 0"),
        ({"number": 0}, r"number=0: number \(calls per repeat\) must be a whole number ≥ 1"),
    ],
)
def test_bad_counts_are_refused(kwargs: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        benchmark(lambda: None, **kwargs)


def test_not_callable_is_refused() -> None:
    with pytest.raises(TypeError, match="wrap the work in a lambda"):
        benchmark(torch.ones(2))  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("device", "error", "match"),
    [
        ("meta", ValueError, "Nothing runs on the 'meta' device"),
        ("gpu", ValueError, "not a device name torch understands"),
        ("xpu", ValueError, "'xpu' is not supported"),
    ],
)
def test_unusable_devices_are_refused(device: str, error: type, match: str) -> None:
    with pytest.raises(error, match=match):
        benchmark(lambda: None, device=device)


def test_a_cuda_device_beyond_the_visible_ones_is_refused() -> None:
    missing = f"cuda:{cuda_gpu_count()}"  # one past the last visible GPU, on every machine
    with pytest.raises(RuntimeError, match="device='cpu'|does not exist"):
        resolve_device(missing)


@pytest.mark.parametrize("number", [1, 10])
def test_per_call_times_are_accounted_like_torch_utils_benchmark(number) -> None:
    """Both harnesses read the same fake clock, so any difference is in how they turn clock readings into a time per
    call (blocks of several calls, warm-up). Whether the two agree in real time, on a real matmul, is a
    measurement, not a test: benchmarks/bench_timer.py prints them side by side (on a busy machine a timed assertion
    here failed while the code was right)."""
    from torch.utils import benchmark as tub

    clock = FakeClock()
    fn, calls = work_that_takes(clock, [0.002])
    theirs_timer = tub.Timer("fn()", globals={"fn": fn}, timer=clock)
    theirs = theirs_timer.timeit(number=number).median
    ours = benchmark(fn, warmup=1, repeats=5, number=number, clock=clock)
    assert ours.median_s == pytest.approx(theirs) == pytest.approx(0.002)
    assert ours.min_s == max(ours.times_s) == pytest.approx(0.002) and calls


@pytest.mark.gpu
@requires_gpus(1)
def test_cuda_path_waits_for_the_work() -> None:
    """When benchmark() returns, every timed kernel has finished: the stream has nothing left queued."""
    x = torch.randn(4096, 4096, device="cuda")
    r = benchmark(lambda: x @ x, device="cuda", warmup=2, repeats=5, number=1)
    assert torch.cuda.current_stream().query()  # True only when all queued work is complete
    assert r.timer == CUDA_TIMER and r.device.startswith("cuda") and r.repeats == 5
    # 64× the work takes far longer: a timer that saw only the launches would give about the same time for both
    y = torch.randn(1024, 1024, device="cuda")
    small = benchmark(lambda: y @ y, device="cuda", warmup=2, repeats=5, number=1)
    assert r.median_s > 8 * small.median_s, (r.median_s, small.median_s)


@pytest.mark.gpu
@requires_gpus(1)
def test_cuda_result_agrees_with_torch_utils_benchmark() -> None:
    from torch.utils import benchmark as tub

    x = torch.randn(4096, 4096, device="cuda")
    ours = benchmark(lambda: x @ x, device="cuda", warmup=3, repeats=20, number=1)
    ref = tub.Timer("x @ x", globals={"x": x}).blocked_autorange(min_run_time=0.5).median
    assert 0.8 <= ours.median_s / ref <= 1.25
