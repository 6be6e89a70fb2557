"""Checkers for the exercises of notebooks/07_scaling.ipynb: from a printed sweep, the batch per rank at which 2 ranks
start to pay."""
from __future__ import annotations

import math
import numbers
from typing import Any

from ..core.tables import Table
from ..scaling.cost import crossover_batch
from .feedback import Exercise, Hint, WrongType, exercise, kind

EXERCISES: dict[str, Exercise] = {}

CROSSOVER = "section 2 · “Where 2 ranks start to pay”"
MODEL = "section 3 · “A model that predicts it”"

# A described machine (not measured: chosen so the crossover falls between two printed points)
COMPUTE_MS_PER_SAMPLE, SHARE, ALLREDUCE_MS = 0.05, 0.93, 3.0
BATCHES = (8, 32, 128, 512)
TOLERANCE = 0.25


def _steps(batch: int) -> tuple[float, float]:
    one = batch * COMPUTE_MS_PER_SAMPLE
    return one, one / SHARE + ALLREDUCE_MS


def described_sweep() -> Table:
    """The sweep the exercise prints: 1-rank and 2-rank step times of a described machine at four batch sizes."""
    rows = []
    for b in BATCHES:
        one, two = _steps(b)
        rows.append([b, f"{one:.2f}", f"{two:.2f}", f"{2 * one / two:.2f}×"])
    return Table(["batch/rank", "1 rank ms", "2 ranks ms", "speed-up"], rows,
                 title="a described machine's sweep (one model width; each rank keeps its batch)")


def true_crossover() -> float:
    return crossover_batch(COMPUTE_MS_PER_SAMPLE, ALLREDUCE_MS, 2, SHARE)


@exercise(EXERCISES, "ch07-ex1", "the batch at which 2 ranks start to pay", section=CROSSOVER,
          expects="a number: the batch per rank from which 2 ranks beat 1")
def _crossover(answer: Any) -> str:
    if isinstance(answer, bool) or not isinstance(answer, numbers.Real) or not math.isfinite(answer):
        raise WrongType(f"give the batch per rank as a number (e.g. 100), not {kind(answer)}.")
    truth = true_crossover()
    if answer <= 0:
        raise Hint("a batch per rank is a positive number of samples.", CROSSOVER)
    if answer in BATCHES:
        raise Hint("the crossover lies between two printed points, not on one: find where the speed-up passes 1×, "
                   "from what each step is made of.", MODEL)
    if answer < truth / (1 + TOLERANCE):
        raise Hint("at that batch 2 ranks still lose: their step is longer than 2 steps of 1 rank. Read the 1-rank "
                   "column as compute per sample, and what the 2-rank column adds on top of its compute as the "
                   "all-reduce, which does not shrink with the batch.", MODEL)
    if answer > truth * (1 + TOLERANCE):
        raise Hint("2 ranks already pay below that batch. Interpolating the speed-ups linearly overshoots: the "
                   "speed-up is a ratio, not a line. Fit compute per sample and the all-reduce, then solve "
                   "speed-up = 1.", MODEL)
    return (f"about {truth:.0f} samples per rank: there, the second rank's compute saved (b × "
            f"{COMPUTE_MS_PER_SAMPLE} ms per sample) just pays for the {ALLREDUCE_MS:g} ms all-reduce, slowed by the "
            f"ranks sharing the machine ({SHARE:.0%} of a core's rate each). Larger batches pay more, smaller ones "
            "lose.")
