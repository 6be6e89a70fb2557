"""What ``torch.backends.cudnn.benchmark`` (Lightning's ``Trainer(benchmark=True)``) buys, measured side by side.

With the flag on, the first convolution of each new input shape times several cuDNN algorithms and keeps the fastest
for that shape; later calls with the same shape reuse it. So it pays off when shapes repeat (fixed image size) and
costs when every batch brings a new shape (variable sizes). ``autotune_comparison(device)`` trains a small conv net
for a few steps four ways — fixed / new shape every step × flag off / on — on any device: on a CPU the flag does
nothing (cuDNN is a GPU library), which is the control. Taught in ``notebooks/06_lightning.ipynb``.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

from ..core.arguments import whole_number
from ..core.tables import Table, TableView
from ..core.units import format_seconds
from .timing import BenchmarkResult, benchmark, resolve_device

__all__ = ["AutotuneComparison", "autotune_comparison"]


@dataclass(frozen=True)
class AutotuneComparison(TableView):
    """Median seconds per training step, flag off and on, with a fixed input shape and with a new shape every step."""

    device: str
    fixed_off: BenchmarkResult
    fixed_on: BenchmarkResult
    varying_off: BenchmarkResult
    varying_on: BenchmarkResult

    @property
    def fixed_speedup(self) -> float:
        """Off ÷ on with a fixed shape: above 1 when autotuning pays."""
        return self.fixed_off.median_s / self.fixed_on.median_s

    @property
    def varying_speedup(self) -> float:
        """Off ÷ on with a new shape every step: below 1 when autotuning every new shape costs more than it saves."""
        return self.varying_off.median_s / self.varying_on.median_s

    def _repr_pretty_(self, p, cycle: bool) -> None:  # IPython's text/plain: the table, not the fields
        p.text(str(self))

    def table(self) -> Table:
        """Median step times with ``cudnn.benchmark`` off and on, for a fixed shape and for a new shape each step, and
        each speedup."""
        rows = [
            (
                "fixed shape",
                format_seconds(self.fixed_off.median_s),
                format_seconds(self.fixed_on.median_s),
                f"{self.fixed_speedup:.2f}×",
            ),
            (
                "new shape every step",
                format_seconds(self.varying_off.median_s),
                format_seconds(self.varying_on.median_s),
                f"{self.varying_speedup:.2f}×",
            ),
        ]
        note = (
            "on a CPU cuDNN is not used: the flag changes nothing, so both ratios are about 1 (noise)"
            if self.device == "cpu"
            else "ratio above 1: the flag made steps faster; below 1: slower"
        )
        return Table(
            ("input", "benchmark=False", "benchmark=True", "off ÷ on"),
            rows,
            title=f"Median time per training step of a small conv net on {self.device}",
            notes=[note],
        )


def _net(torch: Any, dev: Any) -> Any:
    torch.manual_seed(0)
    return torch.nn.Sequential(
        torch.nn.Conv2d(3, 32, 3, padding=1),
        torch.nn.ReLU(),
        torch.nn.Conv2d(32, 64, 3, padding=1),
        torch.nn.ReLU(),
        torch.nn.AdaptiveAvgPool2d(1),
        torch.nn.Flatten(),
        torch.nn.Linear(64, 10),
    ).to(dev)


def autotune_comparison(device: Any = "cpu", *, batch: int = 16, size: int = 64, steps: int = 20) -> AutotuneComparison:
    """Time one training step (forward, backward, SGD) of a small conv net, ``steps`` times per way: a fixed
    ``size``×``size`` input, then a size never seen before on every step, each with the flag off and on. Sizes of
    the two "new shape" runs interleave (even and odd), so both do the same work on average; the four ways take
    turns step by step. The flag is restored."""
    import torch

    batch = whole_number(batch, "batch", minimum=1, what="images per step", example="autotune_comparison(batch=32)")
    size = whole_number(
        size, "size", minimum=1, what="the side of the fixed input in pixels", example="autotune_comparison(size=64)"
    )
    steps = whole_number(steps, "steps", minimum=1, what="steps timed per way", example="autotune_comparison(steps=20)")
    dev = resolve_device(device)
    net = _net(torch, dev)
    opt = torch.optim.SGD(net.parameters(), lr=0.01)
    labels = torch.zeros(batch, dtype=torch.long, device=dev)

    def step(side: int) -> None:
        x = torch.randn(batch, 3, side, side, device=dev)
        opt.zero_grad(set_to_none=True)
        torch.nn.functional.cross_entropy(net(x), labels).backward()
        opt.step()

    sides = {False: itertools.count(size + 2, 2), True: itertools.count(size + 3, 2)}  # never a size seen before
    ways = [("fixed", flag, lambda: step(size)) for flag in (False, True)]
    ways += [("varying", flag, lambda fresh=sides[flag]: step(next(fresh))) for flag in (False, True)]
    times: dict[tuple[str, bool], list[float]] = {(kind, flag): [] for kind, flag, _ in ways}
    before = torch.backends.cudnn.benchmark
    try:
        for _kind, flag, fn in ways * 2:  # warm-up: first calls pay for lazy set-up whatever the flag
            torch.backends.cudnn.benchmark = flag
            fn()
        for _ in range(steps):  # the four ways take turns, so a machine that speeds up or slows down hits them alike
            for kind, flag, fn in ways:
                torch.backends.cudnn.benchmark = flag
                times[kind, flag].append(benchmark(fn, device=dev, warmup=0, repeats=1, number=1).median_s)
    finally:
        torch.backends.cudnn.benchmark = before
    timer = benchmark(lambda: None, device=dev, warmup=0, repeats=1, number=1).timer
    results = {
        key: BenchmarkResult(f"{key[0]}, benchmark={key[1]}", str(dev), tuple(t), 1, 2, timer)
        for key, t in times.items()
    }
    return AutotuneComparison(
        str(dev), results["fixed", False], results["fixed", True], results["varying", False], results["varying", True]
    )
