"""Checkers for the exercises of notebooks/03_dataparallel.ipynb: loading a DataParallel checkpoint into a plain
model, and how DataParallel cuts a batch."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from ..core.arguments import is_whole_number
from .feedback import Exercise, Hint, WrongType, call_learner, exercise, kind
from .tensors import same_weights

EXERCISES: dict[str, Exercise] = {}

PREFIX = "“The module. prefix”"
FIVE_STEPS = "“The five steps, by hand”"


class Encoder(nn.Module):
    """A model with a child called ``submodule``: its keys contain ``module.`` once more, after the prefix."""

    def __init__(self, seed: int) -> None:
        super().__init__()
        torch.manual_seed(seed)
        self.submodule = nn.Linear(6, 4)
        self.head = nn.Linear(4, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """The head applied to the submodule's output (after a ReLU)."""
        return self.head(torch.relu(self.submodule(x)))


def _explain(exc: Exception) -> Hint | None:
    text = str(exc)
    if "Missing key(s)" in text or "Unexpected key(s)" in text:
        if '"module.' not in text:  # the prefix is gone, but so is part of a layer's name
            return Hint(
                "the keys still do not match the model's (the error lists them). Remove the prefix only "
                "where it starts a key: 'submodule.' is part of a layer's name.",
                PREFIX,
            )
        return Hint(
            "load_state_dict refused the keys (the error lists them): the wrapped model saved every key "
            "under its attribute name.",
            PREFIX,
        )
    return None


@exercise(
    EXERCISES,
    "ch03-ex1",
    "load a DataParallel checkpoint into a plain model",
    section=PREFIX,
    expects="a function load_plain(model, state_dict) that loads the saved weights into model",
)
def _load_plain(answer: Any) -> str:
    wrapped = nn.DataParallel(Encoder(seed=1))  # on one GPU this moves it to cuda:0, and so the saved weights
    saved = wrapped.state_dict()
    plain = Encoder(seed=2)
    result = call_learner(
        answer,
        plain,
        saved,
        name="load_plain",
        none_ok=True,
        expects="a function load_plain(model, state_dict)",
        explain=_explain,
    )
    if result is not None and not isinstance(result, nn.Module) and not hasattr(result, "missing_keys"):
        raise WrongType(f"load_plain returned {kind(result)}: load into the model you are given and return it.")
    if same_weights(plain, wrapped.module):
        return (
            "every weight of the wrapped model arrived in the plain one, and a layer named 'submodule' kept its "
            "name: only the leading 'module.' was removed."
        )
    if same_weights(plain, Encoder(seed=2)):
        raise Hint(
            "nothing was loaded into the model. If you passed strict=False, that is why: it skips every key that "
            "does not match, silently, so it hides the prefix instead of removing it.",
            PREFIX,
        )
    raise Hint(
        "the model's weights are not the saved ones: load the saved state dict into the model you are given "
        "(strict=False skips every key that does not match, silently).",
        PREFIX,
    )


def chunk_sizes(batch: int, devices: int) -> list[int]:
    """How DataParallel cuts ``batch`` rows for ``devices`` GPUs: ``Tensor.chunk``, as torch's scatter does."""
    return [len(c) for c in torch.arange(batch).chunk(devices)]


BATCHES = (30, 9)
GPUS = 4


@exercise(
    EXERCISES,
    "ch03-ex2",
    "how DataParallel cuts a batch",
    section=FIVE_STEPS,
    expects="a dict {30: [sizes], 9: [sizes]}: the chunk each GPU gets, GPU by GPU",
)
def _chunks(answer: Any) -> str:
    if not isinstance(answer, dict) or set(answer) != set(BATCHES):
        raise WrongType(
            f"give a dict with the keys {BATCHES[0]} and {BATCHES[1]} (the batch sizes), each mapped to a "
            f"list of chunk sizes; got {kind(answer)}."
        )
    for batch in BATCHES:
        sizes = answer[batch]
        if not isinstance(sizes, (list, tuple)) or not all(is_whole_number(s) for s in sizes):
            raise WrongType(
                f"batch {batch}: give a list of whole numbers, one per GPU that gets a chunk; got {kind(sizes)}."
            )
        truth = chunk_sizes(batch, GPUS)
        if list(sizes) == truth:
            continue
        if sum(sizes) != batch:
            raise Hint(
                f"batch {batch}: your chunks add up to {sum(sizes)}. DataParallel cuts the batch, so every "
                "image goes to exactly one GPU.",
                FIVE_STEPS,
            )
        if 0 in sizes:
            raise Hint(
                f"batch {batch}: a GPU left with nothing gets no chunk at all, not an empty one (DataParallel "
                "then runs on fewer GPUs).",
                FIVE_STEPS,
            )
        raise Hint(
            f"batch {batch}: DataParallel does not share the images out as evenly as possible: it cuts with "
            "Tensor.chunk, as torch's scatter does (the chapter compares the two).",
            FIVE_STEPS,
        )
    return (
        f"{BATCHES[0]} images on {GPUS} GPUs are {chunk_sizes(BATCHES[0], GPUS)}, and {BATCHES[1]} are "
        f"{chunk_sizes(BATCHES[1], GPUS)}: Tensor.chunk gives every chunk but the last the same size, so a small "
        "last batch can leave a GPU idle."
    )
