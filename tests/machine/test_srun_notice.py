"""machine.srun_notice: Lightning's "`srun` is available but not used" warning is dropped where no SLURM job runs the
process, in it and in the processes it starts, and nothing else is hidden. Real Lightning, with an ``srun`` on
``PATH`` that this test writes (Lightning only looks for one), in fresh interpreters."""

from __future__ import annotations

import os
import sys
import textwrap
import warnings
from pathlib import Path

import pytest

from gpulab.machine.srun_notice import PYTHONWARNINGS_ENTRY, SRUN_NOTICE, quiet_srun_notice, srun_notice_is_noise
from tests.process_group import run

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("environ", "srun_on_path", "noise"),
    [
        ({}, True, True),  # a login node, or a laptop with SLURM's client: no job
        ({"SLURM_JOB_ID": "7"}, True, False),  # inside a job (batch script, salloc's shell, a task): may be right
        ({"SLURM_JOB_ID": "7", "SLURM_NTASKS": "1"}, True, False),
        ({}, False, False),  # no srun: Lightning says nothing
    ],
)
def test_the_warning_is_noise_only_with_srun_and_no_job(environ, srun_on_path, noise):
    assert srun_notice_is_noise(environ, srun_on_path=srun_on_path) is noise


def test_it_adds_one_entry_to_pythonwarnings_and_keeps_the_learners():
    env = {"PYTHONWARNINGS": "error::ResourceWarning"}
    with warnings.catch_warnings():
        done = quiet_srun_notice(environ=env, srun_on_path=True)
        assert len(done) == 2
        assert env["PYTHONWARNINGS"] == f"error::ResourceWarning,{PYTHONWARNINGS_ENTRY}"
        assert quiet_srun_notice(environ=env, srun_on_path=True) == []  # a second call adds nothing
    with warnings.catch_warnings(record=True) as seen:
        warnings.resetwarnings()
        warnings.simplefilter("always")  # every warning shown, then ours in front of that, as a kernel has it
        quiet_srun_notice(environ={}, srun_on_path=True)
        warnings.warn(SRUN_NOTICE + ". HINT: …", UserWarning, stacklevel=1)
        warnings.warn("The `srun` command is missing", UserWarning, stacklevel=1)
    assert [str(w.message) for w in seen] == ["The `srun` command is missing"]


@pytest.mark.parametrize("environ", [{"SLURM_JOB_ID": "7"}, {}])
def test_inside_a_job_or_without_srun_nothing_changes(environ):
    env = dict(environ)
    with warnings.catch_warnings():
        before = list(warnings.filters)
        assert quiet_srun_notice(environ=env, srun_on_path="SLURM_JOB_ID" in environ) == []
        assert warnings.filters == before and env == environ


# One Lightning check, as a Trainer and fit() run it, then a warning of the learner's own; run by this script and by
# a process it starts, which inherits its environment (as chapter 06's scripts and ranks do).
_CHILD = "from lightning.fabric.plugins.environments import SLURMEnvironment; SLURMEnvironment.detect()"
_PARENT = textwrap.dedent(
    f"""
    import os, subprocess, sys, warnings
    if os.environ.get("QUIET") == "1":
        from gpulab.machine.srun_notice import quiet_srun_notice
        quiet_srun_notice()
    {_CHILD}
    warnings.warn("a real warning")
    sys.stderr.flush()
    subprocess.run([sys.executable, "-c", {_CHILD!r}], check=True)
    """
)


@pytest.fixture
def srun_on_path(tmp_path):
    """A ``PATH`` whose first folder holds an executable named srun (it fails if run: nothing should run it)."""
    folder = tmp_path / "bin"
    folder.mkdir()
    srun = folder / "srun"
    srun.write_text("#!/bin/sh\necho 'not a SLURM cluster' >&2\nexit 1\n")
    srun.chmod(0o755)
    return f"{folder}{os.pathsep}{os.environ['PATH']}"


def _run(path: str, **extra: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_") and k != "PYTHONWARNINGS"}
    env.update(PATH=path, PYTHONPATH=str(ROOT), **extra)
    done = run([sys.executable, "-c", _PARENT], capture_output=True, text=True, timeout=240, env=env)
    assert done.returncode == 0, done.stderr
    return done.stderr


@pytest.mark.timeout(600)
def test_real_lightning_warns_twice_without_it_and_not_at_all_with_it(srun_on_path):
    assert _run(srun_on_path).count(SRUN_NOTICE) == 2  # the script and the process it starts: the noise is real
    quiet = _run(srun_on_path, QUIET="1")
    assert SRUN_NOTICE not in quiet and "UserWarning: a real warning" in quiet
    in_a_job = _run(srun_on_path, QUIET="1", SLURM_JOB_ID="7", SLURM_JOB_NAME="interactive")
    assert in_a_job.count(SRUN_NOTICE) == 2  # inside a job it is left for the notebook to decide (docs/clusters.md)
