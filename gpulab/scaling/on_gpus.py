"""The prediction from published figures beside a real NCCL run on this machine's GPUs (a probe: needs 2 CUDA GPUs).

The GPUs are named by NVML (no CUDA context in the notebook); the published setup with the same card (T4, A100,
H100) is taken at 2 GPUs; each point of the sweep is measured on 1 and 2 ranks, one GPU per rank, NCCL.
Taught in ``notebooks/07_scaling.ipynb``.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from ..core.tables import Table, TableView
from .probes import splits
from .published import SETUPS, GpuSetup, predicted_speedups
from .steps import StepPlan

__all__ = ["setup_for", "GpuComparison", "compare_on_gpus"]


def setup_for(gpu_name: str, gpus: int = 2) -> GpuSetup | None:
    """The published setup of the card called ``gpu_name`` (``"NVIDIA A100-SXM4-80GB"``), at ``gpus`` GPUs."""
    for setup in SETUPS:
        card = setup.name.split("×")[1].split()[0]  # "T4", "A100", "H100"
        if card.lower() in gpu_name.lower():
            return replace(setup, gpus=gpus, name=f"{gpus}×{gpu_name} (figures of {setup.name})")
    return None


@dataclass(frozen=True)
class GpuComparison(TableView):
    """Measured speed-ups on this machine's GPUs, and the published setup's prediction (``setup`` None: gpulab has no
    published figures for this card, and the table shows the measurement alone)."""

    gpu_name: str
    setup: GpuSetup | None
    points: tuple[tuple[int, int], ...]
    predicted: tuple[float, ...]
    measured: tuple[float, ...]

    def errors(self) -> list[float]:
        return [(p - m) / m for p, m in zip(self.predicted, self.measured)]

    def table(self) -> Table:
        predicted = [f"{p:.2f}×" for p in self.predicted] or ["—"] * len(self.points)
        errors = [f"{e * 100:+.0f} %" for e in self.errors()] or ["—"] * len(self.points)
        rows = [[w, b, p, f"{m:.2f}×", e] for (w, b), p, m, e in zip(self.points, predicted, self.measured, errors)]
        title = self.setup.label() if self.setup else (
            f"2×{self.gpu_name}: measured only; gpulab has no published figures for this card (it knows "
            f"{', '.join(s.name for s in SETUPS)})")
        return Table(["width", "batch/rank", "predicted (published figures)", "measured (NCCL)", "error"], rows,
                     title=title)


def compare_on_gpus(points: Sequence[tuple[int, int]], depth: int = 3, steps: int = 10) -> GpuComparison:
    """Measure 2 GPUs ÷ 1 at each (width, batch per rank) and put the published setup's prediction beside it."""
    from ..machine.cuda import cuda_gpu_count
    from ..machine.inventory import devices

    if cuda_gpu_count() < 2:
        raise RuntimeError(f"compare_on_gpus needs 2 CUDA GPUs, one per rank; PyTorch can use {cuda_gpu_count()} "
                           "here. Run it where 2 GPUs are visible (CUDA_VISIBLE_DEVICES).")
    name = devices(processes=False).gpus[0].name  # NVML: no CUDA context here
    setup = setup_for(name)
    plans = [StepPlan(w, b, depth=depth, steps=steps) for w, b in points]
    pairs = [(splits([p], 1, device="cuda")[0], splits([p], 2, device="cuda")[0]) for p in plans]
    measured = tuple(two.samples_per_s / one.samples_per_s for one, two in pairs)
    predicted = tuple(predicted_speedups(setup, points, depth)) if setup else ()
    return GpuComparison(name, setup, tuple(points), predicted, measured)
