"""Fewer points for a live line, the same picture (pure: numpy only).

A line of an hour's readings (18,000 at 5 Hz) crosses a panel about 650 pixels wide: Agg would stroke every segment,
and a blitted frame would cost as much as drawing the whole figure. ``envelope`` keeps, for each pixel-wide slice of
time, the lowest and the highest value, which is what that column of pixels shows; a slice with an unreadable value
(NaN) keeps a NaN, so gaps stay gaps. Only live frames use it: the static figure at the end draws every reading.
Taught in ``notebooks/05_live_monitor.ipynb``.
"""

from __future__ import annotations

import numpy as np

__all__ = ["envelope"]


def envelope(t: np.ndarray, y: np.ndarray, t_end: float, slices: int) -> tuple[np.ndarray, np.ndarray]:
    """``(t, y)`` (``t`` rising, from 0 to ``t_end``) cut to at most 3 points per slice of ``t_end / slices``.

    Returned as is when it has no more than 3 points per slice already."""
    if len(t) <= 3 * slices or not t_end > 0:
        return t, y
    index = np.clip((t * (slices / t_end)).astype(np.int64), 0, slices)
    starts = np.flatnonzero(np.r_[True, index[1:] != index[:-1]])
    if len(starts) * 3 >= len(t):
        return t, y
    low, high = np.fmin.reduceat(y, starts), np.fmax.reduceat(y, starts)  # fmin/fmax skip NaN
    gap = np.logical_or.reduceat(np.isnan(y), starts)
    out_t = np.repeat(t[starts], 3)
    out_y = np.column_stack([low, high, np.where(gap, np.nan, high)]).ravel()
    keep = np.column_stack([np.ones_like(gap), np.ones_like(gap), gap]).ravel()  # the third point only for a gap
    return out_t[keep], out_y[keep]
