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

    def spread(self, row: str) -> float:
        """How far this run's own step times of ``row`` ("fixed" or "varying") scatter: the larger of the two ways'
        interquartile ranges, as a fraction of its median. A ratio nearer 1 than this is within the run's noise."""
        ways = (self.fixed_off, self.fixed_on) if row == "fixed" else (self.varying_off, self.varying_on)
        return max(w.iqr_s / w.median_s for w in ways)

    def cpu_note(self) -> str:
        """The control's verdict: on a CPU cuDNN is never called, so the flag cannot change the work; each ratio is
        read against the scatter of its own step times, and one outside it is named as what it is (the machine, or
        the CPU library's own per-shape set-up), not as an effect of the flag."""
        said = []
        for row, ratio in (("fixed", self.fixed_speedup), ("varying", self.varying_speedup)):
            spread = self.spread(row)
            name = "fixed shape" if row == "fixed" else "new shape"
            inside = abs(ratio - 1) <= spread
            said.append(f"{name} {ratio:.2f}× is {'within' if inside else 'outside'} its steps' spread (±{spread:.0%})")
        tail = (
            "both are noise"
            if all("within" in s for s in said)
            else "a ratio outside its spread is the machine changing pace between turns, or the CPU library setting up "
            "a new shape; the flag is never read here"
        )
        return f"on a CPU cuDNN is not used, so the flag changes no work: {'; '.join(said)}: {tail}"

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
        note = self.cpu_note() if self.device == "cpu" else "ratio above 1: the flag made steps faster; below 1: slower"
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
    ``size``×``size`` input, then a size never seen before on every step, each with the flag off and on. The two
    "new shape" runs get the sizes a and a + 1 of a fresh pair each round, swapping sides every round, so both do the
    same work in all; the four ways take turns step by step. The flag is restored."""
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

    # New sizes come in pairs (a, a + 1), never seen before; off and on swap the pair's sides every round, so both
    # train on the same sizes in all and neither always gets the larger input.
    pairs = itertools.count(size + 2, 2)
    side: dict[bool, int] = {}

    def new_round(k: int) -> None:
        a = next(pairs)
        side[False], side[True] = (a, a + 1) if k % 2 == 0 else (a + 1, a)

    ways = [("fixed", flag, lambda: step(size)) for flag in (False, True)]
    ways += [("varying", flag, lambda flag=flag: step(side[flag])) for flag in (False, True)]
    times: dict[tuple[str, bool], list[float]] = {(kind, flag): [] for kind, flag, _ in ways}
    before = torch.backends.cudnn.benchmark
    try:
        for k in range(2):  # warm-up: first calls pay for lazy set-up whatever the flag
            new_round(k)
            for _kind, flag, fn in ways:
                torch.backends.cudnn.benchmark = flag
                fn()
        for k in range(steps):  # the four ways take turns, so a machine that speeds up or slows down hits them alike
            new_round(k)
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
