"""Checkers for the exercises of notebooks/04_ddp.ipynb: a rank's share of the data with ``DistributedSampler``
(distinct items per rank, a new order every epoch), the sampler's padding, and a DDP script of the learner's, run
under torchrun (``ch04_script``)."""

from __future__ import annotations

import functools
from typing import Any

from torch.utils.data import DistributedSampler

from ..core.arguments import is_whole_number
from .feedback import Exercise, Hint, WrongType, call_learner, exercise, kind

EXERCISES: dict[str, Exercise] = {}

NO_SPLIT = "section 4 · “DDP does not split your data”"
SET_EPOCH = "section 5 · “set_epoch: a new order every epoch”"
PADDING = "section 6 · “Uneven data: padding and drop_last”"

ITEMS, WORLD, EPOCHS = 20, 4, (0, 1)


def _explain(exc: Exception) -> Hint | None:
    text = str(exc).lower()
    if "process group" in text or "distributed package" in text:
        return Hint(
            "the sampler asked torch.distributed for the rank and the world size, and this notebook has no "
            "process group. A sampler needs only those two numbers: pass them to it yourself, as section 5 "
            "does to compute what a rank would read without starting ranks.",
            SET_EPOCH,
        )
    return None


def _items(result: Any, where: str) -> list[int]:
    if callable(getattr(result, "tolist", None)):  # a tensor or an array of indices
        result = result.tolist()
    try:
        items = list(result)
    except TypeError:
        raise WrongType(
            f"rank_items returned {kind(result)} ({where}): return the list of item indices the rank reads."
        ) from None
    if not all(is_whole_number(i) for i in items):
        raise WrongType(
            f"rank_items should return whole numbers, the indices of the items ({where}); got {kind(items)}."
        )
    return [int(i) for i in items]


@exercise(
    EXERCISES,
    "ch04-ex1",
    "every rank its own share, a new order every epoch",
    section=SET_EPOCH,
    expects="a function rank_items(dataset, rank, world_size, epoch) that returns the indices the rank reads",
)
def _rank_items(answer: Any) -> str:
    dataset = list(range(100, 100 + ITEMS))  # items whose values are not their indices
    read: dict[int, list[list[int]]] = {}
    for epoch in EPOCHS:
        for rank in range(WORLD):
            where = f"rank {rank}, epoch {epoch}"
            ask = functools.partial(
                call_learner,
                answer,
                dataset,
                rank,
                WORLD,
                epoch,
                name="rank_items",
                explain=_explain,
                expects="a function rank_items(dataset, rank, world_size, epoch)",
            )
            items = _items(ask(), where)
            again = _items(ask(), where)  # asked twice: the same rank and epoch must give the same items
            if items != again:
                raise Hint(
                    f"asked twice for {where}, rank_items gave two different lists. Every rank must shuffle "
                    "with the same seed, or their shares overlap: the sampler's order depends only on its "
                    "seed and the epoch.",
                    SET_EPOCH,
                )
            if any(not 0 <= i < ITEMS for i in items):
                raise Hint(
                    f"{where}: return indices into the dataset (0 to {ITEMS - 1}), not the items themselves.", NO_SPLIT
                )
            read.setdefault(epoch, []).append(items)
    for epoch, shares in read.items():
        if all(sorted(s) == list(range(ITEMS)) for s in shares):
            raise Hint(
                f"in epoch {epoch} every rank reads every item: each would train on the whole dataset, and "
                "the ranks would do the same work. DDP does not split the data for you.",
                NO_SPLIT,
            )
        flat = [i for s in shares for i in s]
        if len(set(flat)) != len(flat):
            raise Hint(
                f"in epoch {epoch} some items go to more than one rank: the ranks' shares must not overlap.", NO_SPLIT
            )
        if set(flat) != set(range(ITEMS)):
            raise Hint(
                f"in epoch {epoch} the ranks together read {len(set(flat))} of the {ITEMS} items: every item "
                "belongs to one rank.",
                NO_SPLIT,
            )
    if all(s == sorted(s) for s in read[0]):
        raise Hint(
            "each rank reads its items in index order: shuffle them (DistributedSampler shuffles by default).",
            SET_EPOCH,
        )
    if read[0] == read[1]:
        raise Hint(
            "every rank reads its items in the same order in epoch 0 and epoch 1. Nothing fails, but the model "
            "sees one order for the whole run: the sampler has to be told the epoch.",
            SET_EPOCH,
        )
    return (
        f"{WORLD} ranks read {ITEMS // WORLD} distinct items each, all {ITEMS} together, and the order changes "
        "from epoch 0 to epoch 1 — what DistributedSampler with set_epoch gives every rank in DDP."
    )


@exercise(
    EXERCISES, "ch04-ex2", "what the last rank reads of 11 items", section=PADDING, expects="a list of item indices"
)
def _padding(answer: Any) -> str:
    truth = list(DistributedSampler(range(11), num_replicas=4, rank=3, shuffle=False))
    if not isinstance(answer, (list, tuple)) or not all(is_whole_number(i) for i in answer):
        raise WrongType(f"give the indices rank 3 reads as a list of whole numbers, e.g. [1, 2], not {kind(answer)}.")
    answer = list(answer)
    if answer == truth:
        return (
            f"rank 3 reads {truth}: every rank takes every 4th item from its own rank on, and since 11 items do not "
            "fill 4 ranks equally the sampler repeats items from the start, so that every rank takes the same "
            "number of steps. Evaluate on unpadded shards."
        )
    if len(answer) < len(truth):
        raise Hint(
            "every rank gets the same number of items, even when the dataset does not divide evenly: each step "
            "ends in an all-reduce that waits for every rank. What does the sampler do about the missing "
            "places?",
            PADDING,
        )
    if len(answer) > len(truth):
        raise Hint("11 items on 4 ranks: each rank gets 11 ÷ 4 rounded up items, no more.", PADDING)
    raise Hint(
        "without shuffling, rank r takes every world-size-th item starting at r; the places left over are "
        "filled from the start of the dataset.",
        PADDING,
    )


SECTIONS = {
    "script": "section 1 · “From one device to DDP: the script”",
    "split": NO_SPLIT,
    "set_epoch": SET_EPOCH,
    "save": "section 7 · “Training: save on rank 0, barrier, map_location”",
    "grads": "section 10 · “DDP's gradients are those of one process on the whole batch”",
    "collective": "section 8 · “A collective that only some ranks call”",
}


@exercise(
    EXERCISES,
    "ch04-ex3",
    "your DDP script, run under torchrun",
    section=SECTIONS["script"],
    expects='the path of your DDP script, e.g. "my_ddp.py"',
)
def _ddp_script(answer: Any) -> str:
    from .ch04_script import check_ddp_script  # torchrun's run and its checks: loaded for this exercise only

    return check_ddp_script(answer, SECTIONS)
