"""The verdicts on one scaling run: was the machine quiet enough to read its timings, and did the crossover
prediction hold (pure).

A run's 2-process ceiling says how quiet the machine was (``QUIET_CEILING``, ``DISTURBED_ABOVE``): ``quiet_verdict``
reads it for ``how_quiet``'s line, and ``crossover_verdict`` lays a missed prediction to the machine or to the model by
it. Taught in ``notebooks/07_scaling.ipynb``.
"""

from __future__ import annotations

from collections.abc import Mapping

from ..core.verdicts import Verdict

__all__ = ["QUIET_CEILING", "DISTURBED_ABOVE", "NEAR_ONE", "quiet_verdict", "crossover_verdict"]

# On a 2-core machine a quiet run's ceiling (2 independent processes ÷ 1) reads 1.8–2.0×, one beside other work
# 1.3–1.6×: below this a run's timings say more about the other programs than about the lesson.
QUIET_CEILING = 1.7
DISTURBED_ABOVE = 2.05  # a 2-process ceiling above this is no timer noise: another program slowed the 1-process run
NEAR_ONE = 0.15  # "near 1×": within 15 % of it, the spread of one launch's fastest steps on a quiet 2-core machine


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
