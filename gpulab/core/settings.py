"""Course-wide settings read from the environment (pure), and the one place that reads a yes/no variable.

``GPULAB_FAST=1`` (set by ``make test`` and the CI) shrinks data sets, epochs and repeats so that every chapter runs
top to bottom in seconds on a 2-core CPU; ``make lab`` sets ``GPULAB_FAST=0`` for the full-size experiments.
"""

from __future__ import annotations

import os
from typing import TypeVar

__all__ = ["fast_mode", "full_or_fast", "env_flag"]

T = TypeVar("T")
_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


def env_flag(name: str, default: bool | None = False, *, meaning: str = "") -> bool | None:
    """Read the yes/no variable ``name`` (1/true/yes/on or 0/false/no/off, any case); unset or empty gives ``default``.

    Anything else raises ``ValueError`` naming the variable and the values it takes, so a typo never passes silently.
    ``meaning`` finishes the sentence "use 1 to …" in that message.
    """
    raw = os.environ.get(name, "").strip().lower()
    if raw in _TRUE:
        return True
    if raw in _FALSE:
        return False
    if raw == "":
        return default
    what = f" ({meaning})" if meaning else ""
    raise ValueError(f"{name}={os.environ[name]!r} is not understood: use 1 or 0{what}, or unset it.")


def fast_mode() -> bool:
    """True when ``GPULAB_FAST`` is set to 1/true/yes/on (read at every call, so a notebook can change it)."""
    return bool(env_flag("GPULAB_FAST", False, meaning="1 for the quick run of every chapter, 0 for the full one"))


def full_or_fast(full: T, fast: T) -> T:
    """``full_or_fast(full=60_000, fast=2_000)``: the full-size value normally, the small one in fast mode."""
    return fast if fast_mode() else full
