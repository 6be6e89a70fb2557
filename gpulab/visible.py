"""``CUDA_VISIBLE_DEVICES`` read exactly as CUDA reads it, and the ``cuda:k`` → physical GPU map it implies (pure).

CUDA reads the list left to right and stops at the first entry it cannot use; a device named twice makes the whole
list invalid (no GPU at all). Entries are indices (parsed like C's ``strtoul``: ``"1gpu"`` is 1), ``GPU-<uuid>``
(a unique prefix is enough) or ``MIG-<uuid>``. Indices count in CUDA's device order: ``CUDA_DEVICE_ORDER=PCI_BUS_ID``
makes it nvidia-smi's order; the default, ``FASTEST_FIRST``, can differ from it on machines with mixed GPU models.
NVML (and so nvidia-smi) ignores the variable: map through UUIDs. Taught in ``notebooks/02_choosing_gpus.ipynb``.
"""
from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from .readings import GpuInfo
from .tables import html_table, text_table

__all__ = ["VisibleSpec", "LogicalDevice", "VisibleMap", "parse_visible_devices", "visible_map"]

Entry = int | str


@dataclass(frozen=True)
class VisibleSpec:
    """The parsed variable: ``entries`` CUDA accepts (ints or UUID strings) and, in words, where and why it stopped."""

    raw: str | None
    entries: tuple[Entry, ...] | None  # None: variable unset, every GPU visible
    notes: tuple[str, ...] = ()

    @property
    def unset(self) -> bool:
        return self.entries is None


def _strtoul(s: str) -> int:
    """The leading integer of ``s`` the way CUDA's parser sees it; -1 when there is none (or it is negative)."""
    digits = ""
    for i, c in enumerate(s):
        if c.isdigit() or (i == 0 and c in "+-"):
            digits += c
        else:
            break
    if digits in ("", "+", "-"):
        return -1
    return int(digits)


def parse_visible_devices(raw: str | None) -> VisibleSpec:
    """Parse ``CUDA_VISIBLE_DEVICES`` (without looking at any GPU). ``None`` means the variable is unset."""
    if raw is None:
        return VisibleSpec(None, None, ("CUDA_VISIBLE_DEVICES is unset: every GPU is visible, cuda:k is the k-th in CUDA's order.",))
    for prefix in ("GPU-", "MIG-"):
        if raw.startswith(prefix):
            out: list[str] = []
            for elem in raw.split(","):
                if elem in out:
                    return VisibleSpec(raw, (), (f"{elem!r} is listed twice, which makes the whole list invalid: no GPU is visible.",))
                if not elem.startswith(prefix):
                    return VisibleSpec(raw, tuple(out), (f"{elem!r} does not start with {prefix!r} like the first entry, so CUDA stops reading there.",))
                out.append(elem)
            return VisibleSpec(raw, tuple(out))
    nums: list[int] = []
    for elem in raw.split(","):
        x = _strtoul(elem.strip())
        if x >= 0 and x in nums:
            return VisibleSpec(raw, (), (f"GPU {x} is listed twice, which makes the whole list invalid: no GPU is visible.",))
        if x < 0:
            why = "is empty" if not elem.strip() else ("is negative" if elem.strip().startswith("-") else "is not a number")
            note = (f"{elem!r} {why}, so CUDA stops reading there" + (f" and ignores everything after it." if nums or raw != elem else "."))
            if not nums:
                note += " No GPU is visible (this is how `CUDA_VISIBLE_DEVICES=` or `=-1` hides every GPU)."
            return VisibleSpec(raw, tuple(nums), (note,))
        nums.append(x)
    return VisibleSpec(raw, tuple(nums))


@dataclass(frozen=True)
class LogicalDevice:
    """``cuda:<cuda_index>`` in this process is the GPU NVML calls ``physical_index`` (or a MIG slice of it)."""

    cuda_index: int
    physical_index: int
    uuid: str
    name: str
    mig_uuid: str | None = None


@dataclass(frozen=True)
class VisibleMap:
    """What a process started with this environment would see, on these GPUs."""

    raw: str | None
    device_order: str
    devices: tuple[LogicalDevice, ...]
    notes: tuple[str, ...] = field(default=())

    def physical(self, cuda_index: int) -> LogicalDevice:
        if not 0 <= cuda_index < len(self.devices):
            raise IndexError(
                f"cuda:{cuda_index} does not exist here: this process would see {len(self.devices)} GPU(s)"
                f" (CUDA_VISIBLE_DEVICES={self.raw!r}). CUDA numbers the visible GPUs 0..{len(self.devices) - 1}."
            )
        return self.devices[cuda_index]

    def rows(self) -> list[list[str]]:
        return [[f"cuda:{d.cuda_index}", str(d.physical_index), d.name, d.mig_uuid or d.uuid] for d in self.devices]

    _HEAD = ("torch sees", "physical (nvidia-smi)", "name", "uuid")

    def __str__(self) -> str:
        head = f"CUDA_VISIBLE_DEVICES={'(unset)' if self.raw is None else repr(self.raw)}, CUDA_DEVICE_ORDER={self.device_order}"
        body = text_table(self._HEAD, self.rows(), indent="  ") if self.devices else "  no GPU visible"
        return "\n".join([head, body, *(f"  note: {n}" for n in self.notes)])

    def _repr_html_(self) -> str:
        import html

        notes = "".join(f"<li>{html.escape(n)}</li>" for n in self.notes)
        table = html_table(self._HEAD, self.rows()) if self.devices else "<p>no GPU visible</p>"
        return f"<div><code>{html.escape(str(self).splitlines()[0])}</code>{table}<ul>{notes}</ul></div>"


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
    """Map each ``cuda:k`` to a physical GPU for a process started with ``env`` (default: this process's environment)."""
    env = os.environ if env is None else env
    raw = env.get("CUDA_VISIBLE_DEVICES")
    order = env.get("CUDA_DEVICE_ORDER", "FASTEST_FIRST")
    notes: list[str] = []
    if order not in ("FASTEST_FIRST", "PCI_BUS_ID"):
        notes.append(f"CUDA_DEVICE_ORDER={order!r} is not a value CUDA knows (FASTEST_FIRST or PCI_BUS_ID); CUDA uses FASTEST_FIRST.")
        order = "FASTEST_FIRST"
    spec = parse_visible_devices(raw)
    notes.extend(n for n in spec.notes if not spec.unset)
    cuda_order = _cuda_order(gpus, order, notes)
    out: list[LogicalDevice] = []
    if spec.unset:
        out = [LogicalDevice(k, g.physical_index, g.uuid, g.name) for k, g in enumerate(cuda_order)]
    else:
        for entry in spec.entries or ():
            found = _resolve(entry, cuda_order, notes)
            if found is None:
                break
            if any((d.physical_index, d.mig_uuid) == (found.physical_index, found.mig_uuid) for d in out):
                notes.append(f"{entry!r} names a GPU already in the list: the whole list is invalid, no GPU is visible.")
                out = []
                break
            out.append(LogicalDevice(len(out), found.physical_index, found.uuid, found.name, found.mig_uuid))
    if not gpus:
        notes.append("No GPU was found on this machine, so no cuda:k exists whatever the variable says.")
    return VisibleMap(raw, order, tuple(out), tuple(notes))


def _resolve(entry: Entry, cuda_order: list[GpuInfo], notes: list[str]) -> LogicalDevice | None:
    if isinstance(entry, int):
        if entry >= len(cuda_order):
            if cuda_order:
                notes.append(f"GPU {entry} does not exist (there are {len(cuda_order)}), so CUDA stops reading there.")
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
            notes.append(f"{entry!r} matches {'no' if not hits else 'more than one'} {kind} UUID, so CUDA stops reading there.")
        return None
    g, m = hits[0]
    return LogicalDevice(-1, g.physical_index, g.uuid, g.name, m.uuid if m else None)
