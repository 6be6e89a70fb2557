"""Published figures of common GPU setups, each with its source, and the cost model's prediction of a sweep on them
(pure). Every number here is a vendor's peak: real runs reach less, so these lines are predictions, labelled so.
Taught in ``notebooks/07_scaling.ipynb``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from .cost import Link, mlp_parameters, predict_step, speedup, train_flops

__all__ = ["GpuSetup", "SETUPS", "LAUNCH_S", "LAUNCH_SOURCE", "predicted_speedups"]

T4_SHEET = "NVIDIA T4 datasheet (nvidia.com, tesla-t4 t4-tensor-core-datasheet-951643.pdf)"
A100_SHEET = "NVIDIA A100 datasheet (nvidia.com, nvidia-a100-datasheet-us-nvidia-1758950-r4-web.pdf)"
H100_SHEET = "NVIDIA H100 Tensor Core GPU datasheet (resources.nvidia.com, nvidia-tensor-core-gpu-datasheet)"
PCIE3 = "PCI-SIG PCI Express 3.0 Base Specification: 8 GT/s per lane, 128b/130b, x16 = 15.75 GB/s each way"
# A kernel launch costs 5–20 µs (CUDA C++ Best Practices Guide; measured in many forum threads): a step of a small
# model on a GPU is launch-bound long before it is FLOP-bound, so the model adds this per kernel.
LAUNCH_S = 10e-6
LAUNCH_SOURCE = "kernel launch ≈ 10 µs (CUDA C++ Best Practices Guide: launches cost microseconds; 5–20 µs seen)"
NCCL_LATENCY_S = 5e-6  # per ring message; NCCL's own tests report single-digit µs for small messages over NVLink/PCIe
NCCL_LATENCY_SOURCE = "NCCL ring latency ≈ 5 µs per message (nccl-tests small-message all_reduce times)"


@dataclass(frozen=True)
class GpuSetup:
    """N GPUs of one kind, their FP32 rate and the link between them, with where each number comes from."""

    name: str
    n_gpus: int
    fp32_flops_per_s: float
    link: Link
    flops_source: str

    def label(self) -> str:
        """What a prediction for this setup rests on: its FP32 rate, its link, and the sources of each."""
        return (
            f"{self.name}: prediction from published figures — FP32 {self.fp32_flops_per_s / 1e12:g} TFLOP/s "
            f"({self.flops_source}); link {self.link.bandwidth_bytes_per_s / 1e9:g} GB/s each way "
            f"({self.link.source}); {NCCL_LATENCY_SOURCE}; {LAUNCH_SOURCE}"
        )


SETUPS: tuple[GpuSetup, ...] = (
    GpuSetup(
        "2×T4 over PCIe Gen3 x16 (Kaggle)",
        2,
        8.1e12,
        Link(15.75e9, NCCL_LATENCY_S, f"{PCIE3}; T4 is a PCIe Gen3 x16 card, {T4_SHEET}"),
        T4_SHEET,
    ),
    GpuSetup(
        "2×A100 SXM over NVLink 3",
        2,
        19.5e12,
        Link(300e9, NCCL_LATENCY_S, f"NVLink 3: 600 GB/s per GPU both ways together, {A100_SHEET}"),
        A100_SHEET,
    ),
    GpuSetup(
        "8×H100 SXM over NVSwitch (NVLink 4)",
        8,
        67e12,
        Link(450e9, NCCL_LATENCY_S, f"NVLink 4 through NVSwitch: 900 GB/s per GPU both ways together, {H100_SHEET}"),
        H100_SHEET,
    ),
)


def predicted_speedups(setup: GpuSetup, points: Sequence[tuple[int, int]], depth: int) -> list[float]:
    """The predicted N-GPU ÷ 1-GPU speed-up of ``setup`` at each (width, batch per rank) of a sweep of an MLP of
    ``depth`` layers in float32 (3 kernels per layer forward and backward, 1 per parameter tensor in the optimiser)."""
    out = []
    for width, batch in points:
        params = mlp_parameters(width, depth)
        kernels = 3 * depth + 2 * depth
        kw = dict(flops_per_s=setup.fp32_flops_per_s, link=setup.link, fixed_s=kernels * LAUNCH_S)
        one = predict_step(train_flops(params, batch), 4 * params, 1, **kw)
        many = predict_step(train_flops(params, batch), 4 * params, setup.n_gpus, **kw)
        out.append(speedup(one, many))
    return out
