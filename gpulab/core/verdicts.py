"""A measurement read against what was expected of it, by the code rather than by the text around it (pure).

A chapter cell that tests a prediction, a bound or a limit prints a ``Verdict``: *held* or *missed*, with the numbers
that decided it and, when it missed, what about this run explains it. The prose around the cell then explains both
outcomes and never asserts one, so a re-run cannot make it false. ``NotMeasured`` is the other half: a reading that
cannot be true (a meeting time of 0, a ceiling above what 2 processes can do, a rate of 0) is caught where it is made
and printed as "not measured, because …" instead of as a number. Taught in ``notebooks/05_live_monitor.ipynb`` and
``notebooks/07_scaling.ipynb``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

__all__ = [
    "QUIET_CEILING",
    "DISTURBED_ABOVE",
    "Verdict",
    "NotMeasured",
    "crossover_verdict",
    "overhead_verdict",
    "fastest_setup",
    "quiet_verdict",
    "rises_verdict",
]

# On a 2-core machine a quiet run's ceiling (2 independent processes ÷ 1) reads 1.8–2.0×, one beside other work
# 1.3–1.6×: below this a run's timings say more about the other programs than about the lesson.
QUIET_CEILING = 1.7
DISTURBED_ABOVE = 2.05  # a 2-process ceiling above this is no timer noise: another program slowed the 1-process run
NEAR_ONE = 0.15  # "near 1×": within 15 % of it, the spread of one launch's fastest steps on a quiet 2-core machine


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


def quiet_verdict(ceiling: float, load: float | None = None, cores: int | None = None) -> Verdict:
    """Was the machine quiet enough for its timings to be read as the lesson's? Quiet: 2 independent processes
    reached ``QUIET_CEILING`` × one or more (``ceiling``), which another program holding a core prevents."""
    extra = f", load average {load:.2f} on {cores} core(s)" if load is not None and cores else ""
    if ceiling >= QUIET_CEILING:
        return Verdict(True, "a quiet machine", f"ceiling {ceiling:.2f}× (quiet from {QUIET_CEILING}×){extra}")
    return Verdict(
        False,
        "a quiet machine",
        f"ceiling {ceiling:.2f}×, below the {QUIET_CEILING}× of a quiet machine{extra}: other programs held a core, "
        "and every timing of this run is slower than the machine allows",
    )


def crossover_verdict(ratios: Mapping[int, float], predicted_batch: float, ceiling: float) -> Verdict:
    """The crossover prediction against the measured 2-rank ÷ 1-rank ratios at half, at and at twice the predicted
    batch (``ratios``: batch -> ratio, three batches). Held exactly when the ratio at the predicted batch is within
    ``NEAR_ONE`` of 1×; the ratios at half and twice are reported beside it (they say which way a miss went). A miss on
    a run whose ``ceiling`` was below ``QUIET_CEILING`` (or above ``DISTURBED_ABOVE``) is laid to the machine, and the
    reason says so; a miss on a quiet run is the model's, and the reason says which way it missed."""
    if len(ratios) != 3:
        raise ValueError(
            f"crossover_verdict reads three measured batches (half, at and twice the prediction); got {len(ratios)}: "
            f"{dict(ratios)}. Measure the ratio at each of the three."
        )
    half, at, twice = (ratios[b] for b in sorted(ratios))
    batches = sorted(ratios)
    said = (
        f"{at:.2f}× at the predicted batch {batches[1]} (within {NEAR_ONE * 100:.0f} % of 1× is "
        f"{1 - NEAR_ONE:.2f}–{1 + NEAR_ONE:.2f}×), {half:.2f}× at half ({batches[0]}) and {twice:.2f}× at twice "
        f"({batches[2]})"
    )
    claim = f"2 ranks break even near batch {predicted_batch:.0f}"
    if abs(at - 1) <= NEAR_ONE + 1e-9:  # 0.85 is within 15 %, whatever float subtraction makes of it
        return Verdict(True, claim, said)
    way = (
        "2 ranks already paid there: the real crossover is at a smaller batch"
        if at > 1
        else "2 ranks still lost there: the real crossover is at a larger batch"
    )
    if ceiling < QUIET_CEILING or ceiling > DISTURBED_ABOVE:
        busy = (
            f"above 2×: another program slowed the 1-process runs, so ratios over 1 rank read high; a quiet machine "
            f"reads {QUIET_CEILING}–2×"
            if ceiling > DISTURBED_ABOVE
            else f"another program held a core, so each pair ran at the pace of the rank that lost it; a quiet "
            f"machine reads {QUIET_CEILING}× or more"
        )
        return Verdict(
            False,
            claim,
            f"{said}; {way}. This run's ceiling was {ceiling:.2f}× ({busy}): its timings were disturbed, so re-run "
            "on a quiet machine before blaming the model",
        )
    return Verdict(
        False,
        claim,
        f"{said}; {way}, on a quiet run (ceiling {ceiling:.2f}×): the terms measured in the sweep's steps do not "
        "describe this width's steps at the predicted batch",
    )


def overhead_verdict(
    median: float, q1: float, q3: float, cpu_percent: float, bound_percent: float = 3.0, fixed_percent: float = 0.0
) -> Verdict:
    """Watching against not watching. The claim, that watching costs at most ``bound_percent`` of one core, is judged on
    the sampler's own CPU time, which other programs do not inflate. The reason always reads the wall clock too (the
    median ratio watched ÷ not watched, middle half ``q1``–``q3``) against the same bound, plus ``fixed_percent``, the
    monitor's start and stop measured alone as a share of an unwatched run, and says which part of a gap the measurement
    can explain: the start and stop, the machine's jitter (a middle half reaching inside the bound), or the sampler's
    wake-ups delaying a training that uses every core."""
    claim = f"watching costs at most {bound_percent:g} % of one core"
    wall = f"watched training took {median:.3f}× as long (middle half {q1:.3f}–{q3:.3f})"
    cpu = f"the sampler used {cpu_percent:.2f} % of one core"
    if cpu_percent > bound_percent:
        return Verdict(
            False,
            claim,
            f"{cpu}, above {bound_percent:g} %; {wall}. Its CPU time does not grow with other programs' load: look "
            "for a reading that got slower (a GPU query, a large process table)",
        )
    limit = 1 + bound_percent / 100
    if median < 1 - bound_percent / 100:
        return Verdict(
            True,
            claim,
            f"{cpu}; the wall clock cannot tell: {wall}, faster watched than not, which watching cannot cause, so "
            f"other programs moved the rounds by more than {bound_percent:g} %; repeat on a quiet machine",
        )
    if median <= limit:
        return Verdict(True, claim, f"{cpu}; the wall clock agrees: {wall}, inside {bound_percent:g} %")
    fixed = f"starting and stopping the monitor alone took {fixed_percent:.1f} % of an unwatched run"
    if median <= limit + fixed_percent / 100:
        why = f"{fixed}, and with it the gap fits the bound"
    elif q1 <= limit + fixed_percent / 100:
        why = f"{fixed}; the middle half reaches inside the bound, so the machine's jitter is as large as the gap"
    else:
        why = (
            f"{fixed}; even the middle half lies above that: on a quiet machine, the sampler's wake-ups delayed the "
            "training's threads (with no free core, a parallel operation waits for all its threads); on a busy one, "
            "other programs did too (the chapter's first line says which this run was)"
        )
    return Verdict(True, claim, f"{cpu}; the wall clock grew more: {wall}, more than {bound_percent:g} %: {why}")


def fastest_setup(speeds: Mapping[str, float], *, using_both: tuple[str, ...] = ()) -> str:
    """Which setup was fastest (``speeds``: label -> samples per second), and, when it is not one of ``using_both``,
    which of those won: "fastest here: A (B at 0.54×, C at 0.42×); of the setups that use both cores, B"."""
    if not speeds:
        raise ValueError("fastest_setup needs at least one setup's speed, as {label: samples per second}.")
    best = max(speeds, key=speeds.__getitem__)
    others = ", ".join(f"{k} at {v / speeds[best]:.2f}×" for k, v in speeds.items() if k != best)
    line = f"fastest here: {best}" + (f" ({others})" if others else "")
    both = [k for k in using_both if k in speeds]
    if both and best not in both:
        line += f"; of the setups that use both cores, {max(both, key=speeds.__getitem__)}"
    return line


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
