"""Checkers for the exercises of notebooks/07_scaling.ipynb: from a printed sweep, the batch per rank at which 2 ranks
start to pay."""

from __future__ import annotations

import math
from typing import Any

from ..core.arguments import is_real_number
from ..core.tables import Table
from ..scaling.cost import crossover_batch
from .feedback import Exercise, Hint, WrongType, exercise, kind
from .tensors import close_tensor, same_tensor

EXERCISES: dict[str, Exercise] = {}

CROSSOVER = "section 3 · “Where 2 ranks start to pay”"
MODEL = "section 4 · “A model that predicts it”"

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


KNOBS = "section 1 · “A DDP step, and its knobs”"
MICRO, STEPS_CHECKED, LR = 4, 2, 0.1  # micro-batches per step, steps the checker runs, the SGD rate it gives


def _micro_batches(rank: int, step: int) -> list[Any]:
    """Rank ``rank``'s 4 micro-batches of step ``step``: any rank can rebuild any other's (the reference needs all)."""
    import torch

    g = torch.Generator().manual_seed(1000 * step + rank)
    return [torch.randn(2, 8, generator=g) for _ in range(MICRO)]


def _tiny() -> Any:
    import torch

    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU(), torch.nn.Linear(8, 1))


def _loss(model: Any, x: Any) -> Any:
    return model(x).square().mean()


def accumulation_in_rank(step_fn: Any) -> dict[str, Any]:
    """In each of 2 gloo ranks: wrap the tiny model in DDP with a comm hook that counts all-reduces (PyTorch's own
    ``allreduce_hook`` inside), run the learner's ``step_fn(model, optimizer, micro_batches)`` for 2 steps, and
    compare the weights with plain SGD on the mean gradient of all ranks' micro-batches (each loss divided by 4), and
    with the undivided sum, which trains as if the learning rate were 4 times larger. Returns what the checker reads."""
    import torch
    import torch.distributed as dist
    from torch.distributed.algorithms.ddp_comm_hooks.default_hooks import allreduce_hook
    from torch.nn.parallel import DistributedDataParallel as DDP

    rank, world = dist.get_rank(), dist.get_world_size()
    model = DDP(_tiny())
    calls = [0]

    def counted(state, bucket):  # one hook per model: this one counts, then does what DDP does by default
        calls[0] += 1
        return allreduce_hook(state, bucket)

    model.register_comm_hook(dist.group.WORLD, counted)
    optimizer = torch.optim.SGD(model.parameters(), lr=LR)
    per_step = []
    for step in range(STEPS_CHECKED):
        before = calls[0]
        step_fn(model, optimizer, _micro_batches(rank, step))
        per_step.append(calls[0] - before)
    refs = {}
    for scale in (1.0 / MICRO, 1.0):  # the mean over the micro-batches (right), and their undivided sum (wrong)
        ref = _tiny()
        for step in range(STEPS_CHECKED):
            ref.zero_grad()
            for r in range(world):
                for x in _micro_batches(r, step):
                    (_loss(ref, x) * scale / world).backward()
            with torch.no_grad():
                for p in ref.parameters():
                    p -= LR * p.grad
        refs[scale] = ref
    mine = list(model.module.parameters())
    start = list(_tiny().parameters())
    return {
        "allreduces": per_step,
        "unchanged": all(same_tensor(a, b) for a, b in zip(mine, start)),
        "matches": all(close_tensor(a, b) for a, b in zip(mine, refs[1.0 / MICRO].parameters())),
        "matches_sum": all(close_tensor(a, b) for a, b in zip(mine, refs[1.0].parameters())),
    }


@exercise(
    EXERCISES,
    "ch07-ex2",
    "accumulate 4 micro-batches, one all-reduce",
    section=KNOBS,
    expects="a function accumulate_step(model, optimizer, micro_batches) that trains one step on the 4 micro-batches",
)
def _accumulate(answer: Any) -> str:
    from ..ranks.failures import RankFailed
    from ..ranks.launcher import launch
    from .feedback import NotAnswered

    if answer is ...:
        raise NotAnswered("Replace the ... with your accumulate_step, then run the check again.")
    if not callable(answer):
        raise WrongType(f"accumulate_step should be a function (model, optimizer, micro_batches); got {kind(answer)}.")
    try:
        result = launch(accumulation_in_rank, 2, args=(answer,), backend="gloo", threads_per_rank=1, timeout_s=60)
    except RankFailed as failed:
        raise Hint(
            f"your accumulate_step failed in a rank: {str(failed).splitlines()[0]}. It receives the DDP model, its "
            "optimizer and a list of 4 tensors (the micro-batches); the loss of one is model(x).square().mean().",
            KNOBS,
        ) from None
    counts = result["allreduces"]
    if result["unchanged"] and not any(counts):
        raise NotAnswered(
            "your accumulate_step ran but trained nothing (no all-reduce, the weights unchanged): write its body, "
            "then run the check again."
        )
    if any(c == 0 for c in counts):
        raise Hint(
            f"a step all-reduced nothing ({counts} bucket all-reduces in the 2 steps): every backward ran under "
            "no_sync(), so the gradients never left the rank. The last micro-batch's backward runs outside it.",
            KNOBS,
        )
    if any(c >= MICRO for c in counts):
        raise Hint(
            f"each step all-reduced {counts[0]} times, once per micro-batch: run the first 3 backward passes inside "
            "`with model.no_sync():`, so that the gradients add up in the rank and only the 4th is all-reduced.",
            KNOBS,
        )
    if counts[0] != counts[1] or counts[0] != 1:
        raise Hint(f"the steps all-reduced {counts} buckets; one step of this model all-reduces one bucket, once.")
    if result["matches_sum"]:
        raise Hint(
            f"one all-reduce per step, but the weights are those of the {MICRO} micro-batches' gradients summed, "
            f"not averaged: that trains as if the learning rate were {MICRO} times larger. Divide each micro-batch's "
            f"loss by the number of micro-batches ({MICRO}) before backward, so the step uses their mean.",
            KNOBS,
        )
    if not result["matches"]:
        raise Hint(
            "one all-reduce per step, but after 2 steps the weights differ from SGD on the gradients of the 4 "
            "micro-batches of both ranks: call backward on each micro-batch's loss, then optimizer.step() once, "
            "then optimizer.zero_grad(), so that the next step starts from zero.",
            KNOBS,
        )
    return (
        "one all-reduce per step of 4 micro-batches on each of 2 gloo ranks, and the weights of SGD on all 8 "
        "micro-batches' mean gradient: no_sync() let the first 3 gradients (each loss divided by 4) add up in each "
        "rank, and the 4th backward all-reduced them, so DDP averaged the ranks' means."
    )
