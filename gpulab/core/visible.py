"""The ``cuda:k`` → physical GPU map that ``CUDA_VISIBLE_DEVICES`` implies on a machine's GPUs (pure).

The variable itself is read as CUDA reads it in ``visible_text.py``. Indices count in CUDA's device order:
``CUDA_DEVICE_ORDER=PCI_BUS_ID`` makes it nvidia-smi's order; the default, ``FASTEST_FIRST``, can differ from it on
machines with mixed GPU models. NVML (and so nvidia-smi) ignores the variable: map through UUIDs, as this module
does. Taught in ``notebooks/02_choosing_gpus.ipynb``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from .arguments import environment, gpu_list, shown, whole_number
from .readings import GpuInfo
from .tables import Table, TableView
from .visible_text import Entry, parse_visible_devices

__all__ = ["LogicalDevice", "VisibleMap", "visible_map"]


@dataclass(frozen=True)
class LogicalDevice:
    """``cuda:<cuda_index>`` in this process is the GPU NVML calls ``physical_index`` (or a MIG slice of it)."""

    cuda_index: int
    physical_index: int
    uuid: str
    name: str
    mig_uuid: str | None = None


@dataclass(frozen=True)
class VisibleMap(TableView):
    """What a process started with this environment would see, on these GPUs."""

    raw: str | None
    device_order: str
    devices: tuple[LogicalDevice, ...]
    notes: tuple[str, ...] = field(default=())
    simulated: bool = False  # the GPUs are described ones (SimulatedGpuReader), not this computer's
    order_is_default: bool = False  # CUDA_DEVICE_ORDER was unset (or not a value CUDA knows)
    repeated: bool = False  # a GPU named twice emptied the list (the driver then refuses to count its GPUs)

    def physical(self, cuda_index: int) -> LogicalDevice:
        """The physical GPU that ``cuda:<cuda_index>`` is (``IndexError`` naming the range if there is none)."""
        k = whole_number(cuda_index, "cuda_index", example="physical(0) for cuda:0")
        if not k < len(self.devices):
            n = len(self.devices)
            raise IndexError(
                f"cuda:{k} does not exist here: this process would see {n} GPU(s) (CUDA_VISIBLE_DEVICES="
                f"{shown(self.raw)})." + (f" CUDA numbers the visible GPUs 0..{n - 1}." if n else "")
            )
        return self.devices[k]

    def rows(self) -> list[list[str]]:
        """One row per visible device: ``cuda:k``, its physical index, its name and its UUID (the MIG slice's for a
        slice)."""
        return [[f"cuda:{d.cuda_index}", str(d.physical_index), d.name, d.mig_uuid or d.uuid] for d in self.devices]

    _HEAD = ("torch sees", "physical (nvidia-smi)", "name", "uuid")

    def environment_line(self) -> str:
        """``CUDA_VISIBLE_DEVICES='2,3', CUDA_DEVICE_ORDER=FASTEST_FIRST (default)``: what the map was made for."""
        order = self.device_order + (" (default)" if self.order_is_default else "")
        return f"CUDA_VISIBLE_DEVICES={'(unset)' if self.raw is None else shown(self.raw)}, CUDA_DEVICE_ORDER={order}"

    def table(self) -> Table:
        """The map as a table, titled with the variables it was made for (and SIMULATED for described GPUs)."""
        head = self.environment_line()
        if self.simulated:
            head = "SIMULATED machine (described GPUs, not this computer's): " + head
        return Table(
            self._HEAD, self.rows(), title=head, notes=[f"  note: {n}" for n in self.notes], empty="no GPU visible"
        )


def _cuda_order(gpus: Sequence[GpuInfo], order: str, notes: list[str]) -> list[GpuInfo]:
    ordered = sorted(gpus, key=lambda g: g.pci_bus_id)
    if order != "PCI_BUS_ID" and len({g.name for g in gpus}) > 1:
        notes.append(
            "These GPUs are of different models and CUDA_DEVICE_ORDER is FASTEST_FIRST (the default), so CUDA may "
            "number them differently from nvidia-smi; this table assumes bus order. "
            "Set CUDA_DEVICE_ORDER=PCI_BUS_ID to make cuda:k follow nvidia-smi's numbering."
        )
    return ordered


def visible_map(gpus: Sequence[GpuInfo], env: Mapping[str, str] | None = None) -> VisibleMap:
    """Map each ``cuda:k`` to a physical GPU for a process started with ``env`` (default: this process's environment).

    ``gpus``: which GPUs, as NVML read them (``devices()`` or its ``.gpus``, or a ``SimulatedGpuReader``). Integer
    entries count in CUDA's order, UUID entries match by unique prefix; both stop at the first entry that names no GPU,
    as CUDA does. A map of described GPUs says SIMULATED.
    """
    gpus = gpu_list(gpus, "gpus")
    env = os.environ if env is None else environment(env)
    raw = env.get("CUDA_VISIBLE_DEVICES")
    order = env.get("CUDA_DEVICE_ORDER", "FASTEST_FIRST")
    default_order = "CUDA_DEVICE_ORDER" not in env
    notes: list[str] = []
    if order not in ("FASTEST_FIRST", "PCI_BUS_ID"):
        notes.append(
            f"CUDA_DEVICE_ORDER={shown(order)} is not a value CUDA knows (FASTEST_FIRST or PCI_BUS_ID); "
            "CUDA uses FASTEST_FIRST."
        )
        order, default_order = "FASTEST_FIRST", True
    spec = parse_visible_devices(raw)
    notes.extend(n for n in spec.notes if not spec.unset)
    cuda_order = _cuda_order(gpus, order, notes)
    out: list[LogicalDevice] = []
    repeated = spec.repeated
    if spec.unset:
        out = [LogicalDevice(k, g.physical_index, g.uuid, g.name) for k, g in enumerate(cuda_order)]
    else:
        for entry in spec.entries or ():
            found = _resolve(entry, cuda_order, notes)
            if found is None:
                break
            if any((d.physical_index, d.mig_uuid) == (found.physical_index, found.mig_uuid) for d in out):
                notes.append(
                    f"{shown(entry, 40)} names a GPU already in the list: the whole list is invalid, no GPU is visible."
                )
                out, repeated = [], True
                break
            out.append(LogicalDevice(len(out), found.physical_index, found.uuid, found.name, found.mig_uuid))
    for d in out:
        g = next((g for g in gpus if g.physical_index == d.physical_index), None)
        if g is not None and g.mig_enabled is True and d.mig_uuid is None:
            notes.append(
                f"GPU {g.physical_index} is in MIG mode: CUDA runs work on its MIG slices, never on the whole "
                "GPU. Name one slice by its MIG-… UUID (nvidia-smi -L lists them) to use it."
            )
    if not gpus:
        notes.append("No GPU was found on this machine, so no cuda:k exists whatever the variable says.")
    return VisibleMap(
        raw,
        order,
        tuple(out),
        tuple(notes),
        simulated=any(g.simulated for g in gpus),
        order_is_default=default_order,
        repeated=repeated and bool(gpus),
    )


def _resolve(entry: Entry, cuda_order: list[GpuInfo], notes: list[str]) -> LogicalDevice | None:
    if isinstance(entry, int):
        if entry >= len(cuda_order):
            if cuda_order:
                n = len(cuda_order)
                there = "there is only GPU 0" if n == 1 else f"there are {n}, GPU 0 to GPU {n - 1}"
                notes.append(f"GPU {entry} does not exist ({there}), so CUDA stops reading there.")
            return None
        g = cuda_order[entry]
        return LogicalDevice(-1, g.physical_index, g.uuid, g.name)
    if entry.startswith("MIG-"):
        hits = [(g, m) for g in cuda_order for m in g.mig_devices if m.uuid.startswith(entry)]
        kind = "MIG slice"
    else:
        hits = [(g, None) for g in cuda_order if g.uuid.startswith(entry)]
        kind = "GPU"
    if len(hits) != 1:
        if cuda_order:
            notes.append(
                f"{shown(entry, 40)} matches {'no' if not hits else 'more than one'} {kind} UUID, so CUDA stops "
                "reading there."
            )
        return None
    g, m = hits[0]
    return LogicalDevice(-1, g.physical_index, g.uuid, g.name, m.uuid if m else None)
