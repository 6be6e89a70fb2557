"""Formatting of bytes, seconds and rates for people (pure: no torch, no NVML).

Taught in every chapter that prints a measurement; see ``notebooks/00_setup.ipynb``.
"""

from __future__ import annotations

import math

from .arguments import is_real_number

__all__ = ["format_bytes", "format_seconds", "format_rate", "format_percent", "GiB", "MiB"]

KiB = 1024
MiB = 1024**2
GiB = 1024**3
_BINARY = ("B", "KiB", "MiB", "GiB", "TiB", "PiB")


def _bad_number(x: float) -> bool:
    return not is_real_number(x) or math.isnan(x)


def format_bytes(n: float, digits: int = 1) -> str:
    """``format_bytes(3 * 2**30)`` → ``'3.0 GiB'``. Binary units, as nvidia-smi's MiB are."""
    if _bad_number(n):
        return "N/A"
    sign = "-" if n < 0 else ""
    n = abs(float(n))
    for unit in _BINARY:
        if n < 1024 or unit == _BINARY[-1]:
            return f"{sign}{int(n)} B" if unit == "B" else f"{sign}{n:.{digits}f} {unit}"
        n /= 1024
    raise AssertionError("unreachable")


def format_seconds(s: float, digits: int = 3) -> str:
    """``format_seconds(0.00042)`` → ``'420 µs'``; picks ns, µs, ms, s, min or h with ``digits`` significant digits."""
    if _bad_number(s):
        return "N/A"
    if s < 0:
        return "-" + format_seconds(-s, digits)
    if s == 0:
        return "0 s"
    if s >= 3600:
        return f"{s / 3600:.1f} h"
    if s >= 60:
        return f"{s / 60:.1f} min"
    for scale, unit in ((1.0, "s"), (1e-3, "ms"), (1e-6, "µs"), (1e-9, "ns")):
        if s >= scale or unit == "ns":
            return f"{_sig(s / scale, digits)} {unit}"
    raise AssertionError("unreachable")


def format_rate(per_second: float, unit: str = "samples", digits: int = 3) -> str:
    """``format_rate(12345.6, 'samples')`` → ``'12.3 k samples/s'``."""
    if _bad_number(per_second):
        return "N/A"
    for scale, prefix in ((1e9, "G"), (1e6, "M"), (1e3, "k"), (1.0, "")):
        if abs(per_second) >= scale or scale == 1.0:
            sep = " " if prefix else ""
            return f"{_sig(per_second / scale, digits)}{sep}{prefix} {unit}/s".replace("  ", " ")
    raise AssertionError("unreachable")


def format_percent(fraction_or_percent: float, *, is_fraction: bool = False) -> str:
    """``format_percent(37)`` → ``'37 %'``; ``format_percent(0.37, is_fraction=True)`` → ``'37 %'``."""
    if _bad_number(fraction_or_percent):
        return "N/A"
    v = fraction_or_percent * 100 if is_fraction else fraction_or_percent
    return f"{v:.0f} %"


def _sig(x: float, digits: int) -> str:
    """``x`` with ``digits`` significant digits, no exponent, no trailing zeros after rounding."""
    if x == 0:
        return "0"
    decimals = max(digits - 1 - int(math.floor(math.log10(abs(x)))), 0)
    return f"{x:.{decimals}f}"
