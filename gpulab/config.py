"""Course-wide settings read from the environment (pure).

``GPULAB_FAST=1`` (set by ``make test`` and the CI) shrinks data sets, epochs and repeats so that every chapter runs
top to bottom in seconds on a 2-core CPU; ``make lab`` sets ``GPULAB_FAST=0`` for the full-size experiments.
"""
from __future__ import annotations

import os
from typing import TypeVar

__all__ = ["fast_mode", "pick"]

T = TypeVar("T")
_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def fast_mode() -> bool:
    """True when ``GPULAB_FAST`` is set to 1/true/yes/on (read at every call, so a notebook can change it)."""
    raw = os.environ.get("GPULAB_FAST", "0").strip().lower()
    if raw in _TRUE:
        return True
    if raw in _FALSE:
        return False
    raise ValueError(f"GPULAB_FAST={raw!r} is not understood: use 1 for the quick run of every chapter or 0 for the full one.")


def pick(full: T, fast: T) -> T:
    """``pick(full=60_000, fast=2_000)``: the full-size value normally, the small one in fast mode."""
    return fast if fast_mode() else full
