"""Checkers for the exercises of notebooks/01_cpu_gpu_transfer.ipynb: moving a step to a device (buffers included),
copy or share, bytes in half precision, and comparing two steps with torch.utils.benchmark.Timer. The ``meta``
device stands in for a GPU, as in the chapter."""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
import torch
from torch import nn

from ..core.arguments import is_real_number
from .feedback import Exercise, Hint, WrongType, call_learner, exercise, first_line, kind
from .tensors import close_tensor

EXERCISES: dict[str, Exercise] = {}

COPY_OR_SHARE = "section 1 · “Lists, arrays, tensors: copy or share?”"
TO_AND_CUDA = "section 2 · “.to() / .cuda(): a tensor returns a new one, a module moves itself”"
BUFFERS = "section 3 · “Buffers move with modules”"
HALF = "section 4 · “Half precision”"
BIG = "section 5 · “The very big module”"
TIMING = "section 6 · “Timing GPU work”"


def _step_parts() -> tuple[nn.Module, nn.Module, torch.Tensor, torch.Tensor]:
    gen = torch.Generator().manual_seed(0)
    model = nn.Linear(4, 2)
    with torch.no_grad():
        model.weight.copy_(torch.randn(2, 4, generator=gen))
        model.bias.zero_()
    criterion = nn.CrossEntropyLoss(weight=torch.tensor([1.0, 3.0]))
    return model, criterion, torch.randn(5, 4, generator=gen), torch.tensor([0, 1, 1, 0, 1])


def _left_behind(model: nn.Module, criterion: nn.Module, device: str) -> Hint | None:
    if model.weight.device.type != device:
        return Hint(
            f"the model's parameters are on {model.weight.device.type}, not on {device}. A module's "
            ".to(device) moves its parameters and buffers in place.",
            TO_AND_CUDA,
        )
    if criterion.weight.device.type != device:
        return Hint(
            f"the model is on {device}, but the loss function's class weights are on "
            f"{criterion.weight.device.type}: a criterion with weights holds them as a buffer, and it must "
            "be on the inputs' device too.",
            BUFFERS,
        )
    return None


def _reached_for_cuda(device: str, what: str) -> Hint:
    return Hint(
        f"your function reached for CUDA although it was asked for device={device!r} ({what}). Use the "
        "device parameter everywhere, never a fixed 'cuda': the same function must run on any device.",
        TO_AND_CUDA,
    )


def _explain_failure(model: nn.Module, criterion: nn.Module, device: str, exc: Exception) -> Hint:
    text = str(exc).lower()
    if "cuda" in text or "nvidia" in text:  # no usable GPU here: the fixed 'cuda' fails
        return _reached_for_cuda(device, f"{type(exc).__name__}: {first_line(exc)}")
    behind = _left_behind(model, criterion, device)
    if behind is not None:
        return behind
    if "item" in text or "meta tensors" in text:
        return Hint(
            "return the loss tensor itself: .item() copies a number back to the host, which the meta device "
            "(standing in for a GPU here) cannot do, and which a GPU does only by waiting for the work.",
            TO_AND_CUDA,
        )
    return Hint(
        f"the model and the criterion are on {device}, but the call still failed ({type(exc).__name__}: "
        f"{first_line(exc)}). Is the batch there too? A tensor's .to(device) returns a new tensor and leaves "
        "the original where it was: use the one it returns.",
        TO_AND_CUDA,
    )


@exercise(
    EXERCISES,
    "ch01-ex1",
    "one loss computation on any device",
    section=BUFFERS,
    expects="a function weighted_loss(model, criterion, x, y, device) that returns the loss tensor",
)
def _weighted_loss(answer: Any) -> str:
    for device in ("cpu", "meta"):
        model, criterion, x, y = _step_parts()
        reference = criterion(model(x), y).detach() if device == "cpu" else None
        loss = call_learner(
            answer,
            model,
            criterion,
            x,
            y,
            device,
            name="weighted_loss",
            expects="a function weighted_loss(model, criterion, x, y, device)",
            explain=functools.partial(_explain_failure, model, criterion, device),
        )
        if not isinstance(loss, torch.Tensor):
            raise WrongType(
                f"weighted_loss returned {kind(loss)}: return the loss tensor itself (the notebook "
                "calls .item() on it when it wants a number on the host).",
                TO_AND_CUDA,
            )
        on_cuda = [
            what
            for what, t in (("the model", model.weight), ("the class weights", criterion.weight), ("the loss", loss))
            if t.device.type == "cuda"
        ]
        if on_cuda:  # a GPU machine, where a fixed 'cuda' works
            raise _reached_for_cuda(device, f"{', '.join(on_cuda)} ended up on cuda")
        behind = _left_behind(model, criterion, device)
        if behind is not None:
            raise behind
        if loss.device.type != device:
            raise Hint(
                f"with device={device!r} the loss came back on {loss.device.type}: compute it from the model, "
                "the criterion and the batch on that device.",
                TO_AND_CUDA,
            )
        if reference is not None and (loss.shape != () or not close_tensor(loss, reference)):
            raise Hint(
                "the loss differs from the weighted cross-entropy of the model's output: compute it with the "
                "criterion you were given (its class weights are part of the loss).",
                BUFFERS,
            )
    return (
        "on cpu and on meta (the stand-in for a GPU) the model, the criterion's class weights (a buffer) and the "
        "batch all went to the device you passed, and the loss was computed there; on cpu it equals the "
        "weighted cross-entropy."
    )


CONVERSIONS: dict[str, str] = {
    "a": "torch.tensor(arr)",
    "b": "torch.from_numpy(arr)",
    "c": "torch.as_tensor(arr)",
    "d": "torch.Tensor(arr.tolist())",
    "e": "torch.as_tensor(arr, dtype=torch.float32)",
    "f": 'torch.from_numpy(arr).to("cpu")',
}
WHY: dict[str, str] = {
    "a": "lowercase torch.tensor(data) always copies the data it is given",
    "b": "torch.from_numpy wraps the array's own memory",
    "c": "torch.as_tensor keeps the array's memory when it can (same dtype, CPU)",
    "d": ".tolist() makes Python numbers: a tensor built from a list holds copies of them",
    "e": "asking for another dtype means converting every number, and a conversion is a copy",
    "f": ".to() on a tensor returns the very same tensor when there is nothing to change",
}


def shares_memory() -> dict[str, bool]:
    """Run each conversion on a fresh ``np.array([1, 2, 3])`` and look: does changing the array change the tensor?"""
    out = {}
    for letter, code in CONVERSIONS.items():
        arr = np.array([1, 2, 3])
        tensor = eval(code, {"torch": torch, "arr": arr})  # our own fixed expressions, shown in the exercise
        arr[0] = 100
        out[letter] = bool(tensor[0].item() == 100)
    return out


@exercise(
    EXERCISES,
    "ch01-ex2",
    "which conversions share memory?",
    section=COPY_OR_SHARE,
    expects='the set of letters of the conversions that share memory with arr, e.g. {"a", "b"}',
)
def _share(answer: Any) -> str:
    if isinstance(answer, str):
        picked = {c for c in answer.lower() if c.isalpha()}
    elif isinstance(answer, (set, frozenset, list, tuple)) and all(isinstance(x, str) for x in answer):
        picked = {x.strip().lower() for x in answer}
    else:
        raise WrongType(f'give the letters as a set of strings, e.g. {{"a", "b"}}, not {kind(answer)}.')
    unknown = sorted(picked - set(CONVERSIONS))
    if unknown:
        raise WrongType(f"{', '.join(map(repr, unknown))}: the conversions are lettered {', '.join(CONVERSIONS)}.")
    truth = shares_memory()
    sharing = {k for k, v in truth.items() if v}
    for letter in sorted(picked - sharing):
        raise Hint(f"{letter}) {CONVERSIONS[letter]} copies: {WHY[letter]}.", COPY_OR_SHARE)
    for letter in sorted(sharing - picked):
        raise Hint(f"one you left out shares memory: {WHY[letter]}.", TO_AND_CUDA if letter == "f" else COPY_OR_SHARE)
    return (
        "right, and checked by running each one: changing arr in place changed exactly the tensors from "
        f"{', '.join(CONVERSIONS[k] for k in sorted(sharing))}."
    )


def linear_bytes(dtype: torch.dtype, *, bias: bool = True) -> int:
    """Bytes of ``nn.Linear(12800, 6400)``'s parameters in ``dtype``, built on ``meta`` (nothing allocated)."""
    layer = nn.Linear(12800, 6400, bias=bias, device="meta", dtype=dtype)
    return sum(p.numel() * p.element_size() for p in layer.parameters())


@exercise(EXERCISES, "ch01-ex3", "bytes of a layer in half precision", section=HALF, expects="a whole number of bytes")
def _half_bytes(answer: Any) -> str:
    if not is_real_number(answer):
        raise WrongType(f"give a number of bytes (an int), not {kind(answer)}.")
    truth = linear_bytes(torch.float16)
    numbers_total = truth // 2
    if answer == truth:
        return (
            f"{truth:,} bytes: {numbers_total:,} numbers (weight 6400 × 12800, bias 6400) × 2 bytes, "
            f"{truth / 2**20:.1f} MiB; float32 takes twice that."
        )
    if answer == linear_bytes(torch.float32):
        raise Hint("that is the size in float32 (4 bytes a number); the question asks for float16.", HALF)
    if answer == linear_bytes(torch.float16, bias=False):
        raise Hint("that is the weight alone: the bias is a parameter too.", BIG)
    if answer in (numbers_total, numbers_total - 6400):
        raise Hint("that is how many numbers the layer holds; the question asks how many bytes they take.", HALF)
    if abs(answer * 2**20 - truth) < 2**20 or abs(answer * 1e6 - truth) < 1e6:
        raise Hint("that looks like mebibytes or megabytes: give the answer in bytes.", HALF)
    raise Hint(
        "count the numbers in the weight (outputs × inputs) and in the bias (one per output), then the bytes "
        "each takes in float16. gpulab.module_size can check you without allocating anything.",
        BIG,
    )


MIN_CALLS = 10  # a timing that called a step fewer times than this measured one sample, not a median


def timing_pairs() -> dict[str, tuple[Any, Any, tuple[float, float]]]:
    """(a, b, the range b's time ÷ a's time must fall in): one sum against sixteen of the same, and a sum against
    itself. The ranges are wide (on a 2-core machine at a load of 10, a sum against itself once read 2.1×), so that
    a busy machine does not move a right answer out of them, and they do not overlap."""
    x = torch.randn(100_000, generator=torch.Generator().manual_seed(0))

    def one() -> None:
        x.sum()

    def sixteen() -> None:
        for _ in range(16):
            x.sum()

    return {"one sum against sixteen": (one, sixteen, (3.0, 64.0)), "a sum against itself": (one, one, (1 / 3, 3.0))}


def _counted(fn: Any, calls: list[int]) -> Any:
    def counted() -> None:
        calls.append(1)
        fn()

    return counted


@exercise(
    EXERCISES,
    "ch01-ex4",
    "which step is faster, and by how much?",
    section=TIMING,
    expects="a function times_faster(a, b) that returns b's time ÷ a's time, as a number",
)
def _times_faster(answer: Any) -> str:
    for what, (a, b, (low, high)) in timing_pairs().items():
        calls_a: list[int] = []
        calls_b: list[int] = []
        result = call_learner(
            answer,
            _counted(a, calls_a),
            _counted(b, calls_b),
            name="times_faster",
            expects="a function times_faster(a, b)",
        )
        if not is_real_number(result):
            raise WrongType(
                f"times_faster returned {kind(result)}: return a number, b's time ÷ a's time (a Measurement's "
                ".median is a time in seconds).",
                TIMING,
            )
        if min(len(calls_a), len(calls_b)) < MIN_CALLS:
            raise Hint(
                f"for {what} your function called a step {min(len(calls_a), len(calls_b))} time(s): one call is one "
                "sample of a noisy clock. Let torch.utils.benchmark.Timer repeat it (blocked_autorange) and compare "
                "the medians.",
                TIMING,
            )
        if low <= result <= high:
            continue
        if result > 0 and low <= 1 / result <= high:
            raise Hint(
                f"for {what} you returned {result:.3g}, which is a's time ÷ b's time: the question asks how many "
                "times faster a is, b's time ÷ a's time.",
                TIMING,
            )
        if abs(result) < 1e-2:
            raise Hint(
                f"for {what} you returned {result:.3g}, which looks like a time or a difference of times in seconds; "
                "return the ratio of the two medians.",
                TIMING,
            )
        raise Hint(
            f"for {what} b's time ÷ a's time should lie between {low:g} and {high:g}; yours was {result:.3g}. Time "
            "each step with its own Timer and divide b's median by a's.",
            TIMING,
        )
    return (
        "sixteen sums came out many times slower than one, and a sum against itself near 1: medians of repeated "
        "blocks, compared as a ratio, are what torch.utils.benchmark.Timer is for."
    )
