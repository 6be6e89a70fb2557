"""The matmul figure's size, dtype and peak follow the card (tools/gpukit/figures.py::matmul_plan, pure).

The first H100 run multiplied 4096³ in bf16 on every card (718 TFLOP/s, evidence/2026-11-26-h100-80gb-hbm3.json),
which does not fill an H100 (about 800 TFLOP/s at 8192³ there), and would have asked a T4 or a V100, which have no
bf16 matrix units, for bf16.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))

from gpukit.figures import matmul_plan, matmul_tflops  # noqa: E402

GiB = 2**30


@pytest.mark.parametrize(
    "name, capability, memory, plan",
    [
        ("NVIDIA H100 80GB HBM3", (9, 0), 79 * GiB, {"n": 8192, "dtype": "bfloat16", "peak": 989.0}),
        ("NVIDIA H100 PCIe", (9, 0), 79 * GiB, {"n": 8192, "dtype": "bfloat16", "peak": 756.0}),
        ("NVIDIA A100-SXM4-40GB", (8, 0), 39 * GiB, {"n": 8192, "dtype": "bfloat16", "peak": 312.0}),
        ("NVIDIA A10", (8, 6), 22 * GiB, {"n": 8192, "dtype": "bfloat16", "peak": 125.0}),
        ("Tesla T4", (7, 5), 15 * GiB, {"n": 8192, "dtype": "float16", "peak": 65.0}),
        ("Tesla V100-SXM2-16GB", (7, 0), 16 * GiB, {"n": 8192, "dtype": "float16", "peak": 125.0}),
        # a small old card: no matrix units (fp32), and 8192³'s three matrices (768 MiB) would take most of its 2 GiB
        ("NVIDIA GeForce GT 1030", (6, 1), 2 * GiB, {"n": 4096, "dtype": "float32", "peak": None}),
        ("NVIDIA GeForce GT 710", (3, 5), 512 * 2**20, {"n": 2048, "dtype": "float32", "peak": None}),
    ],
)
def test_the_plan_follows_the_card(name, capability, memory, plan):
    assert matmul_plan(name, capability, memory) == plan


def test_a_card_named_without_its_capability_is_read_from_its_name():
    assert matmul_plan("NVIDIA H100 80GB HBM3", None, 79 * GiB)["dtype"] == "bfloat16"
    assert matmul_plan("Tesla T4", None, 15 * GiB)["dtype"] == "float16"
    assert matmul_plan("Some Future GPU", None, 15 * GiB) == {"n": 8192, "dtype": "float32", "peak": None}


def test_a_model_is_matched_as_a_whole_word():
    assert matmul_plan("NVIDIA L40S", (8, 9), 44 * GiB)["peak"] is None  # not an L4
    assert matmul_plan("NVIDIA L4", (8, 9), 22 * GiB)["peak"] == 121.0
    assert matmul_plan("NVIDIA A100 80GB PCIe", (8, 0), 79 * GiB)["peak"] == 312.0  # not an A10


def test_the_cpu_figure_says_its_size_and_dtype():
    out = matmul_tflops("cpu", n=64)
    assert out["note"] == "64x64 float32" and "peak" not in out and out["value"] > 0
