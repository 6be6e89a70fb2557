"""Timing PyTorch work on any device, built on ``torch.utils.benchmark.Timer``: warm-up, repeats, median and spread.

A GPU runs work asynchronously: ``y = x @ x`` on CUDA returns to Python as soon as the kernel is *queued*, so
``perf_counter()`` around it times the queueing, not the work. ``torch.utils.benchmark.Timer`` handles that: on a
machine with an accelerator its clock synchronises the device before every reading. ``benchmark`` times each block of
calls with such a Timer (``Timer.timeit``) and adds only what torch's timer lacks:

- a fixed number of timed repeats kept one by one (``times_s``), so that the spread (IQR, min, max) of the repeats can
  be read, and two results can be compared round by round (the chapter alternates A/B rounds);
- the device check: a device that cannot run work here is refused with the reason and the next step;
- an injectable clock, so that tests drive it with a fake one.

``notebooks/01_cpu_gpu_transfer.ipynb`` teaches torch's own ``Timer``, ``Compare``, ``torch.cuda.Event`` and
``torch.cuda.synchronize``; gpulab's measurements that chapters call (``bandwidth_sweep``, ``autotune_comparison``,
``training_throughput``) time their work with ``benchmark``.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..core.arguments import function, is_whole_number, no_argument_function, shown, text, whole_number
from ..core.tables import html_table
from ..core.units import format_seconds
from ..machine.cuda import cuda_gpu_count, too_few_gpus

__all__ = [
    "BenchmarkResult",
    "benchmark",
    "resolve_device",
    "synchronize",
    "quartiles",
    "CUDA_TIMER",
]

DeviceLike = Any  # str | torch.device; kept loose so this module imports no torch at import time


def quartiles(values: list[float] | tuple[float, ...]) -> tuple[float, float, float]:
    """(first quartile, median, third quartile), interpolated linearly like numpy's default (``statistics``'
    "inclusive" method); one value is all three (Python 3.11's ``statistics.quantiles`` wants two)."""
    if not values:
        raise ValueError("quartiles of no values: measure at least one repeat first.")
    if len(values) == 1:
        return (float(values[0]),) * 3
    q1, median, q3 = statistics.quantiles(values, n=4, method="inclusive")
    return q1, median, q3


@dataclass(frozen=True)
class BenchmarkResult:
    """Seconds per call of one timed function: one entry per repeat, each the mean over ``number`` calls."""

    label: str
    device: str
    times_s: tuple[float, ...]
    number: int
    warmup: int
    timer: str  # CUDA_TIMER on CUDA, else the host clock's name

    @property
    def repeats(self) -> int:
        """How many timed repeats there were."""
        return len(self.times_s)

    @property
    def median_s(self) -> float:
        """The median seconds per call: the number to report, steady against a few slow repeats."""
        return statistics.median(self.times_s)

    @property
    def q1_s(self) -> float:
        """The first quartile of the seconds per call (a quarter of the repeats were faster)."""
        return quartiles(self.times_s)[0]

    @property
    def q3_s(self) -> float:
        """The third quartile of the seconds per call (a quarter of the repeats were slower)."""
        return quartiles(self.times_s)[2]

    @property
    def iqr_s(self) -> float:
        """Interquartile range: the spread of the middle half of the repeats (robust to a few slow outliers)."""
        return self.q3_s - self.q1_s

    @property
    def min_s(self) -> float:
        """The fastest repeat's seconds per call."""
        return min(self.times_s)

    def _summary(self) -> list[str]:
        return [
            self.label,
            self.device,
            format_seconds(self.median_s),
            format_seconds(self.iqr_s),
            format_seconds(self.min_s),
            f"{self.repeats} × {self.number}",
            self.timer,
        ]

    HEADERS = ("what", "device", "median", "IQR", "min", "repeats × calls", "timed with")

    def __str__(self) -> str:
        return (
            f"{self.label} on {self.device}: median {format_seconds(self.median_s)} per call "
            f"(IQR {format_seconds(self.iqr_s)}, min {format_seconds(self.min_s)}; "
            f"{self.repeats} repeats × {self.number} call(s) after {self.warmup} warm-up, timed with {self.timer})"
        )

    def _repr_html_(self) -> str:
        return html_table(self.HEADERS, [self._summary()])


def resolve_device(device: DeviceLike) -> Any:
    """``'cuda'`` / ``'cuda:1'`` / ``'cpu'`` / ``torch.device`` → a ``torch.device`` that can run work here.

    Raises with the reason and the next step when the device is not usable, instead of failing deep inside torch.
    Never creates a CUDA context.
    """
    import torch

    if not (isinstance(device, (str, torch.device)) or is_whole_number(device)):
        raise TypeError(
            f"{shown(device)} is not a device name torch understands (a {type(device).__name__}). "
            f"Use 'cpu', 'cuda' or 'cuda:<index>'."
        )
    try:
        dev = torch.device(device if isinstance(device, (str, torch.device)) else int(device))
    except (RuntimeError, TypeError, ValueError) as e:
        raise ValueError(
            f"{device!r} is not a device name torch understands ({e}). Use 'cpu', 'cuda' or 'cuda:<index>'."
        ) from None
    if dev.type == "meta":
        raise ValueError(
            "Nothing runs on the 'meta' device: it records shapes and dtypes without data, so there is "
            "no work to time or copy. Use 'cpu' or 'cuda'."
        )
    if dev.type == "cuda":
        reason = too_few_gpus(1)
        if reason is not None:
            raise RuntimeError(
                f"device {str(dev)!r} was asked for, but this process {reason}. "
                f"Run this on a GPU machine, or pass device='cpu' to run the same code on the CPU."
            )
        if dev.index is not None and dev.index >= cuda_gpu_count():
            raise RuntimeError(
                f"device {str(dev)!r} does not exist: this process sees {cuda_gpu_count()} CUDA "
                f"GPU(s), numbered cuda:0 to cuda:{cuda_gpu_count() - 1} (after CUDA_VISIBLE_DEVICES)."
            )
    elif dev.type != "cpu":
        raise ValueError(f"gpulab times and copies on 'cpu' and 'cuda' devices; {str(dev)!r} is not supported.")
    return dev


def synchronize(device: DeviceLike) -> None:
    """Wait until everything queued on ``device`` has finished (a no-op on the CPU, which runs work in order)."""
    import torch

    dev = resolve_device(device)
    if dev.type == "cuda":
        torch.cuda.synchronize(dev)


CUDA_TIMER = "torch's synchronising timer"  # torch.utils.benchmark's default: synchronise the GPU, then perf_counter


def _timer(fn: Callable[[], object], dev: Any, clock: Callable[[], float], label: str) -> tuple[Any, str]:
    """A ``torch.utils.benchmark.Timer`` that calls ``fn()``, and the name of the clock it reads.

    On CUDA it keeps torch's default clock, which synchronises the GPU before every reading, so a block's time
    includes all its queued work; elsewhere it reads ``clock`` (on a GPU machine that spares CPU work a needless
    synchronisation, and in tests it lets a fake clock stand in)."""
    from torch.utils.benchmark import Timer

    common = {"globals": {"fn": fn}, "label": label, "description": str(dev)}
    if dev.type == "cuda":
        return Timer("fn()", **common), CUDA_TIMER
    return Timer("fn()", timer=clock, **common), getattr(clock, "__name__", type(clock).__name__)


def _blocks(timer: Any) -> Callable[[Callable[[], object], int], float]:
    """Seconds for a block of ``n`` calls, as torch's ``Timer.timeit(n)`` measures it: it makes max(n // 100, 2)
    untimed calls first, then times the block with its clock."""

    def block(_fn: Callable[[], object], n: int) -> float:
        return timer.timeit(n).raw_times[0]

    return block


def _validate_counts(warmup: int, repeats: int, number: int) -> None:
    whole_number(
        repeats,
        "repeats",
        minimum=1,
        what="timed repeats, whose median is reported; 20 or more give a spread worth reading",
        example="benchmark(fn, repeats=20)",
    )
    whole_number(warmup, "warmup", what="untimed calls before timing", example="benchmark(fn, warmup=3)")
    whole_number(number, "number", minimum=1, what="calls per repeat", example="benchmark(fn, number=10)")


def benchmark(
    fn: Callable[[], object],
    *,
    device: DeviceLike = "cpu",
    warmup: int = 3,
    repeats: int = 20,
    number: int = 1,
    label: str | None = None,
    clock: Callable[[], float] = time.perf_counter,
) -> BenchmarkResult:
    """Time ``fn()`` on ``device`` and return a ``BenchmarkResult`` (median, IQR, min per call).

    ``warmup`` untimed calls first (caches, lazy initialisation, cuBLAS handles), then ``repeats`` timed blocks of
    ``number`` calls each, each block timed by ``torch.utils.benchmark.Timer.timeit(number)`` (which itself makes
    max(number // 100, 2) untimed calls before the block). On CUDA the Timer's own clock synchronises the GPU at each
    reading; elsewhere it reads ``clock`` (``time.perf_counter``; inject a fake in tests). Taught in
    ``notebooks/01_cpu_gpu_transfer.ipynb``.
    """
    if not callable(fn):
        raise TypeError(
            f"benchmark() needs a function to call, got {type(fn).__name__}: wrap the work in a lambda, "
            f"e.g. benchmark(lambda: x @ x, device='cpu')."
        )
    no_argument_function(fn, "fn", example="lambda: x @ x")
    _validate_counts(warmup, repeats, number)
    function(clock, "clock", example="time.perf_counter")
    if label is not None:
        text(label, "label", example="'matmul 1024'")
    dev = resolve_device(device)
    name = label if label is not None else getattr(fn, "__name__", "fn")
    timer, clock_name = _timer(fn, dev, clock, name)
    block = _blocks(timer)
    for _ in range(warmup):
        fn()
    synchronize(dev)
    times = tuple(block(fn, number) / number for _ in range(repeats))
    return BenchmarkResult(label=name, device=str(dev), times_s=times, number=number, warmup=warmup, timer=clock_name)
