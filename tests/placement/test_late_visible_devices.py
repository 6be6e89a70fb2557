"""Chapter 02's script: CUDA_VISIBLE_DEVICES set after CUDA started changes nothing, in plain PyTorch (no gpulab in
it, so a learner can copy it); with gpulab imported in front of it, as the chapter runs it, the record names the line
that started CUDA. For real on a GPU machine (``gpu``); on a machine without one the attempt is named."""

from __future__ import annotations

import ast
import os
import re
import sys
from pathlib import Path

import pytest

from tests import process_group

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "notebooks" / "scripts" / "late_visible_devices.py"
_AT = next(i for i, line in enumerate(SCRIPT.read_text().splitlines(), 1) if "# CUDA starts here" in line)
LINE = f"late_visible_devices.py, line {_AT}: `x = torch.ones(2).cuda()  # CUDA starts here"
WITH_GPULAB = (
    "import gpulab, runpy\n"
    "runpy.run_path('scripts/late_visible_devices.py', run_name='__main__')\n"
    "print('gpulab.cuda_state():', gpulab.cuda_state())\n"
)  # what chapter 02's cell runs


def _run(*argv: str) -> str:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("CUDA_VISIBLE_DEVICES", None)
    out = process_group.run(
        [sys.executable, *argv], cwd=ROOT / "notebooks", capture_output=True, text=True, timeout=180, env=env
    )
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_the_script_a_learner_copies_imports_no_gpulab():
    tree = ast.parse(SCRIPT.read_text())
    imported = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    imported |= {n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    assert not any(m.split(".")[0] == "gpulab" for m in imported), imported


@pytest.mark.gpu
def test_on_a_gpu_hiding_every_gpu_after_cuda_started_changes_nothing_and_the_record_names_the_line():
    out = _run("scripts/late_visible_devices.py")
    if out.startswith("GPUs PyTorch counts: 0"):
        pytest.skip("this test needs 1 CUDA GPU(s); this machine has none")
    found = re.search(r"after CUDA_VISIBLE_DEVICES='': (\d+) GPU\(s\) \| a new tensor goes to cuda:0", out)
    assert found and int(found.group(1)) >= 1, out
    recorded = _run("-c", WITH_GPULAB)
    assert f"CUDA was started by {LINE}" in recorded, recorded


def test_without_a_gpu_the_script_says_so_and_the_record_names_the_attempt():
    out = _run("scripts/late_visible_devices.py")
    if not out.startswith("GPUs PyTorch counts: 0"):
        pytest.skip("this machine has a GPU: the gpu test checks the real run")
    assert "no GPU here:" in out and "On a GPU machine, the lines below show every GPU still in use" in out
    recorded = _run("-c", WITH_GPULAB)
    assert f"CUDA was first asked for by {LINE}" in recorded and "on this machine it failed" in recorded, recorded
