"""The runner's pure parts and the figures' code paths, on the CPU (the device is a parameter)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))

import gpu_run  # noqa: E402

from gpukit import figures  # noqa: E402
from gpukit.wheelhouse import LIMIT_BYTES, problems  # noqa: E402


def test_the_gpu_test_files_are_found_and_the_explain_corpus_is_among_them():
    files = {p.relative_to(ROOT).as_posix() for p in gpu_run.gpu_test_files()}
    assert "tests/placement/test_explain_on_gpus.py" in files and "tests/machine/test_cuda.py" in files
    assert "tests/test_packaging.py" not in files


def test_junit_outcomes_are_read_per_test(tmp_path):
    xml = tmp_path / "j.xml"
    xml.write_text(
        '<testsuites><testsuite><testcase classname="tests.a" name="ok"/>'
        '<testcase classname="tests.a" name="bad"><failure message="x"/></testcase>'
        '<testcase classname="tests.a" name="gpu"><skipped message="needs 1 CUDA GPU(s)"/></testcase>'
        '<testcase classname="tests.a" name="err"><error message="x"/></testcase></testsuite></testsuites>'
    )
    assert gpu_run.outcomes(xml) == {
        "tests.a::ok": "passed",
        "tests.a::bad": "failed",
        "tests.a::gpu": "skipped",
        "tests.a::err": "error",
    }


def test_transfer_figures_on_the_cpu_measure_pageable_copies_and_say_why_pinned_is_missing():
    out = figures.transfers("cpu", nbytes=1 << 20)
    assert out["h2d_pageable_gbps"]["unit"] == "GB/s" and out["h2d_pageable_gbps"]["value"] > 0
    assert out["d2h_pageable_gbps"]["value"] > 0 and "needs CUDA" in out["h2d_pinned_gbps"]["not_measured"]


def test_matmul_tflops_on_the_cpu():
    out = figures.matmul_tflops("cpu", n=128)
    assert out["unit"] == "TFLOP/s" and out["value"] > 0 and "float32" in out["note"] and "peak" not in out


def test_figures_that_need_cuda_say_so_on_the_cpu():
    assert "only on CUDA" in figures.non_blocking_overlap("cpu")["not_measured"]
    assert "CUDA device" in figures.cuda_context_bytes("cpu")["not_measured"]
    assert "2+ devices" in figures.dataparallel_samples_per_s(["cpu"])["not_measured"]
    assert "needs 2 or more" in figures.nccl_allreduce_busbw_gbps(1)["not_measured"]


def test_dataparallel_figure_on_cpu_devices_says_it_needs_gpus():
    assert "GPUs only" in figures.dataparallel_samples_per_s(["cpu", "cpu"], batch=8)["not_measured"]


def test_ddp_figure_runs_two_real_ranks_on_the_cpu():
    out = figures.ddp_samples_per_s("cpu", batch=32, images=128)
    assert out["unit"] == "samples/s" and out["value"] > 0 and "2 ranks" in out["note"]


def test_a_failing_measurement_is_recorded_with_its_error():
    def broken():
        raise RuntimeError("CUDA error: out of memory")

    assert figures.guarded(broken) == {"not_measured": "RuntimeError: CUDA error: out of memory"}


def test_a_wheelhouse_with_torch_or_over_the_limit_is_refused(tmp_path):
    assert problems(tmp_path) == ["no wheels at all"]
    (tmp_path / "nbval-0.11.0-py2.py3-none-any.whl").write_bytes(b"x")
    assert problems(tmp_path) == []
    (tmp_path / "torch-2.11.0-cp312-cp312-manylinux_2_28_x86_64.whl").write_bytes(b"x")
    (tmp_path / "big-1.0-py3-none-any.whl").write_bytes(b"\0" * (LIMIT_BYTES + 1))
    found = problems(tmp_path)
    assert any("torch-2.11.0" in p for p in found) and any("over the 60 MiB limit" in p for p in found)


@pytest.mark.parametrize("pdev", ["cpu"])
def test_the_matmul_figure_names_a_data_sheet_peak_only_on_cuda(pdev):
    assert "peak" not in figures.matmul_tflops(pdev, n=64, gpu_name="NVIDIA H100 80GB HBM3")
