"""The cost model checked on this machine's GPUs: a real NCCL run beside its predictions (a probe: needs 2 CUDA GPUs).

One GPU per rank, NCCL. Measured: the all-reduce's latency (4 bytes) and **bus bandwidth** (64 MiB; nccl-tests'
convention: bytes × 2 (N − 1)/N ÷ time, the rate each GPU's link really carried), and each point of the sweep on 1 and
on 2 GPUs. Beside the measured speed-up, two predictions:

- the **model from measured inputs**: the 1-GPU step, the measured link and what 2 GPU ranks pay to meet at each
  step (``probes.ddp_sync_s`` on the GPUs), from nothing hidden (``hidden=0``) to the whole all-reduce under the
  backward pass (``hidden=1``) — DDP overlaps part of the all-reduce on GPUs, so a real run lies between the two;
- the **published figures** of the same card (T4, A100, H100: ``published.SETUPS``), taken at 2 GPUs.

The card is named by NVML for ``cuda:0`` as this process's ``CUDA_VISIBLE_DEVICES`` maps it (no CUDA context in the
notebook). Taught in ``notebooks/07_scaling.ipynb``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from ..core.tables import Table, TableView
from .cost import Link, Meeting, meeting_text
from .probes import LATENCY_BYTES, ddp_sync_s, splits
from .published import SETUPS, GpuSetup, predicted_speedups
from .steps import StepPlan, allreduce_seconds
from .sweep import predict_two_ranks

__all__ = ["setup_for", "nccl_link", "GpuComparison", "compare_on_gpus", "BUS_BYTES"]

BUS_BYTES = 64 * 1024 * 1024  # large enough that latency is a small part of it (nccl-tests reach their peak there)


def setup_for(gpu_name: str, n_gpus: int = 2) -> GpuSetup | None:
    """The published setup of the card called ``gpu_name`` (``"NVIDIA A100-SXM4-80GB"``), at ``n_gpus`` GPUs."""
    for setup in SETUPS:
        card = setup.name.split("×")[1].split()[0]  # "T4", "A100", "H100"
        if card.lower() in gpu_name.lower():
            return replace(setup, n_gpus=n_gpus, name=f"{n_gpus}×{gpu_name} (figures of {setup.name})")
    return None


def nccl_link(world_size: int = 2) -> Link:
    """Latency (a 4-byte all-reduce over the ring's 2 (N − 1) messages) and bus bandwidth (``BUS_BYTES``) of NCCL
    between ``world_size`` GPUs here, one per rank."""
    from ..ranks.launcher import launch
    from ..ranks.own_device import on_own_device

    tiny, large = launch(
        on_own_device(allreduce_seconds), world_size, args=([LATENCY_BYTES, BUS_BYTES], 10), backend="nccl"
    )
    factor = 2 * (world_size - 1) / world_size
    return Link(
        factor * BUS_BYTES / large,
        tiny / (2 * (world_size - 1)),
        f"NCCL on this machine's GPUs: all-reduce of 4 B {tiny * 1e6:.0f} µs, of {BUS_BYTES >> 20} MiB "
        f"{large * 1e3:.2f} ms",
    )


@dataclass(frozen=True)
class GpuComparison(TableView):
    """Measured speed-ups on this machine's GPUs beside the model from measured inputs and the published setup's
    prediction (``setup`` None: gpulab has no published figures for this card; its column shows "—")."""

    gpu_name: str
    setup: GpuSetup | None
    link: Link  # NCCL, measured here
    sync_s: float | Meeting  # what 2 GPU ranks pay to meet at each step, measured here
    points: tuple[tuple[int, int], ...]
    steps_ms: tuple[tuple[float, float], ...]  # (1 GPU, 2 GPUs) fastest step of each point, ms
    measured: tuple[float, ...]
    model_bounds: tuple[tuple[float, float], ...]  # the model from measured inputs: (nothing hidden, all hidden)
    predicted: tuple[float, ...]  # from published figures; () without a setup

    @property
    def bus_bandwidth_gbps(self) -> float:
        """NCCL's bandwidth measured here, in GB/s each way."""
        return self.link.bandwidth_bytes_per_s / 1e9

    def errors(self) -> list[float]:
        """(published prediction − measured) ÷ measured at each point (empty without a setup)."""
        return [(p - m) / m for p, m in zip(self.predicted, self.measured)]

    def table(self) -> Table:
        """Each point's step on 1 and 2 GPUs, the measured speed-up, the model's bounds and the published-figures
        prediction."""
        published = [f"{p:.2f}× ({e * 100:+.0f} %)" for p, e in zip(self.predicted, self.errors())] or ["—"] * len(
            self.points
        )
        rows = [
            [w, b, f"{one:.2f}", f"{two:.2f}", f"{m:.2f}×", f"{lo:.2f}–{hi:.2f}×", pub]
            for (w, b), (one, two), m, (lo, hi), pub in zip(
                self.points, self.steps_ms, self.measured, self.model_bounds, published
            )
        ]
        source = (
            self.setup.label()
            if self.setup
            else (f"gpulab has no published figures for {self.gpu_name} (it knows {', '.join(s.name for s in SETUPS)})")
        )
        return Table(
            [
                "width",
                "batch/rank",
                "1 GPU ms",
                "2 GPUs ms",
                "measured (NCCL)",
                "model, measured inputs",
                "predicted (published figures)",
            ],
            rows,
            title=f"2×{self.gpu_name}, one GPU per rank: NCCL bus bandwidth {self.bus_bandwidth_gbps:.1f} "
            f"GB/s, latency {self.link.latency_s * 1e6:.0f} µs per message, ranks meeting: "
            f"{meeting_text(self.sync_s)} (measured)",
            notes=[
                "model, measured inputs: the 1-GPU step, the NCCL link and the meeting measured here; the "
                "range runs from no overlap of the all-reduce with the backward pass to full overlap",
                f"published: {source}",
            ],
        )


def compare_on_gpus(points: Sequence[tuple[int, int]], depth: int = 3, steps: int = 30) -> GpuComparison:
    """Measure NCCL's link and 2 GPUs ÷ 1 at each (width, batch per rank); put the model's predictions beside them."""
    from ..core.visible import visible_map
    from ..machine.cuda import cuda_gpu_count
    from ..machine.inventory import devices

    if cuda_gpu_count() < 2:
        raise RuntimeError(
            f"compare_on_gpus needs 2 CUDA GPUs, one per rank; PyTorch can use {cuda_gpu_count()} "
            "here. Run it where 2 GPUs are visible (CUDA_VISIBLE_DEVICES)."
        )
    name = visible_map(devices(processes=False).gpus).physical(0).name  # NVML, as cuda:0 maps: no CUDA context
    setup = setup_for(name)
    link = nccl_link()
    sync = ddp_sync_s(link, device="cuda")  # ceiling 2: each rank owns its GPU, nothing is shared
    plans = [StepPlan(w, b, depth=depth, steps=steps) for w, b in points]
    pairs = [(splits([p], 1, device="cuda")[0], splits([p], 2, device="cuda")[0]) for p in plans]
    return GpuComparison(
        name,
        setup,
        link,
        sync,
        tuple(points),
        tuple((one.step_s * 1e3, two.step_s * 1e3) for one, two in pairs),
        tuple(two.samples_per_s / one.samples_per_s for one, two in pairs),
        tuple(
            (predict_two_ranks(one, 2.0, link, sync), predict_two_ranks(one, 2.0, link, sync, hidden=1.0))
            for one, _ in pairs
        ),
        tuple(predicted_speedups(setup, points, depth)) if setup else (),
    )
