"""Chapter 07's accumulation exercise is checked in 2 real gloo ranks by counting all-reduces: a right step passes,
and each wrong one is told what is missing."""

from __future__ import annotations

import contextlib

import pytest

from gpulab import check

from ..ranks.conftest import no_process_left  # noqa: F401  (the fixture)


def right(model, optimizer, micro_batches):
    for i, x in enumerate(micro_batches):
        with model.no_sync() if i < len(micro_batches) - 1 else contextlib.nullcontext():
            (model(x).square().mean() / len(micro_batches)).backward()
    optimizer.step()
    optimizer.zero_grad()


def every_micro_batch_syncs(model, optimizer, micro_batches):
    for x in micro_batches:
        model(x).square().mean().backward()
    optimizer.step()
    optimizer.zero_grad()


def never_syncs(model, optimizer, micro_batches):
    with model.no_sync():
        for x in micro_batches:
            model(x).square().mean().backward()
    optimizer.step()
    optimizer.zero_grad()


def never_zeroes(model, optimizer, micro_batches):
    for i, x in enumerate(micro_batches):
        with model.no_sync() if i < len(micro_batches) - 1 else contextlib.nullcontext():
            (model(x).square().mean() / len(micro_batches)).backward()
    optimizer.step()


def never_divides(model, optimizer, micro_batches):
    for i, x in enumerate(micro_batches):
        with model.no_sync() if i < len(micro_batches) - 1 else contextlib.nullcontext():
            model(x).square().mean().backward()  # the sum of 4 micro-batches' gradients: 4 times the learning rate
    optimizer.step()
    optimizer.zero_grad()


def does_nothing(model, optimizer, micro_batches):
    pass


def raises(model, optimizer, micro_batches):
    model(micro_batches).backward()  # a list, not a tensor


def test_the_right_step_passes(no_process_left):
    feedback = check("ch07-ex2", right)
    assert feedback.verdict == "correct", str(feedback)
    assert "one all-reduce per step of 4 micro-batches" in str(feedback)


@pytest.mark.parametrize(
    "answer, words",
    [
        (every_micro_batch_syncs, "each step all-reduced 4 times, once per micro-batch"),
        (never_syncs, "every backward ran under no_sync(), so the gradients never left the rank"),
        (never_divides, "trains as if the learning rate were 4 times larger. Divide each micro-batch's loss"),
        (never_zeroes, "then optimizer.zero_grad(), so that the next step starts from zero"),
        (does_nothing, "ran but trained nothing"),
        (raises, "your accumulate_step failed in a rank"),
        (42, "accumulate_step should be a function"),
    ],
)
def test_each_wrong_step_is_told_what_is_missing(answer, words, no_process_left):
    feedback = check("ch07-ex2", answer)
    assert feedback.verdict != "correct" and words in str(feedback), str(feedback)
