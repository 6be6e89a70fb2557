"""What a monitor hands back: its summary (peaks, mean speed, marks), one record per reading, and a CSV of them.

Kept apart from ``live_monitor.py`` (starting, sampling and stopping) because it only reads what was sampled: the ring
buffer of readings, the sampler's bookkeeping and the steps the loop reported.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Sequence
from os import PathLike
from typing import Any

import numpy as np

from ..core.readings import Unavailable
from .ring_buffer import History
from .sampler import Sampler
from .summary import MonitorSummary, PeakMemory

__all__ = ["summarise", "records", "write_csv"]


def summarise(
    title: str,
    h: History,
    s: Sampler,
    progress: tuple[int, int, float],
    end: float,
    marks: Sequence[tuple[float, str]],
    ended_by: str | None,
) -> MonitorSummary:
    """The run's summary: ``progress`` is (samples, steps, seconds in steps) as the loop reported them, ``end`` the
    clock reading at which the run ended (or now, while it runs)."""
    samples, steps, step_time = progress
    never = Unavailable("no step was reported: use mon.step(samples=...) or mon.wrap(loader)")
    peaks = [
        PeakMemory(
            "host", "RAM used (cgroup-aware)", h.peak("host_memory_used_bytes"), h.last("host_memory_limit_bytes")
        ),
        PeakMemory("this process", "resident memory (RSS)", h.peak("process_rss_bytes"), math.nan),
    ]
    peaks += [
        PeakMemory(
            f"GPU {k}",
            "used, all processes (NVML)",
            h.peak(f"gpu{k}_memory_used_bytes"),
            h.peak(f"gpu{k}_memory_total_bytes"),
        )
        for k in s.gpus
    ]
    for j in range(s.cuda_devices):
        peaks += [
            PeakMemory(f"cuda:{j}", f"{what} by this process (torch)", h.peak(f"cuda{j}_{what}_bytes"), math.nan)
            for what in ("allocated", "reserved")
        ]
    return MonitorSummary(
        title=title,
        duration_s=end - s.t0,
        readings=h.appended,
        interval_s=s.interval_s,
        missed_deadlines=s.missed_deadlines,
        reading_cost_s=s.busy_s / max(h.appended, 1),
        samples_total=samples,
        steps_total=steps,
        mean_samples_per_s=samples / step_time if steps and step_time > 0 else never,
        mean_step_time_s=step_time / steps if steps else never,
        mean_cpu_percent=h.nanmean("host_cpu_percent"),
        mean_process_cpu_percent=h.nanmean("process_cpu_percent"),
        mean_gpu_utilization_percent=tuple((k, h.nanmean(f"gpu{k}_utilization_percent")) for k in s.gpus),
        peaks=tuple(peaks),
        marks=tuple(marks),
        missing=tuple(s.missing),
        ended_by=ended_by,
        simulated_gpus=bool(getattr(s.reader, "simulated", False)) and bool(s.gpus),
    )


def records(history: History, marks: Sequence[tuple[float, str]]) -> list[dict[str, Any]]:
    """One dict per reading: ``elapsed_s``, every column (NaN = not readable), ``marks`` made since the last one."""
    t, data = history.snapshot()
    labels = [""] * len(t)
    for when, label in marks:
        i = min(int(np.searchsorted(t, when, side="left")), len(t) - 1)
        if i >= 0:
            labels[i] = f"{labels[i]}; {label}" if labels[i] else label
    cols = history.columns
    return [
        {"elapsed_s": float(t[i]), **{c: float(v) for c, v in zip(cols, data[i])}, "marks": labels[i]}
        for i in range(len(t))
    ]


def write_csv(path: str | PathLike[str], rows: list[dict[str, Any]], columns: Sequence[str]) -> None:
    """Write ``records()`` as CSV (empty cell = not readable); ``pandas.read_csv`` reads it back."""
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=["elapsed_s", *columns, "marks"])
        writer.writeheader()
        for row in rows:
            writer.writerow({k: "" if isinstance(v, float) and math.isnan(v) else v for k, v in row.items()})
