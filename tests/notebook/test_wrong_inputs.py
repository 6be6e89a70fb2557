"""Wrong inputs to the shell demo, refused with what to pass; a script past its time limit is stopped with every
process it started, and says so; junk never escapes as anything but one of our documented refusals."""

from __future__ import annotations

import time

import psutil
import pytest
from hypothesis import given, settings

from gpulab.notebook.shell import run_shell
from tests.junk import JUNK, assert_ours

WRONG = [
    (lambda: run_shell(5), TypeError, r"script=5 is a int; script takes text, a str"),
    (lambda: run_shell("true", env="A=1"), TypeError, r"env='A=1': env is the whole environment of the process"),
    (lambda: run_shell("true", env={"A": 1}), TypeError, r"env\['A'\]=1 is a int: environment values are text"),
    (
        lambda: run_shell("true", cwd="/nonexistent-gpulab"),
        NotADirectoryError,
        r"cwd='/nonexistent-gpulab' is not a "
        r"directory here",
    ),
    (lambda: run_shell("true", timeout_s="1m"), TypeError, r"timeout_s='1m' is a str; timeout_s takes a positive"),
    (lambda: run_shell("true", timeout_s=0), ValueError, r"timeout_s=0: timeout_s must be a positive number"),
]


@pytest.mark.parametrize("call, kind, message", WRONG, ids=[m[:50] for _, _, m in WRONG])
def test_each_wrong_input_gets_what_was_wrong_and_what_to_type(call, kind, message):
    with pytest.raises(kind, match=message):
        call()


def test_a_script_past_its_time_limit_is_stopped_with_its_children(tmp_path):
    marker = f"gpulab-test-{time.monotonic_ns()}"
    with pytest.raises(
        TimeoutError,
        match=r"ran longer than timeout_s=1 s and was stopped \(with every process it "
        r"started\). What it printed first:\n.*started",
    ):
        run_shell(f"echo started; sleep 30 & exec -a {marker} sleep 30", cwd=tmp_path, timeout_s=1)
    time.sleep(0.2)
    left = [p for p in psutil.process_iter(["cmdline"]) if marker in " ".join(p.info["cmdline"] or [])]
    assert left == []


def test_none_in_env_removes_a_variable():
    assert run_shell("echo ${HOME:-unset}", env={"HOME": None}).output.strip().endswith("unset")


@settings(max_examples=40, deadline=None)
@given(JUNK, JUNK)
def test_junk_is_refused_with_our_message(a, b):
    for call in (lambda: run_shell("true", env=a, timeout_s=b), lambda: run_shell("true", cwd=a)):
        try:
            call()
        except Exception as exc:
            assert_ours(exc)
