"""The hang watchdog with real gloo ranks: a collective only some ranks call is reported with every rank's frame and
the collective, then no process is left; the stop button; and the parsing of real faulthandler dumps and
tracebacks."""

from __future__ import annotations

import faulthandler
import time

import pytest
import torch
import torch.distributed as dist

from gpulab.ranks.failures import RankFailed
from gpulab.ranks.launcher import launch
from gpulab.ranks.stacks import RULE, HangReport, parse_stack, rank_stack

from .processes import run_python


def evaluate(seconds: float) -> None:
    time.sleep(seconds)  # rank 1 is here while rank 0 waits


def only_rank_0_reduces() -> float:
    t = torch.ones(2)
    if dist.get_rank() == 0:
        dist.all_reduce(t)  # rank 0 waits here
    else:
        evaluate(60)
    return float(t.sum())


def lines_of(fn, text: str) -> int:
    import inspect

    source, first = inspect.getsourcelines(fn)
    return first + next(i for i, line in enumerate(source) if text in line)


def test_two_ranks_the_report_names_each_ranks_frame_and_the_collective(no_process_left):
    with pytest.raises(RankFailed) as info:
        launch(only_rank_0_reduces, world_size=2, timeout_s=3)
    text = str(info.value)
    reduce_line, sleep_line = lines_of(only_rank_0_reduces, "all_reduce(t)"), lines_of(evaluate, "time.sleep")
    assert "Watchdog: the collective timeout (3 s) ran out in rank 0" in text, text
    assert (
        f"rank 0 was waiting in all_reduce at test_watchdog.py, line {reduce_line} (`dist.all_reduce(t)  # rank 0 "
        "waits here`)"
    ) in text
    assert f"rank 1 is in `evaluate()` at test_watchdog.py, line {sleep_line}" in text
    assert "and never called all_reduce" in text and RULE in text and "Rank(s) 1 never reached this all_reduce" in text


def three_reduce_one_broadcasts() -> None:
    t = torch.ones(2)
    if dist.get_rank() == 3:
        dist.broadcast(t, src=0)  # the odd one out
    else:
        dist.all_reduce(t)


@pytest.mark.slow
def test_four_ranks_the_odd_collective_is_named(no_process_left):
    with pytest.raises(RankFailed) as info:
        launch(three_reduce_one_broadcasts, world_size=4, timeout_s=4)
    text = str(info.value)
    for r in range(3):
        assert f"rank {r} was waiting in all_reduce" in text or f"rank {r} waits in all_reduce" in text, text
    assert "rank 3 " in text and "in broadcast" in text and "— not all_reduce" in text
    assert "Rank(s) 3 never reached this all_reduce" in text


@pytest.mark.slow
def test_the_stop_button_reports_every_rank_before_stopping_them():
    out = run_python(
        """
        import os, signal, time, torch, torch.distributed as dist, gpulab

        def stuck(notebook_pid):
            if dist.get_rank() == 0:
                dist.barrier()
            else:
                time.sleep(1)  # rank 0 is in its barrier by now: press stop, as a learner would
                os.kill(notebook_pid, signal.SIGINT)
                time.sleep(120)

        if __name__ == "__main__":
            try:
                gpulab.launch(stuck, world_size=2, args=(os.getpid(),), timeout_s=100)
            except KeyboardInterrupt:
                print("interrupted")
    """,
        timeout=240,
    )
    assert "interrupted" in out.stdout, out.stderr
    assert "Watchdog: you stopped the cell" in out.stderr and "rank 0 waits in barrier" in out.stderr, out.stderr
    assert "rank 1 is in `stuck()` at <string>, line 10 and never called barrier" in out.stderr  # python -c


def _inner_dump(buf) -> None:
    faulthandler.dump_traceback(buf, all_threads=False)


def reduce_without_a_group() -> None:
    dist.all_reduce(torch.ones(1))


def test_a_real_faulthandler_dump_and_a_real_traceback_parse_outermost_first(tmp_path):
    path = tmp_path / "dump.txt"
    with open(path, "w") as f:
        _inner_dump(f)
    threads = parse_stack(path.read_text())
    assert threads[0][-1].function == "_inner_dump" and threads[0][-2].function.startswith("test_a_real")
    try:
        reduce_without_a_group()  # raises inside distributed_c10d's all_reduce
    except (ValueError, RuntimeError):
        import traceback

        tb = traceback.format_exc()
    stack = rank_stack(0, tb, "traceback")
    assert stack.collective == "all_reduce" and stack.learner.function == "reduce_without_a_group"
    report = HangReport((stack, rank_stack(1, path.read_text(), "stack")), "a test", {})
    assert "rank 1 is in `_inner_dump()`" in report.line_for(report.ranks[1])
    assert report.missing == (1,) and "never called all_reduce" in str(report)
