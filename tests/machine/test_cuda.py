"""Counting CUDA GPUs without starting CUDA, and the reasons a GPU cell gives for skipping."""

from __future__ import annotations

import pytest

from tests import process_group


def test_best_device_is_the_cpu_without_gpus():
    from gpulab.machine.cuda import best_device, cuda_gpu_count

    if cuda_gpu_count():
        pytest.skip("this machine has a GPU")
    assert best_device().type == "cpu"


@pytest.mark.gpu
def test_counting_gpus_does_not_freeze_cuda_visible_devices():
    """is_available() would start the driver and freeze the variable; gpulab's count must not."""
    import sys

    code = (
        "import os, gpulab, torch; n = gpulab.cuda_gpu_count(); d = gpulab.best_device();"
        "os.environ['CUDA_VISIBLE_DEVICES'] = ''; print(n, d.type, torch.cuda.is_available())"
    )
    out = process_group.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    n, kind, available = out.stdout.split()
    assert int(n) >= 1 and kind == "cuda"
    assert available == "False", "the hidden-GPU setting was still honoured, so counting did not start CUDA"
