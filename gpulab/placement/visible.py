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

from ..core.readings import GpuInfo
from ..core.tables import Table, TableView

__all__ = ["VisibleSpec", "LogicalDevice", "VisibleMap", "parse_visible_devices", "visible_map", "format_visible_devices"]

Entry = int | str
_ASCII_DIGITS = frozenset("0123456789")


@dataclass(frozen=True)
class VisibleSpec:
    """The parsed variable: the ``entries`` CUDA accepts (ints or UUID prefixes) and, in words, where and why it stopped.

    ``stopped_at`` is the position (0-based, in the comma-separated list) of the first entry CUDA did not use, or
    ``None`` when it used them all; ``repeated`` is True when a device named twice emptied the whole list.
    """

    raw: str | None
    entries: tuple[Entry, ...] | None  # None: variable unset, every GPU visible
    notes: tuple[str, ...] = ()
    stopped_at: int | None = None
    repeated: bool = False

    @property
    def unset(self) -> bool:
        return self.entries is None

    def __str__(self) -> str:
        if self.entries is None:
            return "CUDA_VISIBLE_DEVICES is unset: every GPU is visible."
        seen = ", ".join(map(str, self.entries)) or "nothing"
        return "\n".join([f"CUDA_VISIBLE_DEVICES={self.raw!r} → CUDA uses: {seen}", *(f"  note: {n}" for n in self.notes)])


def _strtoul(s: str) -> int:
    """The leading integer of ``s`` as C's ``strtoul`` reads it (ASCII digits, one optional sign); -1 if none or negative.

    ``"1gpu"`` → 1, ``"+2"`` → 2, ``"-0"`` → 0, ``"-1"`` → -1, ``"gpu1"``/``""``/``"+"`` → -1.
    """
    sign = s[:1] if s[:1] in ("+", "-") else ""
    digits = ""
    for c in s[len(sign):]:
        if c not in _ASCII_DIGITS:
            break
        digits += c
    if not digits:
        return -1
    return int(sign + digits)


def _why_invalid(elem: str) -> str:
    e = elem.strip()
    if not e:
        return "is empty"
    if e.startswith("-") and _strtoul(e) < 0:
        return "is negative"
    return "does not start with a number"


def parse_visible_devices(raw: str | None) -> VisibleSpec:
    """Parse ``CUDA_VISIBLE_DEVICES`` by CUDA's rules, without looking at any GPU. ``None`` means unset.

    The same rules as PyTorch's ``torch.cuda._parse_visible_devices`` (tested against it), except that a lone sign
    (``"+"``) is an invalid entry here where PyTorch raises ``ValueError``, and only ASCII digits count as digits.
    """
    if raw is None:
        return VisibleSpec(None, None, ("CUDA_VISIBLE_DEVICES is unset: every GPU is visible, cuda:k is the k-th in CUDA's order.",))
    elems = raw.split(",")
    for prefix in ("GPU-", "MIG-"):
        if raw.startswith(prefix):
            out: list[str] = []
            for pos, elem in enumerate(elems):
                if elem in out:
                    return VisibleSpec(raw, (), (f"{elem!r} is listed twice, which makes the whole list invalid: "
                                                 "no GPU is visible.",), pos, True)
                if not elem.startswith(prefix):
                    return VisibleSpec(raw, tuple(out), (f"{elem!r} does not start with {prefix!r} like the first entry, "
                                                         f"so CUDA stops reading there{_after(out)}.",), pos)
                out.append(elem)
            return VisibleSpec(raw, tuple(out))
    nums: list[int] = []
    for pos, elem in enumerate(elems):
        x = _strtoul(elem.strip())
        if x >= 0 and x in nums:
            return VisibleSpec(raw, (), (f"GPU {x} is listed twice ({elem!r}), which makes the whole list invalid: "
                                         "no GPU is visible.",), pos, True)
        if x < 0:
            note = f"{elem!r} {_why_invalid(elem)}, so CUDA stops reading there{_after(nums)}."
            if not nums:
                note += " No GPU is visible (this is how `CUDA_VISIBLE_DEVICES=` or `=-1` hides every GPU)."
            return VisibleSpec(raw, tuple(nums), (note,), pos)
        nums.append(x)
    return VisibleSpec(raw, tuple(nums))


def _after(kept: Sequence[Entry]) -> str:
    return f" and keeps only what came before it ({', '.join(map(str, kept))})" if kept else ""


def format_visible_devices(entries: Sequence[int | str]) -> str:
    """The value to write for these GPUs, in this order: ``[2, 3]`` → ``"2,3"``; UUIDs are kept as given.

    Refuses lists CUDA would cut short or empty (a repeat, a negative index, an empty or mixed entry), saying why.
    """
    texts = [str(e).strip() for e in entries]
    value = ",".join(texts)
    spec = parse_visible_devices(value)
    if not texts:
        return ""
    if spec.stopped_at is not None or spec.repeated:
        raise ValueError(
            f"CUDA_VISIBLE_DEVICES={value!r} would not mean what the list {list(entries)!r} says: "
            f"{spec.notes[0]} Give each GPU once, as an index (0, 1, …) or a UUID (GPU-…/MIG-…), not both kinds."
        )
    return value


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

    def physical(self, cuda_index: int) -> LogicalDevice:
        if not 0 <= cuda_index < len(self.devices):
            raise IndexError(
                f"cuda:{cuda_index} does not exist here: this process would see {len(self.devices)} GPU(s)"
                f" (CUDA_VISIBLE_DEVICES={self.raw!r}). CUDA numbers the visible GPUs 0..{len(self.devices) - 1}."
            )
        return self.devices[cuda_index]

    def cuda_indices_of(self, physical_index: int) -> tuple[int, ...]:
        """Which ``cuda:k`` (if any) is the physical GPU ``physical_index`` (several for MIG slices of one GPU)."""
        return tuple(d.cuda_index for d in self.devices if d.physical_index == physical_index)

    def rows(self) -> list[list[str]]:
        return [[f"cuda:{d.cuda_index}", str(d.physical_index), d.name, d.mig_uuid or d.uuid] for d in self.devices]

    _HEAD = ("torch sees", "physical (nvidia-smi)", "name", "uuid")

    def table(self) -> Table:
        head = f"CUDA_VISIBLE_DEVICES={'(unset)' if self.raw is None else repr(self.raw)}, CUDA_DEVICE_ORDER={self.device_order}"
        return Table(self._HEAD, self.rows(), title=head, notes=[f"  note: {n}" for n in self.notes],
                     empty="no GPU visible")


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

    ``gpus`` are NVML's physical GPUs (``devices().gpus``, or a ``SimulatedGpuReader``'s). Integer entries count in
    CUDA's order, UUID entries match by unique prefix; both stop at the first entry that names no GPU, as CUDA does.
    """
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
    for d in out:
        g = next((g for g in gpus if g.physical_index == d.physical_index), None)
        if g is not None and g.mig_enabled is True and d.mig_uuid is None:
            notes.append(f"GPU {g.physical_index} is in MIG mode: CUDA runs work on its MIG slices, never on the whole "
                         "GPU. Name one slice by its MIG-… UUID (nvidia-smi -L lists them) to use it.")
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
