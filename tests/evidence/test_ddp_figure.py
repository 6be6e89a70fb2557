"""The kit's DDP figure goes where the launcher's decision puts 2 ranks (``gpulab.ranks.plan``).

On one H100 (``evidence/``, run of 2026-11-26) the figure was asked for on the CPU, yet ``backend="auto"`` gave its
1-rank row NCCL: "No backend type associated with device type cpu", and the figure was not measured. The GPU count
is our seam (NVML there); the ranks run for real on this CPU.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch.distributed as dist

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))

from gpukit import figures  # noqa: E402


def _pretend_gpus(monkeypatch, count: int) -> None:
    import gpulab.machine.cuda

    monkeypatch.setattr(gpulab.machine.cuda, "cuda_gpu_count", lambda: count)


@pytest.mark.parametrize("gpus", [0, 1])
def test_below_two_gpus_the_figure_is_two_gloo_ranks_on_the_cpu_and_says_why(monkeypatch, gpus):
    _pretend_gpus(monkeypatch, gpus)
    out = figures.ddp_samples_per_s(batch=32, images=128)
    assert out["unit"] == "samples/s" and out["value"] > 0
    assert out["note"].startswith("2 ranks, batch 32 per rank, on cpu; gloo on the CPU for 2 ranks: ")


def test_with_two_gpus_the_figure_asks_for_a_gpu_per_rank(monkeypatch):
    """Two GPUs cannot run here: what is checked is the device the figure asks ``rank_speedup`` for (our code on
    both sides of the call), and that the note carries the decision's reason."""
    from gpulab.ranks.speed import RankSpeedup, SpeedRow

    _pretend_gpus(monkeypatch, 2)
    asked = []

    def measured(**kwargs):
        asked.append(kwargs["device"])
        return RankSpeedup((SpeedRow("DDP", 1, 1, 32, 100.0), SpeedRow("DDP", 2, 1, 32, 180.0)), 16, kwargs["device"])

    monkeypatch.setattr("gpulab.ranks.speed.rank_speedup", measured)
    out = figures.ddp_samples_per_s(batch=32, images=128)
    if dist.is_nccl_available():
        assert asked == ["cuda"] and out["note"].startswith("2 ranks, batch 32 per rank, on cuda; NCCL: each of the 2")
    else:
        assert asked == ["cpu"] and "this PyTorch has no NCCL" in out["note"]
    assert out["value"] == 180.0
