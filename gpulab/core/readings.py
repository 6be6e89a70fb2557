"""Plain records of what was read from a GPU (pure: produced by ``gpulab.machine.nvml`` or by the described GPUs of
``gpulab.machine.simulated``, consumed everywhere).

Every field that the hardware or driver may refuse is ``value | Unavailable``: an ``Unavailable`` prints as
``N/A (reason)`` and is falsy, so nothing downstream crashes on a field a GPU lacks.
Index spaces are spelled out: ``physical_index`` is NVML's (= nvidia-smi's) numbering, never a ``cuda:k`` index.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["Unavailable", "GpuProcess", "MigInstance", "GpuInfo", "GpuSample", "is_known", "mig_profile", "NOT_READ"]


@dataclass(frozen=True)
class Unavailable:
    """A value that could not be read, with the reason in words (``N/A (not supported on this GPU)``)."""

    reason: str

    def __str__(self) -> str:
        return f"N/A ({self.reason})"

    def __bool__(self) -> bool:
        return False


NOT_READ = "not asked for"
"""The reason an ``Unavailable`` process list gives when the reader was told not to read it (``processes=False``):
nothing is known about who uses the GPU, unlike a driver that refuses to say."""


def is_known(value: object) -> bool:
    """True for a real reading, False for ``None`` or an ``Unavailable``."""
    return value is not None and not isinstance(value, Unavailable)


Number = int | float | Unavailable


@dataclass(frozen=True)
class GpuProcess:
    """A process with a CUDA context on a GPU (``nvidia-smi --query-compute-apps=pid,used_memory``)."""

    pid: int
    used_memory_bytes: int | Unavailable
    name: str = "?"


@dataclass(frozen=True)
class MigInstance:
    """One MIG slice of a GPU in MIG mode; CUDA sees it as a device of its own (``MIG-<uuid>``), and
    ``CUDA_VISIBLE_DEVICES=<uuid>`` gives a process that slice alone."""

    mig_index: int
    uuid: str
    memory_total_bytes: int | Unavailable
    memory_used_bytes: int | Unavailable
    profile: str = ""  # "3g.40gb": compute slices and memory, as nvidia-smi -L names it ("MIG 3g.40gb Device 0")

    @property
    def name(self) -> str:
        """``MIG 3g.40gb``, as ``nvidia-smi -L`` lists the slice (``MIG slice`` where the profile was not read)."""
        return f"MIG {self.profile}" if self.profile else "MIG slice"


def mig_profile(name: str) -> str:
    """The profile in what NVML names a MIG slice: ``"MIG 3g.40gb"`` or ``"NVIDIA A100-SXM4-40GB MIG 1g.5gb"`` (as CUDA
    names the device) give ``"3g.40gb"`` / ``"1g.5gb"``; ``""`` when the name holds none."""
    head, mig, profile = name.rpartition("MIG ")
    return profile.strip() if mig and (not head or head.endswith(" ")) else ""


@dataclass(frozen=True)
class GpuSample:
    """The fast-changing part of a GPU's state: what a monitor polls a few times a second."""

    physical_index: int
    memory_used_bytes: int | Unavailable
    memory_total_bytes: int | Unavailable
    utilization_gpu_percent: int | Unavailable


@dataclass(frozen=True)
class GpuInfo:
    """Everything ``nvidia-smi -q`` would tell about one physical GPU, as far as NVML allows."""

    physical_index: int
    uuid: str
    name: str
    pci_bus_id: str
    memory_total_bytes: int | Unavailable
    memory_used_bytes: int | Unavailable
    memory_free_bytes: int | Unavailable
    utilization_gpu_percent: int | Unavailable
    utilization_memory_percent: int | Unavailable
    temperature_c: int | Unavailable
    power_w: float | Unavailable
    mig_enabled: bool | Unavailable = False
    mig_devices: tuple[MigInstance, ...] = ()
    processes: tuple[GpuProcess, ...] | Unavailable = field(default=())
    simulated: bool = False  # described by gpulab.machine.simulated, not read from a driver: outputs say SIMULATED
    mig_index: int | None = None  # a MIG slice of GPU physical_index offered as a device of its own (core.reservable)

    def sample(self) -> GpuSample:
        """This reading's memory and utilisation, as the monitor samples them."""
        return GpuSample(
            self.physical_index, self.memory_used_bytes, self.memory_total_bytes, self.utilization_gpu_percent
        )

    @property
    def label(self) -> str:
        """``"4"`` for a whole GPU; ``"0/mig1"`` for MIG slice 1 of GPU 0, as ``gpulab.devices()`` lists it."""
        return str(self.physical_index) if self.mig_index is None else f"{self.physical_index}/mig{self.mig_index}"
