"""What a monitored run comes to: peak memory per device, mean speed, marks, and what could not be read (pure).

``MonitorSummary`` is left in the cell output when a ``with gpulab.monitor():`` block ends, as text and as HTML.
Peaks are of the sampled readings (every ``interval_s``): a spike shorter than that can be missed; for the exact peak
of torch's allocator use ``torch.cuda.max_memory_allocated()``. Taught in ``notebooks/05_live_monitor.ipynb``.
"""

from __future__ import annotations

import html
import math
from dataclasses import dataclass

from ..core.readings import Unavailable
from ..core.tables import html_table, html_with_code, text_table
from ..core.units import format_bytes, format_percent, format_rate, format_seconds

__all__ = ["MonitorSummary", "PeakMemory"]


def _value(x: float | Unavailable, fmt) -> str:
    if isinstance(x, Unavailable):
        return str(x)
    return "N/A (never readable)" if math.isnan(x) else fmt(x)


@dataclass(frozen=True)
class PeakMemory:
    """The largest memory reading of one device during the run."""

    device: str  # "host", "this process", "GPU 0" (physical index), "cuda:0"
    what: str  # where the number comes from
    peak_bytes: float  # NaN: never readable
    limit_bytes: float  # NaN: no limit known

    def row(self) -> tuple[str, str, str, str]:
        """The device, where the number comes from, the peak, and the limit with the peak's share of it."""
        share = (
            format_percent(self.peak_bytes / self.limit_bytes, is_fraction=True)
            if self.limit_bytes and not math.isnan(self.limit_bytes) and not math.isnan(self.peak_bytes)
            else ""
        )
        limit = "" if math.isnan(self.limit_bytes) else format_bytes(self.limit_bytes)
        of = f"{limit} ({share})" if share else limit
        return self.device, self.what, _value(self.peak_bytes, format_bytes), of


@dataclass(frozen=True)
class MonitorSummary:
    """One monitored run. ``mean_samples_per_s`` = samples reported ÷ summed step time (gaps between loops excluded)."""

    title: str
    duration_s: float
    readings: int  # rows the sampler took
    interval_s: float
    missed_deadlines: int  # sampler wake-ups skipped because it ran late
    reading_cost_s: float  # mean time the sampler spent on one reading
    samples_total: int
    steps_total: int
    mean_samples_per_s: float | Unavailable
    mean_step_time_s: float | Unavailable
    mean_cpu_percent: float  # the whole machine, share of the usable cores
    mean_process_cpu_percent: float  # this process, same scale
    mean_gpu_utilization_percent: tuple[tuple[int, float], ...]  # (physical index, mean %)
    peaks: tuple[PeakMemory, ...]
    marks: tuple[tuple[float, str], ...]
    missing: tuple[str, ...]
    ended_by: str  # "completed", or the exception that ended the block
    simulated_gpus: bool = False

    def _speed_rows(self) -> list[tuple[str, str]]:
        rows = [
            ("duration", format_seconds(self.duration_s)),
            (
                "readings",
                f"{self.readings} every {format_seconds(self.interval_s)}"
                + (f" ({self.missed_deadlines} deadlines missed)" if self.missed_deadlines else ""),
            ),
            (
                "cost of watching",
                f"{format_seconds(self.reading_cost_s)} per reading "
                f"(≈ {self.reading_cost_s / self.interval_s * 100:.2f} % of one core)",
            ),
            ("work reported", f"{self.samples_total} samples in {self.steps_total} steps"),
            ("mean speed", _value(self.mean_samples_per_s, format_rate)),
            ("mean step time", _value(self.mean_step_time_s, format_seconds)),
            (
                "mean CPU use",
                f"{_value(self.mean_cpu_percent, format_percent)} whole machine, "
                f"{_value(self.mean_process_cpu_percent, format_percent)} this process",
            ),
        ]
        rows += [(f"mean GPU {k} utilisation", _value(p, format_percent)) for k, p in self.mean_gpu_utilization_percent]
        rows.append(("ended by", self.ended_by))
        return rows

    def _marks_text(self, most: int = 8) -> str:
        shown = ", ".join(f"{label} @ {format_seconds(t)}" for t, label in self.marks[:most])
        more = len(self.marks) - most
        return shown + (f" … and {more} more (all in mon.marks)" if more > 0 else "")

    def _heading(self) -> str:
        sim = " [SIMULATED GPUs]" if self.simulated_gpus else ""
        return f"Monitor summary{': ' + self.title if self.title else ''}{sim}"

    def __str__(self) -> str:
        lines = [self._heading(), text_table(("", ""), self._speed_rows(), indent="  ").split("\n", 2)[2], ""]
        lines.append(text_table(("device", "reading", "peak", "of"), [p.row() for p in self.peaks], indent="  "))
        if self.marks:
            lines.append("  marks: " + self._marks_text())
        for note in self.missing:
            lines.append(f"  not shown: {note}")
        return "\n".join(lines)

    def _repr_pretty_(self, p, cycle: bool) -> None:  # IPython's text/plain: the table, not the dataclass fields
        p.text(str(self))

    def _repr_html_(self) -> str:
        parts = [
            html_table(("", ""), self._speed_rows(), caption=self._heading()),
            html_table(
                ("device", "reading", "peak", "of"), [p.row() for p in self.peaks], caption="Peak memory (sampled)"
            ),
        ]
        if self.marks:
            parts.append(f"<p>marks: {html.escape(self._marks_text())}</p>")
        if self.missing:
            parts.append("<ul>" + "".join(f"<li>not shown: {html_with_code(n)}</li>" for n in self.missing) + "</ul>")
        return "".join(parts)
