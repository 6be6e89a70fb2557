"""The door checks every public function shares: each wrong kind of value gets its own sentence, and junk never
gets past them as anything but a TypeError or ValueError of ours."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings

from gpulab.core.arguments import (
    choice,
    environment,
    gpu_list,
    index_list,
    is_real_number,
    is_whole_number,
    no_argument_function,
    positive_number,
    seconds,
    shown,
    whole_number,
    whole_numbers,
)
from gpulab.machine.simulated import SimulatedGpuReader
from tests.junk import JUNK, assert_ours

W8 = SimulatedGpuReader("workshop-8")

WRONG = [
    (lambda: whole_number("2", "n", minimum=1), TypeError, r"n='2' is a str; n takes a whole number ≥ 1"),
    (lambda: whole_number(2.0, "n"), TypeError, r"n=2.0 is a float; n takes a whole number"),
    (lambda: whole_number(True, "n"), TypeError, r"n=True is a bool"),
    (
        lambda: whole_number(0, "n", minimum=1, example="n=2"),
        ValueError,
        r"n=0: n must be a whole number ≥ 1 \(e.g. n=2\)",
    ),
    (
        lambda: whole_number(65, "gpus", maximum=64, what="GPUs per kernel", example="gpus=1"),
        ValueError,
        r"gpus=65: gpus \(GPUs per kernel\) must be a whole number from 0 to 64 \(e.g. gpus=1\)",
    ),
    (lambda: whole_number(2.5, "n", minimum=1, what="how many"), TypeError, r"n=2.5 is a float; n \(how many\) takes"),
    (lambda: positive_number("1e9", "flops"), TypeError, r"flops='1e9' is a str; flops takes a finite number > 0"),
    (lambda: positive_number(True, "share"), TypeError, r"share=True is a bool"),
    (
        lambda: positive_number(0, "rate", what="FLOP/s", example="rate=1e10"),
        ValueError,
        r"rate=0: rate \(FLOP/s\) must be a finite number > 0 \(e.g. rate=1e10\)",
    ),
    (
        lambda: positive_number(-1, "fixed_s", zero_ok=True),
        ValueError,
        r"fixed_s=-1: fixed_s must be a finite number ≥ 0",
    ),
    (lambda: positive_number(float("inf"), "x"), ValueError, r"x=inf: x must be a finite number > 0"),
    (lambda: positive_number(10**400, "x"), ValueError, r"x must be a finite number > 0"),
    (
        lambda: choice(8, "precision", (64, 32, 16, "bf16")),
        ValueError,
        r"precision=8: precision is one of 64, 32, 16, 'bf16'; e.g. precision=64",
    ),
    (lambda: choice(True, "precision", (64, 32, 16)), TypeError, r"precision=True: precision is one of 64, 32, 16"),
    (lambda: choice([16], "precision", (64, "bf16")), TypeError, r"precision=\[16\]: precision is one of"),
    (
        lambda: whole_numbers([], "sizes", example="[1024]", what="copy sizes", empty_ok=False),
        ValueError,
        r"sizes=list \[\] is empty: sizes takes at least one of the copy sizes, e.g. sizes=\[1024\]",
    ),
    (lambda: seconds("1ms", "wait_s"), TypeError, r"wait_s='1ms' is a str; wait_s takes a non-negative number of sec"),
    (lambda: seconds(-1, "wait_s"), ValueError, r"wait_s=-1: wait_s must be a non-negative number of seconds"),
    (lambda: seconds(float("nan"), "t"), ValueError, r"t=nan: t must be a non-negative number of seconds, and finite"),
    (lambda: seconds(0, "t", allow_zero=False), ValueError, r"t must be a positive number of seconds"),
    (
        lambda: environment("2,3"),
        TypeError,
        r"env='2,3': env is the whole environment of the process.*Write env=\{'CUDA_VISIBLE_DEVICES': '2,3'\}",
    ),
    (
        lambda: environment({"CUDA_VISIBLE_DEVICES": 2}),
        TypeError,
        r"env\['CUDA_VISIBLE_DEVICES'\]=2 is a int: environment values are text.*\{'CUDA_VISIBLE_DEVICES': '2'\}",
    ),
    (lambda: environment({"CUDA_VISIBLE_DEVICES": [2, 3]}), TypeError, r"\{'CUDA_VISIBLE_DEVICES': '2,3'\}"),
    (lambda: environment({1: "x"}), TypeError, r"env has the key 1, a int: variable names are text"),
    (lambda: environment([("A", "1")]), TypeError, r"env takes a dict of environment variables"),
    (
        lambda: gpu_list("workshop-8"),
        TypeError,
        r"gpus takes the GPUs themselves, not a name.*"
        r"gpus=gpulab.devices\('workshop-8'\)",
    ),
    (lambda: gpu_list(8), TypeError, r"gpus=int 8: gpus takes the GPUs as read by gpulab.devices\(\)"),
    (lambda: gpu_list([0, 1]), TypeError, r"gpus holds int 0, not a GPU reading"),
    (lambda: index_list(2, "gpus"), TypeError, r"gpus=2: .* For GPU 2 alone write gpus=\[2\]"),
    (lambda: index_list({2, 3}, "gpus"), TypeError, r"a set has no order, but the first GPU becomes cuda:0"),
    (lambda: index_list([0.5], "gpus"), TypeError, r"gpus holds float 0.5: physical GPU numbers .* are whole numbers"),
    (lambda: index_list([-1], "gpus"), ValueError, r"gpus holds -1: physical GPU numbers .* are ≥ 0"),
    (lambda: index_list("2,3", "gpus"), TypeError, r"gpus=str '2,3': gpus takes a list of physical GPU numbers"),
    (
        lambda: whole_numbers(1024, "sizes", minimum=1, example="[1024]", what="sizes"),
        TypeError,
        r"sizes=1024: sizes takes a list of sizes; for this one alone write sizes=\[1024\]",
    ),
    (
        lambda: whole_numbers(["1KB"], "sizes", minimum=1, example="[1024]", what="sizes"),
        TypeError,
        r"sizes holds str '1KB': sizes are whole numbers, e.g. sizes=\[1024\]",
    ),
    (
        lambda: no_argument_function(lambda x: x, "fn", example="lambda: f(x)"),
        TypeError,
        r"fn=<lambda> is called with no arguments, but it needs x. Wrap the call in a lambda",
    ),
    (lambda: no_argument_function(3, "fn", example="lambda: 1"), TypeError, r"fn=3 is a int, not something to call"),
]


@pytest.mark.parametrize("call, kind, message", WRONG, ids=[m[:40] for _, _, m in WRONG])
def test_each_wrong_value_is_refused_with_what_to_type(call, kind, message):
    with pytest.raises(kind, match=message):
        call()


def test_what_is_right_passes_through():
    assert whole_number(np.int64(3), "n") == 3 and seconds(2, "t") == 2.0 and index_list((3, 1), "g") == (3, 1)
    assert type(whole_number(np.int32(3), "n")) is int
    assert whole_numbers((np.uint8(1),), "n", example="", what="") == (1,)
    assert positive_number(np.float32(0.5), "share") == 0.5 and positive_number(0, "t", zero_ok=True) == 0.0
    assert choice(16.0, "precision", (64, 32, 16)) == 16 and choice(np.int64(32), "precision", (64, 32)) == 32
    assert choice("bf16", "precision", (16, "bf16")) == "bf16"
    assert [is_whole_number(v) for v in (3, np.int8(3), True, 3.0, "3", None)] == [True, True] + [False] * 4
    assert [is_real_number(v) for v in (3, np.float32(3), float("nan"), False, "3")] == [True, True, True, False, False]
    assert environment(None) is None and environment({"A": "1"}) == {"A": "1"}
    gpus = gpu_list(W8)  # a reader is read (no processes), an Inventory's GPUs are taken as they are
    assert len(gpus) == 8 and all(g.simulated for g in gpus)
    assert gpu_list(gpus) == gpus and gpu_list([]) == ()
    assert shown("x" * 500).endswith("(502 characters)") and len(shown("x" * 500)) < 90


@settings(max_examples=400, deadline=None)
@given(JUNK, JUNK)
def test_junk_is_refused_only_with_our_messages(a, b):
    for call in (
        lambda: whole_number(a, "n", minimum=1),
        lambda: seconds(a, "t"),
        lambda: environment(a),
        lambda: positive_number(a, "x"),
        lambda: choice(a, "precision", (64, 32, "bf16")),
        lambda: gpu_list(a),
        lambda: index_list(a, "gpus"),
        lambda: environment({"A": b}),
        lambda: whole_numbers(a, "sizes", minimum=1, example="[1]", what="sizes"),
        lambda: no_argument_function(a, "fn", example="lambda: 1"),
    ):
        try:
            call()
        except Exception as exc:
            assert_ours(exc)


@pytest.mark.parametrize("value", [1_180_591_620_717_411_303_424, 10**400, 4e7])
def test_seconds_beyond_a_year_are_refused_before_a_timer_overflows(value):
    with pytest.raises(ValueError, match="more than a year|finite"):
        seconds(value, "timeout_s", example="60")
