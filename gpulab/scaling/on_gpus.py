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
    setup: GpuSetup
    points: tuple[tuple[int, int], ...]
    predicted: tuple[float, ...]
    measured: tuple[float, ...]

    def errors(self) -> list[float]:
        return [(p - m) / m for p, m in zip(self.predicted, self.measured)]

    def table(self) -> Table:
        rows = [[w, b, f"{p:.2f}×", f"{m:.2f}×", f"{e * 100:+.0f} %"]
                for (w, b), p, m, e in zip(self.points, self.predicted, self.measured, self.errors())]
        return Table(["width", "batch/rank", "predicted (published figures)", "measured (NCCL)", "error"], rows,
                     title=self.setup.label())


def compare_on_gpus(points: Sequence[tuple[int, int]], depth: int = 3, steps: int = 10) -> GpuComparison:
    """Measure 2 GPUs ÷ 1 at each (width, batch per rank) and put the published setup's prediction beside it."""
    from ..machine.cuda import cuda_gpu_count
    from ..machine.inventory import devices

    if cuda_gpu_count() < 2:
        raise RuntimeError(f"compare_on_gpus needs 2 CUDA GPUs, one per rank; PyTorch can use {cuda_gpu_count()} "
                           "here. Run it where 2 GPUs are visible (CUDA_VISIBLE_DEVICES).")
    name = devices(processes=False).gpus[0].name  # NVML: no CUDA context here
    setup = setup_for(name)
    if setup is None:
        raise RuntimeError(f"no published figures for {name!r} here: gpulab knows {', '.join(s.name for s in SETUPS)}"
                           ". Compare by hand with that card's datasheet.")
    plans = [StepPlan(w, b, depth=depth, steps=steps) for w, b in points]
    ones, twos = splits(plans, 1, device="cuda"), splits(plans, 2, device="cuda")
    measured = tuple(t.samples_per_s / o.samples_per_s for o, t in zip(ones, twos))
    return GpuComparison(setup, tuple(points), tuple(predicted_speedups(setup, points, depth)), measured)
