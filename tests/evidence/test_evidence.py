"""The evidence record make test-gpu writes: schema, file name, Markdown summary, and the runner's pure parts.
fixture_h100.json is a record written by hand for these tests: its figures are made up, not measurements."""

from __future__ import annotations

import copy
import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))

from gpukit import evidence  # noqa: E402
from gpukit.deps import forbidden  # noqa: E402

FIXTURE = json.loads((Path(__file__).with_name("fixture_h100.json")).read_text())


def test_a_record_is_written_as_json_and_a_markdown_summary(tmp_path):
    path, summary = evidence.write(FIXTURE, tmp_path)
    assert path.name == "2026-11-24-h100-80gb-hbm3.json" and summary.name == "2026-11-24-h100-80gb-hbm3.md"
    assert json.loads(path.read_text()) == FIXTURE
    text = summary.read_text()
    assert "NVIDIA H100 80GB HBM3 (80 GiB)" in text and "driver 580.95.05, CUDA 13.0, torch 2.11.0+cu130" in text
    assert "- chapters ran in fast mode (GPULAB_FAST=1)" in text
    assert "1 failed, 2 passed, 1 skipped" in text and "| h2d_pinned_gbps | 53.1 GB/s | 63 GB/s |" in text
    assert "| nccl_allreduce_busbw_gbps | not measured |" in text and "`tests.machine.test_cuda::test_context`" in text


@pytest.mark.parametrize(
    "break_it, message",
    [
        (lambda r: r.update(schema=4), r"schema must be one of \(1, 2, 3\)"),
        (lambda r: r.pop("timings_s"), "timings_s must map each part of the run to its seconds"),
        (lambda r: r.update(bundle=3), "bundle must name the recorded bundle's folder"),
        (lambda r: r.pop("mode"), r"mode must be one of \('fast', 'full'\)"),
        (lambda r: r.update(mode="quick"), "mode must be one of"),
        (lambda r: r.update(schema=1), "schema 1 files are kept as they were written"),
        (lambda r: r.update(date="24.11.2026"), "date must be YYYY-MM-DD"),
        (lambda r: r["machine"].pop("driver"), r"machine\.driver must be a str"),
        (lambda r: r["machine"].update(gpus=[]), "machine.gpus is empty"),
        (lambda r: r["machine"]["gpus"][0].update(memory_bytes="80GB"), r"gpus\[0\]\.memory_bytes must be a int"),
        (lambda r: r.update(tests={}), "name at least one"),
        (lambda r: r["tests"].update({"t::x": "ok"}), r"tests\['t::x'\] is 'ok'"),
        (lambda r: r.update(explain_corpus={"snippets": 3}), "explain_corpus must give"),
        (lambda r: r["figures"].pop("matmul_tflops"), "figures.matmul_tflops is missing"),
        (lambda r: r["figures"].update(cuda_context_bytes={"value": 5}), "needs a numeric value and a unit"),
        (lambda r: r["figures"].update(ddp_samples_per_s={"not_measured": ""}), "must say why"),
    ],
)
def test_a_record_off_the_schema_is_refused_and_nothing_is_written(tmp_path, break_it, message):
    record = copy.deepcopy(FIXTURE)
    break_it(record)
    with pytest.raises(evidence.EvidenceError, match=message):
        evidence.write(record, tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_file_names_carry_the_date_and_the_gpu():
    assert evidence.file_name("2026-11-24", "Tesla T4") == "2026-11-24-t4.json"
    assert evidence.file_name("2026-11-24", "NVIDIA H200") == "2026-11-24-h200.json"
    with pytest.raises(evidence.EvidenceError, match="not YYYY-MM-DD"):
        evidence.file_name("today", "NVIDIA H200")


def test_the_kit_never_installs_torch_cuda_or_triton():
    for name in ("torch", "torchvision", "triton", "nvidia-cublas", "nvidia_cudnn_cu13", "cuda-bindings", "lightning"):
        assert forbidden(name), name
    for name in ("ipykernel", "nbval", "nvidia-ml-py-helper", "pyzmq"):
        assert not forbidden(name) or name.startswith("nvidia-"), name


def test_nvidia_ml_py_is_pure_python_but_named_like_a_cuda_library():
    """nvidia-ml-py is not CUDA (the GPU machine has it anyway): the kit refuses every nvidia-* name to stay safe."""
    assert forbidden("nvidia-ml-py")
