"""What crossing the CPU↔GPU boundary costs, measured: copy bandwidth (a probe).

``bandwidth_sweep``: host→device and device→host copies of growing size, from pageable or pinned host memory. The
device is a parameter, so the CPU path (``device='cpu'``: host-to-host copies) runs on any laptop and in the tests.
Taught in ``notebooks/01_cpu_gpu_transfer.ipynb``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..core.arguments import flag, shown, whole_numbers
from ..core.tables import Table, TableView
from ..core.units import format_bytes, format_seconds
from ..machine.host import host_info
from .timing import BenchmarkResult, benchmark, resolve_device

__all__ = ["CopyMeasurement", "BandwidthSweep", "bandwidth_sweep"]

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
        """The series this copy belongs to: direction and memory kind (``h2d pinned``)."""
        return f"{self.direction} {'pinned' if self.pinned else 'pageable'}"


@dataclass(frozen=True)
class BandwidthSweep(TableView):
    """Copy bandwidth against size; on ``cpu`` both buffers are in host memory, so every copy is host-to-host (a memcpy
    baseline, labelled so: 'h2d'/'d2h' there would name a boundary that no copy crosses)."""

    device: str
    non_blocking: bool
    measurements: tuple[CopyMeasurement, ...]

    HEADERS = ("copy", "host memory", "size", "median time", "IQR", "bandwidth")

    def copy_label(self, m: CopyMeasurement) -> str:
        """``h2d``/``d2h`` across the boundary; on the CPU ``host→host`` (and ``host→host, back`` for the return)."""
        if self.device != "cpu":
            return m.direction
        return "host→host" if m.direction == "h2d" else "host→host, back"

    def _rows(self) -> list[list[str]]:
        return [
            [
                self.copy_label(m),
                "pinned" if m.pinned else "pageable",
                format_bytes(m.nbytes),
                format_seconds(m.result.median_s),
                format_seconds(m.result.iqr_s),
                f"{m.bandwidth_gbps:.2f} GB/s",
            ]
            for m in self.measurements
        ]

    def _title(self) -> str:
        where = "host-to-host copies (device is the CPU)" if self.device == "cpu" else f"copies to/from {self.device}"
        return f"Copy bandwidth, {where}, non_blocking={self.non_blocking}"

    def table(self) -> Table:
        """Each copy's direction, memory kind, size, median time, spread and bandwidth."""
        return Table(self.HEADERS, self._rows(), title=self._title())

    def plot(self, ax: Any = None) -> Any:
        """Bandwidth (GB/s) against copy size, one line per direction and memory kind; returns the Axes."""
        if ax is None:
            import matplotlib.pyplot as plt

            _, ax = plt.subplots(figsize=(6, 3.5))
        for series in dict.fromkeys(m.series for m in self.measurements):
            ms = [m for m in self.measurements if m.series == series]
            label = f"{self.copy_label(ms[0])} {'pinned' if ms[0].pinned else 'pageable'}"
            ax.plot([m.nbytes for m in ms], [m.bandwidth_gbps for m in ms], "o-", label=label)
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


def bandwidth_sweep(
    sizes_bytes: Sequence[int],
    *,
    device: Any = "cuda",
    pinned: Sequence[bool] = (False, True),
    non_blocking: bool = False,
    warmup: int = 2,
    repeats: int = 10,
) -> BandwidthSweep:
    """Time ``dst.copy_(src)`` for each size, both directions (host→device, device→host) and each kind of host
    memory; returns a ``BandwidthSweep``.

    Buffers are allocated once per size, outside the timing, so only the copy is measured. Pinned (page-locked) host
    memory lets the GPU's copy engine read it directly; pageable memory is first staged through a pinned buffer by
    the driver. Taught in ``notebooks/01_cpu_gpu_transfer.ipynb``.
    """
    import torch

    dev = resolve_device(device)
    pinned = (pinned,) if isinstance(pinned, bool) else pinned  # pinned=True: only pinned host memory
    if not isinstance(pinned, (list, tuple)) or not pinned or not all(isinstance(x, bool) for x in pinned):
        raise ValueError(f"pinned={shown(pinned)}: use True, False or both, e.g. pinned=(False, True).")
    sizes_bytes = whole_numbers(
        sizes_bytes, "sizes_bytes", minimum=1, example="[2**10, 2**20, 2**26]", what="copy sizes in bytes"
    )
    if not sizes_bytes:
        raise ValueError("sizes_bytes=[]: give one or more positive byte counts, e.g. [2**10, 2**20, 2**26].")
    on_host = max(sizes_bytes) * (2 if dev.type == "cpu" else 1)
    free = host_info().memory_free_bytes
    if on_host > free // 2:
        raise ValueError(
            f"the largest copy ({format_bytes(max(sizes_bytes))}) needs {format_bytes(on_host)} of host "
            f"memory, and only {format_bytes(free)} is free here: use sizes up to "
            f"{format_bytes(free // 8)} or so."
        )
    flag(non_blocking, "non_blocking")
    if dev.type == "cpu" and any(pinned):
        raise ValueError(
            "pinned (page-locked) host memory only matters for copies to or from a GPU, and pinning "
            "needs a CUDA driver; on the CPU pass pinned=(False,) to measure plain host-to-host copies."
        )
    out = []
    for nbytes in sizes_bytes:
        on_device = torch.ones(nbytes, dtype=torch.uint8, device=dev)
        for pin in pinned:
            host = _host_buffer(nbytes, pin)
            for direction in DIRECTIONS:
                src, dst = (host, on_device) if direction == "h2d" else (on_device, host)
                r = benchmark(
                    lambda s=src, d=dst: d.copy_(s, non_blocking=non_blocking),
                    device=dev,
                    warmup=warmup,
                    repeats=repeats,
                    number=1,
                    label=f"{direction} {format_bytes(nbytes)}",
                )
                out.append(CopyMeasurement(direction, pin, nbytes, r))
            del host
        del on_device
    return BandwidthSweep(str(dev), non_blocking, tuple(out))
