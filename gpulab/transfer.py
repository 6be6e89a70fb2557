"""What crossing the CPU↔GPU boundary costs, measured: copy bandwidth, and when a GPU beats the CPU (a probe).

- ``bandwidth_sweep``: host→device and device→host copies of growing size, from pageable or pinned host memory.
- ``crossover_sweep``: one operation at growing sizes on several devices, optionally paying the copies both ways.
- ``nonblocking_hazard``: reading a GPU→CPU ``non_blocking`` copy before synchronising (CUDA only).

The device is a parameter everywhere, so the CPU path (``device='cpu'``: host-to-host copies, CPU-only curves) runs
on any laptop and in the tests. Taught in ``notebooks/01_cpu_gpu_transfer.ipynb``.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from .tables import html_table, text_table
from .timing import BenchmarkResult, benchmark, resolve_device
from .units import format_bytes, format_seconds

__all__ = ["CopyMeasurement", "BandwidthSweep", "bandwidth_sweep", "SizePoint", "CrossoverSweep", "crossover_sweep",
           "OPS", "HazardResult", "nonblocking_hazard"]

DIRECTIONS = ("h2d", "d2h")


def _gbps(nbytes: int, seconds: float) -> float:
    return nbytes / seconds / 1e9


@dataclass(frozen=True)
class CopyMeasurement:
    """One copy size in one direction from one kind of host memory, with its timing."""

    direction: str  # "h2d" host→device, "d2h" device→host
    pinned: bool
    nbytes: int
    result: BenchmarkResult

    @property
    def bandwidth_gbps(self) -> float:
        """Gigabytes (10⁹ bytes) per second at the median time, the unit GPU data sheets use."""
        return _gbps(self.nbytes, self.result.median_s)

    @property
    def series(self) -> str:
        return f"{self.direction} {'pinned' if self.pinned else 'pageable'}"


@dataclass(frozen=True)
class BandwidthSweep:
    """Copy bandwidth against size; on ``cpu`` both 'directions' are host-to-host copies (a memcpy baseline)."""

    device: str
    non_blocking: bool
    measurements: tuple[CopyMeasurement, ...]

    HEADERS = ("copy", "host memory", "size", "median time", "IQR", "bandwidth")

    def _rows(self) -> list[list[str]]:
        return [[m.direction, "pinned" if m.pinned else "pageable", format_bytes(m.nbytes),
                 format_seconds(m.result.median_s), format_seconds(m.result.iqr_s), f"{m.bandwidth_gbps:.2f} GB/s"]
                for m in self.measurements]

    def _title(self) -> str:
        where = "host-to-host copies (device is the CPU)" if self.device == "cpu" else f"copies to/from {self.device}"
        return f"Copy bandwidth, {where}, non_blocking={self.non_blocking}"

    def peak_gbps(self, direction: str, pinned: bool) -> float:
        """Best median bandwidth over the sizes for one series (the big copies usually)."""
        found = [m.bandwidth_gbps for m in self.measurements if m.direction == direction and m.pinned == pinned]
        if not found:
            raise KeyError(f"no {direction} {'pinned' if pinned else 'pageable'} copies were measured in this sweep.")
        return max(found)

    def __str__(self) -> str:
        return self._title() + "\n" + text_table(self.HEADERS, self._rows(), indent="  ")

    def _repr_html_(self) -> str:
        return html_table(self.HEADERS, self._rows(), caption=self._title())

    def plot(self, ax: Any = None) -> Any:
        """Bandwidth (GB/s) against copy size, one line per direction and memory kind; returns the Axes."""
        if ax is None:
            import matplotlib.pyplot as plt

            _, ax = plt.subplots(figsize=(6, 3.5))
        for series in dict.fromkeys(m.series for m in self.measurements):
            ms = [m for m in self.measurements if m.series == series]
            ax.plot([m.nbytes for m in ms], [m.bandwidth_gbps for m in ms], "o-", label=series)
        ax.set_xscale("log", base=2)
        ax.set_xlabel("bytes copied")
        ax.set_ylabel("GB/s (median)")
        ax.set_title(self._title(), fontsize="small")
        ax.legend(fontsize="small")
        return ax


def _host_buffer(nbytes: int, pinned: bool) -> Any:
    import torch

    t = torch.ones(nbytes, dtype=torch.uint8)
    return t.pin_memory() if pinned else t


def bandwidth_sweep(sizes_bytes: Sequence[int], *, device: Any = "cuda", pinned: Sequence[bool] = (False, True),
                    directions: Sequence[str] = DIRECTIONS, non_blocking: bool = False, warmup: int = 2,
                    repeats: int = 10) -> BandwidthSweep:
    """Time ``dst.copy_(src)`` for each size, direction and kind of host memory; returns a ``BandwidthSweep``.

    Buffers are allocated once per size, outside the timing, so only the copy is measured. Pinned (page-locked) host
    memory lets the GPU's copy engine read it directly; pageable memory is first staged through a pinned buffer by
    the driver. Taught in ``notebooks/01_cpu_gpu_transfer.ipynb``.
    """
    import torch

    dev = resolve_device(device)
    bad = [d for d in directions if d not in DIRECTIONS]
    if bad or not directions:
        raise ValueError(f"directions={tuple(directions)!r}: use 'h2d' (host→device) and/or 'd2h' (device→host).")
    if not sizes_bytes or any(int(s) < 1 for s in sizes_bytes):
        raise ValueError(f"sizes_bytes={tuple(sizes_bytes)!r}: give one or more positive byte counts, e.g. "
                         f"[2**10, 2**20, 2**26].")
    if dev.type == "cpu" and any(pinned):
        raise ValueError("pinned (page-locked) host memory only matters for copies to or from a GPU, and pinning "
                         "needs a CUDA driver; on the CPU pass pinned=(False,) to measure plain host-to-host copies.")
    out = []
    for nbytes in (int(s) for s in sizes_bytes):
        on_device = torch.ones(nbytes, dtype=torch.uint8, device=dev)
        for pin in pinned:
            host = _host_buffer(nbytes, pin)
            for direction in directions:
                src, dst = (host, on_device) if direction == "h2d" else (on_device, host)
                r = benchmark(lambda s=src, d=dst: d.copy_(s, non_blocking=non_blocking), device=dev, warmup=warmup,
                              repeats=repeats, number=1, label=f"{direction} {format_bytes(nbytes)}")
                out.append(CopyMeasurement(direction, pin, nbytes, r))
            del host
        del on_device
    return BandwidthSweep(str(dev), non_blocking, tuple(out))


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
    device: str
    size: int
    result: BenchmarkResult


@dataclass(frozen=True)
class CrossoverSweep:
    """Median time of one op against its size on each device; where does the GPU start to win?"""

    op: str
    size_meaning: str
    include_transfer: bool
    points: tuple[SizePoint, ...]

    @property
    def devices(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(p.device for p in self.points))

    @property
    def sizes(self) -> tuple[int, ...]:
        return tuple(dict.fromkeys(p.size for p in self.points))

    def median_s(self, device: str, size: int) -> float:
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
        others = [d for d in self.devices if d != "cpu"]
        if "cpu" not in self.devices or not others:
            return (f"Only {', '.join(self.devices)} measured: no crossover can be read from one device. On a GPU "
                    f"machine the sweep adds the GPU curve.")
        lines = []
        for d in others:
            size = self.crossover_size(d)
            lines.append(f"{d} is faster than cpu from size {size:,} on" if size is not None
                         else f"{d} was never faster than cpu at every size from some point on")
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

    def __str__(self) -> str:
        return "\n".join([self._title(), text_table(self._headers(), self._rows(), indent="  "), self.verdict()])

    def _repr_html_(self) -> str:
        import html

        return html_table(self._headers(), self._rows(), caption=self._title()) + f"<p>{html.escape(self.verdict())}</p>"

    def plot(self, ax: Any = None) -> Any:
        """Median time against size per device (log-log), IQR as error bars; returns the Axes."""
        if ax is None:
            import matplotlib.pyplot as plt

            _, ax = plt.subplots(figsize=(6, 3.5))
        for d in self.devices:
            ps = [p for p in self.points if p.device == d]
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


def crossover_sweep(sizes: Sequence[int], *, devices: Sequence[Any] = ("cpu",), op: str = "matmul",
                    include_transfer: bool = False, warmup: int = 2, repeats: int = 7,
                    min_block_s: float = 1e-3) -> CrossoverSweep:
    """Time ``op`` at each size on each device; returns a ``CrossoverSweep`` with its table, verdict and plot.

    With ``include_transfer=True`` the inputs start on the CPU and the result comes back to it, as when data lives in
    host memory: the device pays two copies per call (nothing extra on ``cpu``). Taught in
    ``notebooks/01_cpu_gpu_transfer.ipynb``.
    """
    if op not in OPS:
        raise ValueError(f"op={op!r} is not one of {', '.join(OPS)}.")
    if not sizes or any(int(s) < 1 for s in sizes):
        raise ValueError(f"sizes={tuple(sizes)!r}: give one or more positive sizes, e.g. [16, 64, 256, 1024].")
    if not devices:
        raise ValueError("devices=(): name at least one device, e.g. devices=('cpu', 'cuda').")
    spec = OPS[op]
    points = []
    for device in devices:
        dev = resolve_device(device)
        for size in (int(s) for s in sizes):
            if include_transfer:
                host_inputs = spec.make(size, "cpu")

                def fn(h: tuple[Any, ...] = host_inputs, d: Any = dev) -> Any:
                    return spec.run(*(t.to(d) for t in h)).to("cpu")
            else:
                inputs = spec.make(size, dev)

                def fn(i: tuple[Any, ...] = inputs) -> Any:
                    return spec.run(*i)
            r = benchmark(fn, device=dev, warmup=warmup, repeats=repeats, min_block_s=min_block_s,
                          label=f"{op} {size}")
            points.append(SizePoint(str(dev), size, r))
    return CrossoverSweep(op, spec.size_meaning, include_transfer, tuple(points))


@dataclass(frozen=True)
class HazardResult:
    """How many values of a GPU→CPU ``non_blocking`` copy were wrong when read before and after synchronising."""

    device: str
    numel: int
    wrong_before_sync: int
    wrong_after_sync: int

    def __str__(self) -> str:
        return (f"GPU→CPU copy of {self.numel:,} floats with non_blocking=True from {self.device}: "
                f"{self.wrong_before_sync:,} wrong when read at once, {self.wrong_after_sync:,} wrong after "
                f"torch.cuda.synchronize().")

    def _repr_html_(self) -> str:
        return html_table(("read", "wrong values", "of"), [["at once", f"{self.wrong_before_sync:,}", f"{self.numel:,}"],
                                                            ["after synchronize", f"{self.wrong_after_sync:,}",
                                                             f"{self.numel:,}"]], caption=f"non_blocking D2H from {self.device}")


def nonblocking_hazard(device: Any = "cuda", numel: int = 1 << 22, busy_matmuls: int = 8) -> HazardResult:
    """Queue GPU work, copy a known tensor to pinned CPU memory with ``non_blocking=True``, and read it at once.

    The copy waits in the stream behind the ``busy_matmuls`` multiplications, and ``non_blocking`` lets the host go
    on, so the first read sees the buffer's old contents (-1). After ``synchronize`` every value is right. CUDA only:
    on the CPU every copy is synchronous and there is nothing to show. Taught in ``notebooks/01_cpu_gpu_transfer.ipynb``.
    """
    import torch

    dev = resolve_device(device)
    if dev.type != "cuda":
        raise ValueError("the non_blocking read hazard needs a CUDA device: on the CPU a copy has finished when "
                         "copy_() returns, so there is nothing to read too early. Run this on a GPU machine.")
    expected = torch.arange(numel, dtype=torch.float32)
    src = expected.to(dev)
    dst = torch.full((numel,), -1.0).pin_memory()
    busy = torch.randn(4096, 4096, device=dev)
    torch.cuda.synchronize(dev)
    for _ in range(busy_matmuls):
        busy @ busy  # queued work the copy must wait behind; the results are thrown away
    dst.copy_(src, non_blocking=True)
    before = int((dst != expected).sum())  # a host read: nothing here waits for the GPU
    torch.cuda.synchronize(dev)
    after = int((dst != expected).sum())
    return HazardResult(str(dev), numel, before, after)
