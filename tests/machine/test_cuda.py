"""Counting CUDA GPUs without starting CUDA, and the reasons a GPU cell gives for skipping."""

from __future__ import annotations

import pytest

from tests import process_group


@pytest.mark.gpu
def test_counting_gpus_does_not_freeze_cuda_visible_devices():
    """is_available() would start the driver and freeze the variable; gpulab's count must not."""
    import sys

    code = (
        "import os, gpulab, torch; n = gpulab.cuda_gpu_count();"
        "os.environ['CUDA_VISIBLE_DEVICES'] = ''; print(n, torch.cuda.is_available())"
    )
    out = process_group.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    n, available = out.stdout.split()
    assert int(n) >= 1
    assert available == "False", "the hidden-GPU setting was still honoured, so counting did not start CUDA"
