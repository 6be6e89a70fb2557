"""The fork/OpenMP hang, reproduced for real in fresh interpreters that are killed when they stall (never faked)."""

from __future__ import annotations

import sys

import psutil
import pytest

pytest.importorskip("lightning")

from gpulab.lightning.fork_hang import CAUSE, ENV_ONLY, FIX, TWO_THREADS, ForkVariant, fork_experiment  # noqa: E402


def _leftovers() -> list[str]:
    return [
        " ".join(p.info["cmdline"] or [])
        for p in psutil.process_iter(["cmdline"])
        if "fork_fit_variants" in " ".join(p.info["cmdline"] or [])
    ]


@pytest.mark.slow  # two of its four interpreters hang on purpose and are killed after 10 s without output each: 31 s
def test_forked_ranks_hang_after_openmp_and_the_fix_and_the_cause_hold():
    experiment = fork_experiment((CAUSE, FIX, ENV_ONLY, TWO_THREADS), stall_s=10.0)
    runs = {r.variant: r for r in experiment.runs}
    assert [r.variant for r in experiment.runs] == [CAUSE, FIX, ENV_ONLY, TWO_THREADS]
    assert (runs[CAUSE].outcome, runs[CAUSE].pool_started, runs[CAUSE].rank_threads) == ("finished", "no", (2, 2))
    assert (runs[FIX].outcome, runs[FIX].pool_started, runs[FIX].rank_threads) == ("finished", "yes", (1, 1))
    for hung in (runs[ENV_ONLY], runs[TWO_THREADS]):  # the second in a fresh interpreter, after its own CPU work
        assert (hung.outcome, hung.pool_started, hung.rank_threads) == ("hung", "yes", (2, 2))
        assert not any("first step done" in line for line in hung.lines)  # stuck before any rank finished a step
    assert "HUNG after" in str(experiment) and "<table" in experiment._repr_html_()
    assert _leftovers() == []  # the stuck interpreters and their forked ranks were killed


def test_an_interpreter_that_cannot_start_is_reported_as_failed(monkeypatch):
    monkeypatch.setattr(sys, "executable", "/bin/false")
    experiment = fork_experiment((FIX, TWO_THREADS), start_s=30)
    assert [r.outcome for r in experiment.runs] == ["failed"]
    assert "failed: no output" in str(experiment)


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        (
            {"fit_threads": 0},
            ValueError,
            r"fit_threads=0: fit_threads \(a number of threads\) must be a whole number ≥ 1",
        ),
        ({"work_threads": True}, TypeError, "work_threads=True is a bool"),
        ({"omp_num_threads": 0}, ValueError, "omp_num_threads=0"),
    ],
)
def test_bad_variants_are_refused(kwargs, error, match):
    with pytest.raises(error, match=match):
        ForkVariant(**({"label": "x", "omp_num_threads": 1, "fit_threads": 1} | kwargs))


def test_bad_plans_are_refused():
    with pytest.raises(ValueError, match="plan is empty"):
        fork_experiment(())
    with pytest.raises(ValueError, match="must be positive seconds"):
        fork_experiment((FIX,), stall_s=0)
