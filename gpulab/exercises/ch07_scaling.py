"""Checkers for the exercises of notebooks/07_scaling.ipynb: from a printed sweep, the batch per rank at which 2 ranks
start to pay."""

from __future__ import annotations

import math
from typing import Any

from ..core.arguments import is_real_number
from ..core.tables import Table
from ..scaling.cost import crossover_batch
from .feedback import Exercise, Hint, WrongType, exercise, kind

EXERCISES: dict[str, Exercise] = {}

CROSSOVER = "section 2 · “Where 2 ranks start to pay”"
MODEL = "section 3 · “A model that predicts it”"

# A described machine (not measured: chosen so the crossover falls between two printed points); its ceiling: 2 ranks
# compute at most 1.86 times as fast as one, each at 93 % of its rate alone
COMPUTE_MS_PER_SAMPLE, CEILING, ALLREDUCE_MS = 0.05, 1.86, 3.0
BATCHES = (8, 32, 128, 512)
TOLERANCE = 0.25


def _steps(batch: int) -> tuple[float, float]:
    one = batch * COMPUTE_MS_PER_SAMPLE
    return one, one * 2 / CEILING + ALLREDUCE_MS


def described_sweep() -> Table:
    """The sweep the exercise prints: 1-rank and 2-rank step times of a described machine at four batch sizes."""
    rows = []
    for b in BATCHES:
        one, two = _steps(b)
        rows.append([b, f"{one:.2f}", f"{two:.2f}", f"{2 * one / two:.2f}×"])
    return Table(
        ["batch/rank", "1 rank ms", "2 ranks ms", "speed-up"],
        rows,
        title="a described machine's sweep (one model width; each rank keeps its batch)",
    )


def true_crossover() -> float:
    """The batch per rank from which 2 ranks beat 1 on the described machine: what an answer is compared with."""
    return crossover_batch(COMPUTE_MS_PER_SAMPLE, ALLREDUCE_MS, 2, CEILING)


def _as_number(answer: Any) -> float:
    """The answer as a float: a plain number, or a 0-d NumPy array or tensor (what a computation with them gives)."""
    if getattr(answer, "ndim", None) == 0 and hasattr(answer, "item"):
        answer = answer.item()
    if not is_real_number(answer):
        raise WrongType(f"give the batch per rank as a number (e.g. 100), not {kind(answer)}.")
    try:
        value = float(answer)
    except OverflowError:
        value = math.inf
    if math.isnan(value):
        raise WrongType(
            "that is NaN, not a number of samples: one step of your computation divided 0 by 0 or used a "
            "missing value. Print the numbers you computed, then give the batch per rank (e.g. 100)."
        )
    return value


@exercise(
    EXERCISES,
    "ch07-ex1",
    "the batch at which 2 ranks start to pay",
    section=CROSSOVER,
    expects="a number: the batch per rank from which 2 ranks beat 1",
)
def _crossover(answer: Any) -> str:
    value = _as_number(answer)
    truth = true_crossover()
    paying = [b for b in BATCHES if _steps(b)[0] * 2 > _steps(b)[1]]  # printed points where 2 ranks already pay
    losing = [b for b in BATCHES if b not in paying]
    if value <= 0:
        raise Hint("a batch per rank is a positive number of samples.", CROSSOVER)
    if math.isinf(value):
        raise Hint(
            f"infinity says 2 ranks never pay, but the table shows them paying from batch {paying[0]} "
            f"({2 * _steps(paying[0])[0] / _steps(paying[0])[1]:.2f}×): the crossover is a finite batch.",
            CROSSOVER,
        )
    if value in (losing[-1], paying[0]):
        raise Hint(
            "the crossover lies between two printed points, not on one: find where the speed-up passes 1×, "
            "from what each step is made of.",
            MODEL,
        )
    if value < truth / (1 + TOLERANCE):
        raise Hint(
            "at that batch 2 ranks still lose: their step is longer than 2 steps of 1 rank. Read the 1-rank "
            "column as compute per sample, and what the 2-rank column adds on top of its compute as the "
            "all-reduce, which does not shrink with the batch.",
            MODEL,
        )
    if value > truth * (1 + TOLERANCE):
        if value >= paying[0]:
            raise Hint(
                f"the table already shows 2 ranks paying at batch {paying[0]}: the crossover lies below it, "
                f"between batch {losing[-1]} and {paying[0]}.",
                CROSSOVER,
            )
        raise Hint(
            "2 ranks already pay below that batch. Interpolating the speed-ups linearly overshoots: the "
            "speed-up is a ratio, not a line. Fit compute per sample and the all-reduce, then solve "
            "speed-up = 1.",
            MODEL,
        )
    return (
        f"about {truth:.0f} samples per rank: there, the second rank's compute saved (b × "
        f"{COMPUTE_MS_PER_SAMPLE} ms per sample) just pays for the {ALLREDUCE_MS:g} ms all-reduce, slowed by the "
        f"ranks sharing the machine ({CEILING / 2:.0%} of a core's rate each). Larger batches pay more, smaller ones "
        "lose."
    )
