"""Wrong inputs to the measurements, refused before anything is timed or allocated, with what to type instead; junk
never escapes as anything but one of our documented refusals."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings

import gpulab
from gpulab.measure.timing import benchmark, synchronize
from tests.junk import JUNK, assert_ours

CPU = {"device": "cpu", "pinned": (False,)}

WRONG = [
    (
        lambda: benchmark(5),
        TypeError,
        r"benchmark\(\) needs a function to call, got int: wrap the work in a "
        r"lambda",
    ),
    (lambda: benchmark(lambda x: x), TypeError, r"fn=<lambda> is called with no arguments, but it needs x"),
    (lambda: benchmark(lambda: 1, device="gpu"), ValueError, r"'gpu' is not a device name torch understands"),
    (lambda: benchmark(lambda: 1, device=None), TypeError, r"None is not a device name torch understands"),
    (
        lambda: benchmark(lambda: 1, device="cuda"),
        RuntimeError,
        r"device 'cuda' was asked for, but this "
        r"process needs 1 CUDA GPU",
    ),
    (
        lambda: benchmark(lambda: 1, repeats="5"),
        TypeError,
        r"repeats='5' is a str; repeats \(timed repeats, whose median is reported; .*\) takes a whole number",
    ),
    (
        lambda: benchmark(lambda: 1, number=2.5),
        TypeError,
        r"number=2.5 is a float; number \(calls per repeat\) takes a whole number ≥ 1",
    ),
    (lambda: benchmark(lambda: 1, clock=5), TypeError, r"clock=5 is a int, not something to call"),
    (lambda: benchmark(lambda: 1, label=5), TypeError, r"label=5 is a int; label takes text"),
    (lambda: synchronize("gpu"), ValueError, r"'gpu' is not a device name"),
    (
        lambda: gpulab.bandwidth_sweep(1024, **CPU),
        TypeError,
        r"sizes_bytes=1024: sizes_bytes takes a list of copy "
        r"sizes in bytes; for this one alone write "
        r"sizes_bytes=\[1024\]",
    ),
    (
        lambda: gpulab.bandwidth_sweep(["1KB"], **CPU),
        TypeError,
        r"sizes_bytes holds str '1KB': copy sizes in bytes "
        r"are whole numbers",
    ),
    (lambda: gpulab.bandwidth_sweep([1.5], **CPU), TypeError, r"sizes_bytes holds float 1.5"),
    (lambda: gpulab.bandwidth_sweep([], **CPU), ValueError, r"sizes_bytes=\[\]: give one or more positive byte counts"),
    (
        lambda: gpulab.bandwidth_sweep([2**60], **CPU),
        ValueError,
        r"the largest copy \(1024.0 PiB\) needs 2048.0 PiB "
        r"of host memory, and only .* is free here",
    ),
    (lambda: gpulab.bandwidth_sweep([1024]), RuntimeError, r"device 'cuda' was asked for"),
    (
        lambda: gpulab.bandwidth_sweep([1024], device="cpu"),
        ValueError,
        r"pinned \(page-locked\) host memory only "
        r"matters for copies to or from a GPU",
    ),
    (lambda: gpulab.bandwidth_sweep([1024], device="cpu", pinned="no"), ValueError, r"pinned='no': use True, False"),
    (
        lambda: gpulab.bandwidth_sweep([1024], non_blocking="yes", **CPU),
        TypeError,
        r"non_blocking='yes': "
        r"non_blocking takes True or False",
    ),
    (
        lambda: gpulab.module_size("resnet"),
        TypeError,
        r"module_size\(\) takes an nn.Module, or a class/function that "
        r"builds one; got str",
    ),
    (
        lambda: gpulab.module_size(torch.nn.Linear),
        TypeError,
        r"module_or_factory=Linear is called with no arguments, "
        r"but it needs in_features, out_features. Wrap the call "
        r"in a lambda .*=lambda: nn.Linear\(1024, 1024\)",
    ),
    (lambda: gpulab.module_size(lambda: None), TypeError, r"the factory returned a NoneType, not an nn.Module"),
    (lambda: gpulab.module_size(torch.nn.Linear(2, 2), name=5), TypeError, r"name=5 is a int; name takes text"),
    (lambda: gpulab.allocated_bytes(5), TypeError, r"make=5 is a int, not something to call"),
    (
        lambda: gpulab.allocated_bytes(lambda n: n),
        TypeError,
        r"make=<lambda> is called with no arguments, but it "
        r"needs n",
    ),
]


@pytest.mark.parametrize("call, kind, message", WRONG, ids=[m[:50] for _, _, m in WRONG])
def test_each_wrong_input_gets_what_was_wrong_and_what_to_type(call, kind, message):
    with pytest.raises(kind, match=message):
        call()


def test_one_pinned_value_is_taken_as_a_list_of_one():
    sweep = gpulab.bandwidth_sweep([1024], device="cpu", pinned=False, warmup=0, repeats=1)
    assert [(m.direction, m.pinned) for m in sweep.measurements] == [("h2d", False), ("d2h", False)]


@settings(max_examples=60, deadline=None)
@given(JUNK, JUNK, JUNK)
def test_junk_is_refused_with_our_message_before_any_work(a, b, c):
    calls = (
        lambda: benchmark(a, device=b, repeats=1, warmup=0),
        lambda: benchmark(lambda: None, device="cpu", warmup=a, repeats=b, number=c),
        lambda: benchmark(lambda: None, label=a, clock=b, repeats=1, warmup=0),
        lambda: gpulab.bandwidth_sweep(a, device=b, pinned=c, warmup=0, repeats=1),
        lambda: gpulab.bandwidth_sweep([64], device="cpu", pinned=a, non_blocking=b, repeats=c),
        lambda: gpulab.module_size(a, name=b),
        lambda: gpulab.allocated_bytes(a, what=b),
        lambda: synchronize(a),
    )
    for call in calls:
        try:
            call()
        except Exception as exc:
            assert_ours(exc)
