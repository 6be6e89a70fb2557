"""When is a GPU faster than the CPU? One operation timed at growing sizes on several devices (a probe).

A GPU call costs a fixed launch overhead of microseconds however little it computes, so below some size the CPU wins;
``crossover_sweep`` measures where that size is, with the inputs already on the device or paying the copies both ways.
The device is a parameter, so the CPU curve is measured on any laptop and in the tests.

Taught in ``notebooks/01_cpu_gpu_transfer.ipynb``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..core.arguments import flag, shown, whole_numbers
from ..core.tables import Table, TableView
from ..core.units import format_bytes, format_seconds
from ..machine.host import host_info
from .timing import BenchmarkResult, benchmark, resolve_device

__all__ = ["Op", "OPS", "SizePoint", "CrossoverSweep", "crossover_sweep"]


@dataclass(frozen=True)
class Op:
    """An operation with a size knob: ``make(size, device)`` builds its inputs, ``run(*inputs)`` does the work."""

    name: str
    size_meaning: str
    make: Callable[[int, Any], tuple[Any, ...]]
    run: Callable[..., Any]


def _square(n: int, device: Any) -> tuple[Any, ...]:
    import torch

    return torch.randn(n, n, device=device), torch.randn(n, n, device=device)


def _vector(n: int, device: Any) -> tuple[Any, ...]:
    import torch

    return torch.randn(n, device=device), torch.randn(n, device=device)


OPS: dict[str, Op] = {
    "matmul": Op("matmul", "n for n×n @ n×n, float32", _square, lambda a, b: a @ b),
    "add": Op("add", "elements in a + b, float32", _vector, lambda a, b: a + b),
}


@dataclass(frozen=True)
class SizePoint:
    """One op timed on one device at one size."""

    device: str
    size: int
    result: BenchmarkResult


@dataclass(frozen=True)
class CrossoverSweep(TableView):
    """Median time of one op against its size on each device; where does the GPU start to win?"""

    op: str
    size_meaning: str
    include_transfer: bool
    points: tuple[SizePoint, ...]

    @property
    def devices(self) -> tuple[str, ...]:
        """The devices measured, in the order they were first timed."""
        return tuple(dict.fromkeys(p.device for p in self.points))

    @property
    def sizes(self) -> tuple[int, ...]:
        """The measured sizes, smallest first (whatever order they were given in)."""
        return tuple(sorted(set(p.size for p in self.points)))

    def median_s(self, device: str, size: int) -> float:
        """The median seconds of the op on ``device`` at ``size`` (``KeyError`` if that pair was not measured)."""
        for p in self.points:
            if p.device == device and p.size == size:
                return p.result.median_s
        raise KeyError(f"{device} at size {size} was not measured; measured devices: {', '.join(self.devices)}.")

    def crossover_size(self, device: str, baseline: str = "cpu") -> int | None:
        """Smallest measured size from which ``device`` is faster than ``baseline`` at every larger size, or None."""
        if device not in self.devices or baseline not in self.devices:
            return None
        found = None
        for size in reversed(self.sizes):
            if self.median_s(device, size) < self.median_s(baseline, size):
                found = size
            else:
                break
        return found

    def verdict(self) -> str:
        """One sentence: from which size each GPU beats the CPU, or why no crossover can be read from this sweep."""
        others = [d for d in self.devices if d != "cpu"]
        if "cpu" not in self.devices:
            return (
                f"Only {', '.join(self.devices)} measured, no cpu baseline: add 'cpu' to devices= to see where "
                f"a GPU starts to beat it."
            )
        if not others:
            return (
                f"Only {', '.join(self.devices)} measured: no crossover can be read from one device. On a GPU "
                f"machine the sweep adds the GPU curve."
            )
        lines = []
        for d in others:
            size = self.crossover_size(d)
            lines.append(
                f"{d} is faster than cpu from size {size:,} on"
                if size is not None
                else f"{d} was never faster than cpu at every size from some point on"
            )
        return "; ".join(lines) + (" (including the copies both ways)." if self.include_transfer else ".")

    def _rows(self) -> list[list[str]]:
        devs = self.devices
        rows = []
        for size in self.sizes:
            row = [f"{size:,}"] + [format_seconds(self.median_s(d, size)) for d in devs]
            if "cpu" in devs and len(devs) > 1:
                row += [f"{self.median_s('cpu', size) / self.median_s(d, size):.2f}×" for d in devs if d != "cpu"]
            rows.append(row)
        return rows

    def _headers(self) -> list[str]:
        devs = self.devices
        extra = [f"cpu ÷ {d}" for d in devs if d != "cpu"] if "cpu" in devs and len(devs) > 1 else []
        return ["size"] + [f"{d} median" for d in devs] + extra

    def _title(self) -> str:
        copies = ", copies in and out included" if self.include_transfer else ", inputs already on the device"
        return f"{self.op} ({self.size_meaning}){copies}"

    def table(self) -> Table:
        """The medians per size and device, with the verdict under them."""
        return Table(self._headers(), self._rows(), title=self._title(), notes=[self.verdict()])

    def plot(self, ax: Any = None) -> Any:
        """Median time against size per device (log-log), IQR as error bars; returns the Axes."""
        if ax is None:
            import matplotlib.pyplot as plt

            _, ax = plt.subplots(figsize=(6, 3.5))
        for d in self.devices:
            ps = sorted((p for p in self.points if p.device == d), key=lambda p: p.size)
            med = [p.result.median_s for p in ps]
            err = [[m - p.result.q1_s for m, p in zip(med, ps)], [p.result.q3_s - m for m, p in zip(med, ps)]]
            ax.errorbar([p.size for p in ps], med, yerr=err, fmt="o-", capsize=2, label=d)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel(f"size ({self.size_meaning})")
        ax.set_ylabel("seconds per call (median)")
        ax.set_title(self._title(), fontsize="small")
        ax.legend(fontsize="small")
        return ax


def crossover_sweep(
    sizes: Sequence[int],
    *,
    devices: Sequence[Any] = ("cpu",),
    op: str = "matmul",
    include_transfer: bool = False,
    warmup: int = 2,
    repeats: int = 7,
    min_block_s: float = 1e-3,
) -> CrossoverSweep:
    """Time ``op`` at each size on each device; returns a ``CrossoverSweep`` with its table, verdict and plot.

    With ``include_transfer=True`` the inputs start on the CPU and the result comes back to it, as when data lives in
    host memory: the device pays two copies per call (nothing extra on ``cpu``). Taught in
    ``notebooks/01_cpu_gpu_transfer.ipynb``.
    """
    if not isinstance(op, str) or op not in OPS:
        raise ValueError(f"op={shown(op)} is not one of {', '.join(OPS)}.")
    sizes = whole_numbers(sizes, "sizes", minimum=1, example="[16, 64, 256, 1024]", what="sizes")
    if not sizes:
        raise ValueError("sizes=[]: give one or more positive sizes, e.g. [16, 64, 256, 1024].")
    devices = (devices,) if isinstance(devices, str) or not isinstance(devices, (list, tuple)) else devices
    if not devices:
        raise ValueError("devices=(): name at least one device, e.g. devices=('cpu', 'cuda').")
    spec = OPS[op]
    need = 3 * 4 * (max(sizes) ** 2 if op == "matmul" else max(sizes))  # two float32 inputs and the result
    free = host_info().memory_free_bytes
    if need > free // 2:
        raise ValueError(
            f"{op} at size {max(sizes):,} needs {format_bytes(need)} for its inputs and result, and "
            f"only {format_bytes(free)} is free here: use smaller sizes."
        )
    flag(include_transfer, "include_transfer")
    resolved = [resolve_device(d) for d in devices]  # every device is validated before anything is timed
    points = []
    for dev in resolved:
        for size in sorted(set(sizes)):  # smallest first: the table, the plot's lines, the verdict
            if include_transfer:
                host_inputs = spec.make(size, "cpu")

                def fn(h: tuple[Any, ...] = host_inputs, d: Any = dev) -> Any:
                    return spec.run(*(t.to(d) for t in h)).to("cpu")
            else:
                inputs = spec.make(size, dev)

                def fn(i: tuple[Any, ...] = inputs) -> Any:
                    return spec.run(*i)

            r = benchmark(fn, device=dev, warmup=warmup, repeats=repeats, min_block_s=min_block_s, label=f"{op} {size}")
            points.append(SizePoint(str(dev), size, r))
    return CrossoverSweep(op, spec.size_meaning, include_transfer, tuple(points))
