"""The devices a kernel can be given on a machine: each whole GPU, and each MIG slice of a GPU in MIG mode (pure).

A GPU in MIG mode runs no work of its own: CUDA runs it on the GPU's MIG slices, each a device with its own memory and
compute, named by its ``MIG-…`` UUID (``nvidia-smi -L``). ``CUDA_VISIBLE_DEVICES=MIG-…`` gives a process that slice
alone, and that is how a slice is handed to a kernel, as a whole GPU is by its ``GPU-…`` UUID. So a machine's
devices to hand out are its GPUs outside MIG mode and the slices of those inside it, each listed under its card; a GPU
in MIG mode with no slice yet gives none (an administrator creates them: ``checkup.diagnosis`` says how).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from .readings import GpuInfo, Unavailable, is_known
from .units import format_bytes

__all__ = [
    "NO_MIG_SLICE",
    "ONE_MIG_SLICE",
    "ReservableDevice",
    "reservable_devices",
    "device_key",
    "device_readings",
    "one_slice_note",
]


@dataclass(frozen=True)
class ReservableDevice:
    """A whole GPU (``mig_index`` None) or one MIG slice of GPU ``physical_index``; ``uuid`` is what
    ``CUDA_VISIBLE_DEVICES`` names it by (``GPU-…`` or ``MIG-…``)."""

    physical_index: int
    uuid: str
    name: str  # the GPU's model; for a slice, "NVIDIA A100 80GB PCIe MIG 3g.40gb" (as CUDA names the device)
    memory_total_bytes: int | Unavailable
    memory_used_bytes: int | Unavailable
    mig_index: int | None = None
    mig_profile: str = ""  # "3g.40gb" for a slice whose profile was read

    @property
    def visible_devices(self) -> str:
        """The ``CUDA_VISIBLE_DEVICES`` value that gives a process this device alone."""
        return self.uuid

    def __str__(self) -> str:
        memory = format_bytes(self.memory_total_bytes) if is_known(self.memory_total_bytes) else "memory N/A"
        if self.mig_index is None:
            return f"GPU {self.physical_index} ({self.name}, {memory})"
        profile = f"{self.mig_profile}, " if self.mig_profile else ""
        return f"MIG slice {self.mig_index} of GPU {self.physical_index} ({profile}{memory})"


def reservable_devices(gpus: tuple[GpuInfo, ...] | list[GpuInfo]) -> tuple[ReservableDevice, ...]:
    """Each GPU outside MIG mode, and each slice of a GPU in MIG mode, in the cards' order with slices under theirs."""
    out: list[ReservableDevice] = []
    for g in gpus:
        if g.mig_enabled is not True:
            out.append(ReservableDevice(g.physical_index, g.uuid, g.name, g.memory_total_bytes, g.memory_used_bytes))
            continue
        for m in g.mig_devices:
            out.append(
                ReservableDevice(
                    g.physical_index,
                    m.uuid,
                    f"{g.name} {m.name}",
                    m.memory_total_bytes,
                    m.memory_used_bytes,
                    mig_index=m.mig_index,
                    mig_profile=m.profile,
                )
            )
    return tuple(out)


# NVIDIA's MIG user guide (Getting Started, CUDA on bare metal): "a single CUDA process can only enumerate a single MIG
# device", however many CUDA_VISIBLE_DEVICES names.
NO_MIG_SLICE = (
    "in MIG mode: CUDA cannot use the whole GPU, and it has no MIG slice to use (an administrator creates them: "
    "gpulab.environment_report() says how)"
)
ONE_MIG_SLICE = "CUDA lets a process use one MIG slice only, however many CUDA_VISIBLE_DEVICES names"


def device_readings(gpus: tuple[GpuInfo, ...] | list[GpuInfo]) -> tuple[GpuInfo, ...]:
    """``gpus`` as the devices to choose from: each GPU outside MIG mode as it was read, and in place of a GPU in MIG
    mode, each of its slices as a reading of its own (``mig_index`` set, its ``MIG-…`` UUID, its memory), so that
    ``selection.judge`` judges a slice by the same rule as a GPU. A GPU in MIG mode without a slice stays, to be
    judged (and refused) as such.

    NVML reads no utilisation per slice, and gpulab reads processes per card: a slice carries its card's processes,
    so a process anywhere on a card keeps each of its slices from being judged free (never two kernels on one
    slice; at worst a free slice passed over)."""
    out: list[GpuInfo] = []
    for g in gpus:
        if g.mig_enabled is not True or not g.mig_devices:
            out.append(g)
            continue
        for m in g.mig_devices:
            total, used = m.memory_total_bytes, m.memory_used_bytes
            free = total - used if is_known(total) and is_known(used) else used if not is_known(used) else total
            out.append(
                replace(
                    g,
                    uuid=m.uuid,
                    name=f"{g.name} {m.name}",
                    memory_total_bytes=total,
                    memory_used_bytes=used,
                    memory_free_bytes=free,
                    utilization_gpu_percent=Unavailable("no utilisation per MIG slice"),
                    utilization_memory_percent=Unavailable("no utilisation per MIG slice"),
                    mig_enabled=False,
                    mig_devices=(),
                    mig_index=m.mig_index,
                )
            )
    return tuple(out)


def one_slice_note(chosen: tuple[GpuInfo, ...] | list[GpuInfo]) -> str:
    """A sentence when ``chosen`` (in ``CUDA_VISIBLE_DEVICES`` order) holds a MIG slice beside other devices: which
    one CUDA will use; ``""`` otherwise."""
    if len(chosen) < 2 or not any(g.mig_index is not None for g in chosen):
        return ""
    rest = ", ".join(g.label for g in chosen)
    return f"{ONE_MIG_SLICE}: of {rest}, not all can be used together. Choose one MIG slice alone, or whole GPUs."


def device_key(g: GpuInfo) -> int | str:
    """How the picker names a device it offers: a GPU by its physical index, a MIG slice by ``"0/mig1"``."""
    return g.physical_index if g.mig_index is None else g.label
