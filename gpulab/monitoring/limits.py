"""Axis limits for the live figure that change in steps (pure: no imports beyond ``math``).

A live frame is cheap only while its axes stay put: then the grid, ticks, labels and legends are copied from a cached
picture and just the lines are drawn again. A limit that followed the data exactly would move every second and force
a full redraw (and a new layout) each time. So the live view's limits only grow, and when the data outgrows one it
jumps to a round number with room to spare (``grow_limit``): a run redraws its axes a handful of times, early on.
The static figure left at the end still fits the data exactly. Taught in ``notebooks/05_live_monitor.ipynb``.
"""

from __future__ import annotations

import math

__all__ = ["nice_ceil", "grow_limit", "live_limits", "fitted_limits", "ROUND_STEPS"]

ROUND_STEPS = (1.0, 1.5, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0)  # × a power of ten; neighbours at most 1.5× apart


def nice_ceil(x: float) -> float:
    """The smallest round number (1, 1.5, 2, 3, 4, 5, 6, 8 × 10^k) that is ≥ ``x``; ``x`` must be positive."""
    if not (x > 0 and math.isfinite(x)):
        raise ValueError(f"nice_ceil needs a positive finite number, got {x!r}.")
    base = 10.0 ** math.floor(math.log10(x))
    for m in ROUND_STEPS:
        if m * base >= x * (1 - 1e-12):  # 3 × 0.1 is 0.30000000000000004: a rounding error is not "above"
            return m * base
    return 10.0 * base  # only when log10 rounded down twice; kept for safety


def grow_limit(current: float, needed: float, headroom: float = 1.25, default: float = 1.0) -> float:
    """The upper limit to show: ``current`` while it still holds ``needed``, else a round number ≥ needed × headroom.

    ``current`` ≤ 0 means "none yet"; ``needed`` NaN or ≤ 0 (nothing readable yet) keeps ``current`` (or
    ``default``).
    The result never shrinks, so data that falls back stays in the same picture, as with the static figure's limits.
    """
    if not headroom >= 1:
        raise ValueError(f"headroom={headroom} would put the highest point above the axis; use 1 or more (1.25).")
    if not needed > 0 or math.isinf(needed):  # NaN, zero, negative or infinite: nothing to fit
        return current if current > 0 else default
    if needed <= current:
        return current
    return nice_ceil(needed * headroom)


def live_limits(
    low: float, high: float, previous: tuple[float, float] | None, *, headroom: float
) -> tuple[float, float]:
    """A live panel's (bottom, top): they only grow, each by ``grow_limit``, from ``previous`` (None at the start), so
    that the axes stay put between the rare jumps. ``low`` below zero (memory freed) grows the bottom downwards."""
    bottom, top = previous or (0.0, 0.0)
    top = grow_limit(top, high, headroom=headroom)
    bottom = -grow_limit(-bottom, -low, headroom=1.25) if low < 0 else bottom
    return bottom, top


def fitted_limits(low: float, high: float, room: float = 1.0) -> tuple[float, float]:
    """The static figure's (bottom, top): the data with a small margin, and ``room`` (×) above it for mark labels."""
    span = (high - low) or 1.0
    return low - (0.06 * span if low < 0 else 0.0), high + 0.08 * span + (room - 1.0) * span
