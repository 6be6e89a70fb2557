"""A measurement read against what was expected of it, by the code rather than by the text around it (pure).

A chapter cell that tests a prediction, a bound or a limit prints a ``Verdict``: *held* or *missed*, with the numbers
that decided it and, when it missed, what about this run explains it. The prose around the cell then explains both
outcomes and never asserts one, so a re-run cannot make it false. ``NotMeasured`` is the other half: a reading that
cannot be true (a meeting time of 0, a ceiling above what 2 processes can do, a rate of 0) is caught where it is made
and printed as "not measured, because …" instead of as a number. Both, and ``rises_verdict``, serve several floors
(``gpulab.ranks``, ``gpulab.dataparallel``, ``gpulab.scaling``), so they stand on the ground floor; the verdicts on
one scaling run (a quiet machine, the crossover) live beside it, in ``gpulab.scaling.run_verdicts``. Printed in
``notebooks/03_dataparallel.ipynb``, ``04_ddp.ipynb`` and ``07_scaling.ipynb``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

__all__ = ["Verdict", "NotMeasured", "rises_verdict"]


@dataclass(frozen=True)
class Verdict:
    """Whether ``claim`` held in this run, and the measured ``reason`` that decided it."""

    held: bool
    claim: str
    reason: str

    def __str__(self) -> str:
        return f"{'held' if self.held else 'missed'}: {self.claim}: {self.reason}"

    def __bool__(self) -> bool:
        return self.held


@dataclass(frozen=True)
class NotMeasured:
    """A reading that could not be true, kept as its reason: prints "not measured, because …", and is falsy."""

    reason: str

    def __str__(self) -> str:
        return f"not measured, because {self.reason}"

    def __bool__(self) -> bool:
        return False


def rises_verdict(
    claim: str, points: Sequence[tuple[str, float]], fmt: Callable[[float], str] = "{:.2f}".format
) -> Verdict:
    """``claim`` that a measured value grows along ``points`` (label, value), in order: held when each is larger
    than the one before. The reason lists them, each written by ``fmt``."""
    if len(points) < 2:
        raise ValueError(f"rises_verdict compares at least two measured points; got {len(points)}: {list(points)}.")
    said = ", ".join(f"{fmt(value)} at {label}" for label, value in points)
    held = all(b[1] > a[1] for a, b in zip(points, points[1:]))
    if held:
        return Verdict(True, claim, said)
    return Verdict(
        False,
        claim,
        f"{said}: on a shared machine a busy core slows one of them; the chapter's first line says how quiet it was",
    )
