"""The article's crash, for real: a script without a main guard run with ddp_spawn (Lightning 1.x's default for
several devices) on 2 CPU processes. Three fresh interpreters import Lightning, so this takes about half a minute."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from tests import process_group

pytest.importorskip("lightning")

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = """
import lightning as L
from gpulab.lightning.classifier import DigitsClassifier
from gpulab.workload import load_digits

trainer = L.Trainer(accelerator="cpu", devices=2, strategy="ddp_spawn", max_epochs=1, logger=False,
                    enable_checkpointing=False, enable_progress_bar=False)
trainer.fit(DigitsClassifier(hidden=64), load_digits().loader(32))
print("fit returned")
"""


def test_ddp_spawn_without_a_main_guard_ends_in_exit_code_1_and_lightning_names_the_guard(tmp_path):
    (tmp_path / "t.py").write_text(SCRIPT)
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
        "OMP_NUM_THREADS": "1",
    }
    out = process_group.run(
        [sys.executable, "t.py"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=280
    )
    assert out.returncode == 1 and "fit returned" not in out.stdout
    assert "ProcessExitedException: process" in out.stderr and "terminated with exit code 1" in out.stderr
    assert "requires that your script guards the main" in out.stderr
