"""What hardware is here: every physical GPU (through NVML) and the CPU side (a probe).

``devices()`` never creates a CUDA context in the calling process — it asks NVML, not CUDA — so a notebook can look
at its GPUs and still fork worker processes later. Taught in ``notebooks/00_setup.ipynb``.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..core.arguments import flag
from ..core.readings import GpuInfo, Unavailable, is_known
from ..core.reservable import ReservableDevice, reservable_devices
from ..core.tables import html_table, text_table
from ..core.units import format_bytes
from .host import HostInfo, host_info
from .nvml import GpuReader
from .resolve import as_reader

__all__ = ["Inventory", "devices", "gpu_rows", "GPU_COLUMNS"]

GPU_COLUMNS = ("physical", "name", "memory used / total", "util", "processes", "uuid", "pci bus")


def _mem(g: GpuInfo) -> str:
    if is_known(g.memory_used_bytes) and is_known(g.memory_total_bytes):
        return f"{format_bytes(g.memory_used_bytes)} / {format_bytes(g.memory_total_bytes)}"
    return str(g.memory_total_bytes if not is_known(g.memory_total_bytes) else g.memory_used_bytes)


def _util(g: GpuInfo) -> str:
    if g.mig_enabled is True:
        return "N/A (MIG mode: no utilisation per GPU)"
    return f"{g.utilization_gpu_percent} %" if is_known(g.utilization_gpu_percent) else str(g.utilization_gpu_percent)


def _procs(g: GpuInfo) -> str:
    if isinstance(g.processes, Unavailable):
        return str(g.processes)
    if not g.processes:
        return "none"
    return ", ".join(
        f"{p.pid} {p.name} ({format_bytes(p.used_memory_bytes) if is_known(p.used_memory_bytes) else 'N/A'})"
        for p in g.processes
    )


def gpu_rows(gpus: tuple[GpuInfo, ...]) -> list[list[str]]:
    """One row per GPU (and one per MIG slice under it), in ``GPU_COLUMNS`` order."""
    rows: list[list[str]] = []
    for g in gpus:
        rows.append([str(g.physical_index), g.name, _mem(g), _util(g), _procs(g), g.uuid, g.pci_bus_id])
        for m in g.mig_devices:
            mem = f"{format_bytes(m.memory_used_bytes)} / {format_bytes(m.memory_total_bytes)}"
            rows.append([f"  {g.physical_index}/mig{m.mig_index}", m.name, mem, "N/A (MIG)", "", m.uuid, ""])
    return rows


@dataclass(frozen=True, repr=False)
class Inventory:
    """The GPUs NVML sees (physical numbering, like nvidia-smi) and the host's CPU and RAM."""

    gpus: tuple[GpuInfo, ...]
    host: HostInfo
    driver_version: str | Unavailable
    cuda_driver_version: str | Unavailable
    nvml_error: str | None
    simulated: bool = False  # described GPUs (SimulatedGpuReader), not this computer's
    this_machine: bool = False  # read with machine=None: NVML, or the described machine GPULAB_SIMULATE_GPUS names

    @property
    def gpu_count(self) -> int:
        """How many GPUs NVML lists (physical GPUs; MIG slices are inside them)."""
        return len(self.gpus)

    @property
    def reservable(self) -> tuple[ReservableDevice, ...]:
        """The devices a kernel can be given here: each GPU outside MIG mode and each MIG slice, slices under their
        card, each with the UUID ``CUDA_VISIBLE_DEVICES`` names it by (``core.reservable``)."""
        return reservable_devices(self.gpus)

    def _host_line(self) -> str:
        h = self.host
        limit = f", container limit {format_bytes(h.cgroup_memory_limit_bytes)}" if h.cgroup_memory_limit_bytes else ""
        # under a described machine's GPUs, the CPU and RAM are still this computer's: say so, or they read as its
        here = "this computer (the GPUs above are described, not these): " if self.simulated else ""
        return (
            f"{here}CPU: {h.cpu_model}, {h.usable_cores} usable of {h.logical_cores} logical cores; "
            f"RAM {format_bytes(h.memory_total_bytes)} ({format_bytes(h.memory_available_bytes)} available{limit})"
        )

    def _gpu_header(self, brief: bool = False) -> str:
        """The first line; ``brief`` keeps only the first clause of why NVML failed (the report's checklist has it
        all)."""
        label = "SIMULATED machine (described GPUs, not this computer's): " if self.simulated else ""
        if not self.gpus:
            why = self.nvml_error or ""
            if brief and why:
                why = why.split(": ")[0].split(". ")[0].rstrip(".") + " (the checklist below says what to do)"
            return label + "No NVIDIA GPU found" + (f": {why}" if why else ".")
        return (
            label + f"{self.gpu_count} GPU(s); driver {self.driver_version}, supports CUDA up to "
            f"{self.cuda_driver_version}"
        )

    def _repr_pretty_(self, p, cycle: bool) -> None:  # IPython's text/plain: the readable report, not the fields
        p.text(str(self))

    def text(self, *, brief: bool = False) -> str:
        """Plain text; ``brief`` shortens why no GPU was found (for the report, which says it in full elsewhere)."""
        parts = [self._gpu_header(brief)]
        if self.gpus:
            parts.append(text_table(GPU_COLUMNS, gpu_rows(self.gpus), indent="  "))
        parts.append(self._host_line())
        return "\n".join(parts)

    def __str__(self) -> str:
        return self.text()

    def html(self, *, brief: bool = False) -> str:
        """The inventory as HTML (``brief``: the first clause of why NVML failed, for a cell's short answer)."""
        import html

        head = html.escape(self._gpu_header(brief))
        if self.simulated:
            head = head.replace("SIMULATED", "<b style='color:#b00'>SIMULATED</b>", 1)
        body = f"<p>{head}</p>"
        if self.gpus:
            body += html_table(GPU_COLUMNS, gpu_rows(self.gpus))
        return body + f"<p>{html.escape(self._host_line())}</p>"

    def _repr_html_(self) -> str:
        return self.html()


def devices(machine: GpuReader | str | None = None, *, processes: bool = True) -> Inventory:
    """List the physical GPUs and the CPU side, without creating a CUDA context (NVML only).

    ``machine``: this machine by default; a preset name (``"workshop-8"``) or a ``SimulatedGpuReader`` for a described
    one, labelled SIMULATED. ``nvidia-smi`` equivalent: ``nvidia-smi -q``. ``processes=False`` skips the per-GPU
    process list, which is slow (milliseconds per GPU) and holds a driver lock.
    """
    reader = as_reader(machine)
    flag(processes, "processes")
    gpus = tuple(reader.info(i, processes=processes) for i in range(reader.count()))
    return Inventory(
        gpus,
        host_info(),
        reader.driver_version(),
        reader.cuda_driver_version(),
        reader.error,
        simulated=bool(getattr(reader, "simulated", False)),
        this_machine=machine is None,
    )
