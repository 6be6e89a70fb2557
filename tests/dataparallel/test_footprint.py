"""Measuring which GPUs a DataParallel run occupies: the child-process plumbing runs for real here (a child that
fails, one that hangs, one that answers); the measurement itself needs two GPUs (multigpu)."""

from __future__ import annotations

import sys

import psutil
import pytest

from gpulab.dataparallel.footprint import GpuFootprint, context_footprint, run_until_ready
from tests.seams import requires_gpus


def test_a_child_that_answers_is_left_running_until_told():
    code = "import json, sys; print(json.dumps({'reserved': {'0': 5}}), flush=True); sys.stdin.readline()"
    proc, ready = run_until_ready([sys.executable, "-c", code], timeout_s=60)
    assert ready == {"reserved": {"0": 5}} and proc.poll() is None
    proc.communicate("done\n", timeout=30)
    assert proc.returncode == 0


def test_a_child_that_fails_is_reported_with_its_error():
    code = "import sys; sys.stderr.write('RuntimeError: CUDA error: out of memory\\n'); sys.exit(3)"
    with pytest.raises(RuntimeError, match=r"ended before it was ready \(exit code 3\):\nRuntimeError: CUDA error"):
        run_until_ready([sys.executable, "-c", code], timeout_s=60)


def test_a_child_that_hangs_is_stopped_and_not_left_behind():
    before = {p.pid for p in psutil.Process().children(recursive=True)}
    with pytest.raises(TimeoutError, match=r"gave no result within 1 s and was stopped"):
        run_until_ready([sys.executable, "-c", "import time; time.sleep(60)"], timeout_s=1)
    assert {p.pid for p in psutil.Process().children(recursive=True)} == before


def test_the_table_points_at_a_gpu_that_gained_memory_outside_device_ids():
    mib = 2**20
    fp = GpuFootprint("stray .cuda()", (1,), (10 * mib, 10 * mib), (530 * mib, 700 * mib), {1: 2 * mib})
    assert fp.added_bytes(0) == 520 * mib
    assert "GPU 0 gained memory although not in device_ids: a CUDA context" in str(fp)
    quiet = GpuFootprint("article", (1,), (10 * mib, 10 * mib), (12 * mib, 700 * mib), {1: 2 * mib})
    assert "no GPU outside device_ids gained more than 64 MiB" in str(quiet)


def test_without_two_gpus_the_measurement_says_what_it_needs():
    from gpulab.machine.cuda import too_few_gpus

    if too_few_gpus(2) is None:
        pytest.skip("this machine has two GPUs: the measurement runs instead")
    with pytest.raises(RuntimeError, match=r"This measurement needs 2 CUDA GPU\(s\), but .* it watches GPU 0"):
        context_footprint()
    with pytest.raises(ValueError, match=r"variant is one of 'article', 'stray .cuda\(\)'"):
        context_footprint("ddp")


@pytest.mark.multigpu
@requires_gpus(2)
def test_a_stray_cuda_call_puts_a_context_on_gpu_0_and_set_device_keeps_it_off():
    stray = context_footprint("stray .cuda()")
    fixed = context_footprint("set_device")
    assert stray.added_bytes(0) > 64 * 2**20 and fixed.added_bytes(0) < 64 * 2**20
    with pytest.raises(ValueError, match=r"device_ids are physical GPU indices between 1 and"):
        context_footprint(device_ids=[0, 1])
