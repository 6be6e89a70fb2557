"""What the monitor's panels show, decided from the readings (pure: numpy only).

A figure read from the back of a room shows the thing the lesson is about and nothing else:

- ``panels_with_data``: a panel with nothing to show (no step reported, no GPU) is left out;
- ``smoothed_rate``: speed over a window of the cumulative count, so the line shows the trend; the raw
  200 ms readings, which jump between 0 and thousands when a step straddles two readings, are drawn faint under it;
- ``change_since_start``: memory as the change since the first reading, so a 256 MiB tensor is a step that fills the
  panel instead of a ripple on a 3 GiB level (the level at the start goes in the legend);
- ``column_maxima``: many GPUs as a map, one row each, binned to the panel's pixels, instead of a flat line each;
- ``mark_labels``: which event labels to write, so that 40 epochs give a readable row of numbers, not a smear, and
  the first label is never cut off at the left edge.

Taught in ``notebooks/05_live_monitor.ipynb``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

__all__ = [
    "panels_with_data",
    "smoothed_rate",
    "smoothing_window",
    "change_since_start",
    "column_maxima",
    "mark_labels",
    "MANY_GPUS",
    "text_width_px",
]

MANY_GPUS = 4  # more than this many GPUs are drawn as a mean and a band
_STRIDES = (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000)
_NUMBERED = re.compile(r"^(.*?)(\d+)$")


def panels_with_data(columns: Sequence[str], values: np.ndarray, gpus: Sequence[int] = ()) -> tuple[str, ...]:
    """The panels that have something to show, in figure order. More than ``MANY_GPUS`` GPUs get two maps (busy,
    memory) instead of lines; the "GPU memory" line panel then remains only for torch's own figures."""

    def any_finite(names: list[str]) -> bool:
        idx = [i for i, c in enumerate(columns) if c in names]
        return bool(idx) and len(values) > 0 and bool(np.isfinite(values[:, idx]).any())

    many = len(gpus) > MANY_GPUS
    out = []
    if any_finite(["host_memory_used_bytes", "process_rss_bytes"]) or not len(values):
        out.append("memory")
    out.append("utilisation")  # CPU use is always readable; it is the panel that says the machine was busy
    nvml_memory = [c for c in columns if c.startswith("gpu") and c.endswith("_memory_used_bytes")]
    torch_memory = [c for c in columns if c.startswith("cuda") and c.endswith("_bytes")]
    if any_finite(torch_memory + ([] if many else nvml_memory)) or (not len(values) and gpus and not many):
        out.append("GPU memory")
    if many and (any_finite(nvml_memory) or not len(values)):
        out += ["GPU busy map", "GPU memory map"]
    if (
        "samples_total" in columns
        and len(values)
        and np.nanmax(np.r_[values[:, list(columns).index("samples_total")], 0.0]) > 0
    ):
        out.append("speed")
    return tuple(out)


def column_maxima(t: np.ndarray, block: np.ndarray, t_end: float, bins: int) -> np.ndarray:
    """``block`` (rows at times ``t``) as ``bins`` equal slices of [0, ``t_end``]: each slice's highest value per
    column, NaN where a slice has no reading (a map drawn from it fills from the left as time goes on)."""
    out = np.full((max(bins, 1), block.shape[1]), np.nan)
    if len(t) == 0 or not t_end > 0:
        return out
    index = np.clip((t * (bins / t_end)).astype(np.int64), 0, bins - 1)
    for j in range(block.shape[1]):
        column = np.where(np.isfinite(block[:, j]), block[:, j], -np.inf)
        out_col = np.full(bins, -np.inf)
        np.maximum.at(out_col, index, column)
        out[:, j] = np.where(np.isfinite(out_col), out_col, np.nan)
    # A missed reading (the sampler late once) leaves a slice empty between two readings: not a white stripe, but the
    # next reading's value, which covers that time (NVML averages utilisation over the time since it last sampled).
    # A longer silence (over 2.5 typical intervals) stays empty: nothing was read then.
    if len(t) >= 3:
        dt = np.diff(t)
        for a in np.flatnonzero((dt <= 2.5 * np.median(dt)) & (np.diff(index) > 1)):
            gap = slice(index[a] + 1, index[a + 1])
            out[gap] = np.where(np.isnan(out[gap]), block[a + 1], out[gap])
    return out


def smoothed_rate(t: np.ndarray, totals: np.ndarray, window_s: float) -> np.ndarray:
    """Rate of a cumulative count over the ``window_s`` seconds up to each reading (shorter at the start); NaN at
    the first. Trailing, as a live view must be: a change shows at the reading where it happened, never before."""
    if len(t) == 0:
        return np.empty(0)
    start = np.searchsorted(t, t - window_s, side="left")
    # The window never reaches back before the work began: idle set-up time would draw a ramp that did not happen.
    moved = np.flatnonzero(np.nan_to_num(totals) > np.nan_to_num(totals[0]))
    if moved.size:
        start[moved[0] :] = np.maximum(start[moved[0] :], moved[0] - 1)
    start = np.minimum(start, np.arange(len(t)) - 1).clip(0)
    dt = t - t[start]
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(dt > 0, (totals - totals[start]) / dt, np.nan)


def smoothing_window(duration_s: float, longest_s: float = 1.0) -> float:
    """The averaging window for a run this long: ``longest_s`` for runs of 8 s or more, an eighth of shorter runs
    (0.4 s at the least, two readings), to a tenth of a second, so that a 1.5 s run is not one long average."""
    return round(min(longest_s, max(0.4, duration_s / 8)), 1)


def change_since_start(y: np.ndarray) -> tuple[np.ndarray, float]:
    """``(y - first readable value, that first value)``; all NaN (and NaN) when nothing was readable."""
    finite = np.flatnonzero(np.isfinite(y))
    if not finite.size:
        return np.full_like(y, np.nan, dtype=float), float("nan")
    first = float(y[finite[0]])
    return y - first, first


def text_width_px(text: str, fontsize_pt: float, dpi: float) -> float:
    """A generous estimate of a label's width (DejaVu Sans advances are at most ~0.65 em for these characters)."""
    return len(text) * 0.65 * fontsize_pt * dpi / 72.0


def mark_labels(
    x_px: Sequence[float], labels: Sequence[str], width_px: float, fontsize_pt: float, dpi: float, gap_px: float = 8.0
) -> list[tuple[int, str, str]]:
    """Which marks get a written label, as ``(mark index, text, "left" | "right")``, so that no two overlap.

    ``x_px`` are the marks' positions from the panel's left edge. A label starts just right of its line (so a mark at
    the very start is not cut off), or ends just left of it near the right edge. Numbered labels that share a prefix
    ("epoch 1" … "epoch 40") are thinned to round numbers — every 1st, 2nd, 5th, 10th … — and only the first keeps
    the prefix; other labels are thinned by position in the same steps. The first stride at which no chosen label
    overlaps its neighbour wins.
    """
    n = len(labels)
    if n == 0:
        return []
    parts = [_NUMBERED.match(label) for label in labels]
    numbers = [int(p.group(2)) for p in parts if p]
    numbered = (
        all(parts)
        and len({p.group(1) for p in parts if p}) == 1
        and n > 2
        and all(a < b for a, b in zip(numbers, numbers[1:]))
    )  # "epoch 1, 2, 3", not "float32, float16"

    def extent(i: int, text: str) -> tuple[float, float, str]:
        w = text_width_px(text, fontsize_pt, dpi)
        if x_px[i] + 3 + w <= width_px:
            return x_px[i] + 3, x_px[i] + 3 + w, "left"
        return x_px[i] - 3 - w, x_px[i] - 3, "right"

    best: list[tuple[int, str, str]] = []
    for stride in _STRIDES:
        if numbered:
            wanted = [i for i in range(n) if i == 0 or int(parts[i].group(2)) % stride == 0]  # type: ignore[union-attr]
        else:
            wanted = list(range(0, n, stride))
        kept: list[tuple[int, str, str]] = []
        right = -np.inf
        for k, i in enumerate(wanted):
            text = labels[i] if (not numbered or not kept) else parts[i].group(2)  # type: ignore[union-attr]
            lo, hi, ha = extent(i, text)
            if not kept and k + 1 < len(wanted) and ha == "left" and hi + gap_px > x_px[wanted[k + 1]] + 3:
                w = text_width_px(text, fontsize_pt, dpi)  # "epoch 1" would cover "2": write it left of its line
                if x_px[i] - 3 - w >= 0:
                    lo, hi, ha = x_px[i] - 3 - w, x_px[i] - 3, "right"
            if lo >= right + gap_px:
                kept.append((i, text, ha))
                right = hi
        dropped = set(wanted) - {k[0] for k in kept}
        # "epoch 1" may crowd out the first round number, and the last label, turned to the left, the one before it
        if dropped <= ({wanted[1], wanted[-1]} if len(wanted) > 2 else set()):
            return kept
        best = kept
    return best
