"""Chapter 06 passes under nbval on a machine where SLURM's ``srun`` is on ``PATH`` (every HPC login node, and CI once
``make test-cluster`` has installed SLURM). Lightning then warns on stderr in every fit that ``srun`` "is available
but not used", which nbval reads as an unexpected output; ``%load_ext gpulab`` drops exactly that message where no
SLURM job runs the kernel (``gpulab.machine.srun_notice``). Lightning only looks for an executable of that name, so
this test writes one; it fails if anything runs it."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from tests.process_group import run

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow  # chapter 06 runs once more
@pytest.mark.timeout(900)
def test_chapter_06_passes_nbval_with_an_srun_on_path(tmp_path):
    folder = tmp_path / "bin"
    folder.mkdir()
    srun = folder / "srun"
    srun.write_text("#!/bin/sh\necho 'srun was run: nothing in chapter 06 should run it' >&2\nexit 1\n")
    srun.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}
    env.update(PATH=f"{folder}{os.pathsep}{env['PATH']}", PYTHONPATH=str(ROOT), GPULAB_FAST="1")
    done = run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist", "-m", "",
         "notebooks/06_lightning.ipynb"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=840,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-6000:]
    assert "srun was run" not in done.stdout + done.stderr
