"""Chapter 02's script: CUDA_VISIBLE_DEVICES set after CUDA started is refused, naming the line that started CUDA —
for real on a GPU machine (``gpu``), and on a machine without one the attempt is recorded and the GPU message is
labelled as such."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from tests import process_group

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = Path(__file__).resolve().parents[2] / "notebooks" / "scripts" / "late_visible_devices.py"
_AT = next(i for i, line in enumerate(SCRIPT.read_text().splitlines(), 1) if "# CUDA starts here" in line)
LINE = f"late_visible_devices.py, line {_AT}: `x = torch.ones(2).cuda()  # CUDA starts here`"


def _run() -> str:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("CUDA_VISIBLE_DEVICES", None)
    out = process_group.run(
        [sys.executable, "scripts/late_visible_devices.py"],
        cwd=ROOT / "notebooks",
        capture_output=True,
        text=True,
        timeout=180,
        env=env,
    )
    assert out.returncode == 0, out.stderr
    return out.stdout


@pytest.mark.gpu
def test_on_a_gpu_the_refusal_names_the_line_that_started_cuda():
    out = _run()
    if out.startswith("GPUs: 0"):
        pytest.skip("this test needs 1 CUDA GPU(s); this machine has none")
    assert "Refused: not setting CUDA_VISIBLE_DEVICES='1': CUDA is initialised in this process" in out, out
    assert f"CUDA was started by {LINE} (through torch.cuda._lazy_init)." in out
    assert "as a GPU machine words it" not in out  # the real message, not the labelled one


def test_without_a_gpu_the_attempt_is_named_and_the_gpu_message_labelled():
    out = _run()
    if not out.startswith("GPUs: 0"):
        pytest.skip("this machine has a GPU: the gpu test checks the real refusal")
    assert f"CUDA was first asked for by {LINE} (through torch.cuda._lazy_init); on this machine it failed" in out
    assert "On a GPU machine that line starts CUDA" in out and f"CUDA was started by {LINE}" in out
    assert "Here set_visible_devices([1]) is accepted" in out
