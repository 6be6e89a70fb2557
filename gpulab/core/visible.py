"""``CUDA_VISIBLE_DEVICES`` read exactly as CUDA reads it, and the ``cuda:k`` → physical GPU map it implies (pure).

CUDA reads the list left to right and stops at the first entry it cannot use; a device named twice makes the whole
list invalid (no GPU at all). Entries are indices (parsed like C's ``strtoul``: ``"1gpu"`` is 1), ``GPU-<uuid>``
(a unique prefix is enough) or ``MIG-<uuid>``. Indices count in CUDA's device order: ``CUDA_DEVICE_ORDER=PCI_BUS_ID``
makes it nvidia-smi's order; the default, ``FASTEST_FIRST``, can differ from it on machines with mixed GPU models.
NVML (and so nvidia-smi) ignores the variable: map through UUIDs. Taught in ``notebooks/02_choosing_gpus.ipynb``.
"""
from __future__ import annotations

import operator
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from .arguments import environment, gpu_list, is_whole_number, shown, whole_number
from .readings import GpuInfo
from .renamed import renamed_keywords
from .tables import Table, TableView

__all__ = ["VisibleSpec", "LogicalDevice", "VisibleMap", "parse_visible_devices", "visible_map", "format_visible_devices"]

Entry = int | str
_ASCII_DIGITS = frozenset("0123456789")
ULONG_MAX = 2**64 - 1  # what C's strtoul gives for a number too large to hold


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
        """Whether the variable is unset, which makes every GPU visible."""
        return self.entries is None

    def __str__(self) -> str:
        if self.entries is None:
            return "CUDA_VISIBLE_DEVICES is unset: every GPU is visible."
        seen = ", ".join(map(str, self.entries)) or "nothing"
        return "\n".join([f"CUDA_VISIBLE_DEVICES={shown(self.raw)} → CUDA uses: {seen}",
                          *(f"  note: {n}" for n in self.notes)])


def _leading(s: str) -> tuple[int, str]:
    """The leading integer of ``s`` as C's ``strtoul`` reads it (ASCII digits, one optional sign; -1 if none or
    negative; ``ULONG_MAX`` if too large), and the rest of ``s`` that it ignores."""
    sign = s[:1] if s[:1] in ("+", "-") else ""
    end = len(sign)
    while end < len(s) and s[end] in _ASCII_DIGITS:
        end += 1
    digits = s[len(sign):end]
    if not digits:
        return -1, s
    value = int(digits) if len(digits) <= 20 else ULONG_MAX + 1  # int() of thousands of digits is refused
    if sign == "-" and value:
        return -1, s[end:]
    return min(value, ULONG_MAX), s[end:]


def _strtoul(s: str) -> int:
    """``"1gpu"`` → 1, ``"+2"`` → 2, ``"-0"`` → 0, ``"-1"`` → -1, ``"gpu1"``/``""``/``"+"`` → -1 (see ``_leading``)."""
    return _leading(s)[0]


def _read_as(elem: str, x: int, rest: str) -> str | None:
    """A note when CUDA reads an entry as something other than what it seems to say (``0x1``, ``2;3``, huge)."""
    if x == ULONG_MAX:
        return (f"{shown(elem.strip(), 30)} is larger than any number CUDA holds: it reads it as {ULONG_MAX}, a GPU "
                "no machine has.")
    if not rest:
        return None
    head = f"{shown(elem.strip(), 30)} is read as GPU {x}: CUDA reads the leading decimal digits and ignores the rest " \
           f"({shown(rest, 20)})"
    if x == 0 and rest[:1] in ("x", "X"):
        try:
            decimal = f" ({int(elem.strip(), 16)} here)"
        except ValueError:
            decimal = ""
        return head + f"; hexadecimal is not understood: write the GPU's number in decimal{decimal}."
    if rest[:1] == "." and rest[1:2] in _ASCII_DIGITS:
        return head + "; GPUs are numbered 0, 1, 2, … with no fractions."
    if rest[:1] in (";", ":", " ", "\t", "|", "/", "+") and any(c in _ASCII_DIGITS for c in rest):
        fixed = ",".join(p for p in "".join(c if c in _ASCII_DIGITS else " " for c in elem).split())
        return head + f". To name several GPUs, separate them with commas: {fixed!r}."
    return head + "."


def _why_invalid(elem: str) -> str:
    e = elem.strip()
    if not e:
        return "is empty"
    if e.startswith("-") and e[1:2] in _ASCII_DIGITS and e[1:2]:
        return "is negative"
    return "does not start with a number"


def parse_visible_devices(raw: str | None) -> VisibleSpec:
    """Parse ``CUDA_VISIBLE_DEVICES`` by CUDA's rules, without looking at any GPU. ``None`` means unset.

    The same rules as PyTorch's ``torch.cuda._parse_visible_devices`` (tested against it), except that a lone sign
    (``"+"``) is an invalid entry here where PyTorch raises ``ValueError``, and only ASCII digits count as digits.
    """
    if raw is None:
        return VisibleSpec(None, None, ("CUDA_VISIBLE_DEVICES is unset: every GPU is visible, cuda:k is the k-th in CUDA's order.",))
    if not isinstance(raw, str):
        example = ",".join(map(str, raw)) if isinstance(raw, (list, tuple)) else str(raw)
        raise TypeError(f"parse_visible_devices reads the variable's text, a str such as {example!r}; got a "
                        f"{type(raw).__name__} {shown(raw)}. To set the variable from a list of GPUs, use "
                        "gpulab.set_visible_devices([2, 3]).")
    elems = raw.split(",")
    for prefix in ("GPU-", "MIG-"):
        if raw.startswith(prefix):
            out: list[str] = []
            for pos, elem in enumerate(elems):
                if elem in out:
                    return VisibleSpec(raw, (), (f"{shown(elem)} is listed twice, which makes the whole list invalid: "
                                                 "no GPU is visible.",), pos, True)
                if not elem.startswith(prefix):
                    return VisibleSpec(raw, tuple(out), (f"{shown(elem)} does not start with {prefix!r} like the first "
                                                         f"entry, so CUDA stops reading there{_after(out)}.",), pos)
                out.append(elem)
            return VisibleSpec(raw, tuple(out))
    nums: list[int] = []
    notes: list[str] = []
    for pos, elem in enumerate(elems):
        x, rest = _leading(elem.strip())
        if x >= 0 and x in nums:
            return VisibleSpec(raw, (), (*notes, f"GPU {x} is listed twice ({shown(elem, 30)}), which makes the whole "
                                         "list invalid: no GPU is visible."), pos, True)
        if x < 0:
            note = f"{shown(elem, 30)} {_why_invalid(elem)}, so CUDA stops reading there{_after(nums)}."
            if not nums:
                note += " No GPU is visible (this is how `CUDA_VISIBLE_DEVICES=` or `=-1` hides every GPU)."
            return VisibleSpec(raw, tuple(nums), (*notes, note), pos)
        read_as = _read_as(elem, x, rest)
        if read_as:
            notes.append(read_as)
        nums.append(x)
    return VisibleSpec(raw, tuple(nums), tuple(notes))


def _after(kept: Sequence[Entry]) -> str:
    return f" and keeps only what came before it ({', '.join(map(str, kept))})" if kept else ""


def format_visible_devices(entries: Sequence[int | str]) -> str:
    """The value to write for these GPUs, in this order: ``[2, 3]`` → ``"2,3"``; UUIDs are kept as given.

    Refuses what CUDA would read differently from what the list says — a repeat, a negative index, an empty or mixed
    entry, a fraction (``0.5``), a number with something after it (``"2;3"``, ``"0x1"``) — saying why.
    """
    texts = [_entry_text(e, entries) for e in entries]
    value = ",".join(texts)
    if not texts:
        return ""
    spec = parse_visible_devices(value)
    if spec.stopped_at is not None or spec.repeated:
        raise ValueError(
            f"CUDA_VISIBLE_DEVICES={shown(value)} would not mean what the list {shown(list(entries))} says: "
            f"{spec.notes[-1]} Give each GPU once, as an index (0, 1, …) or a UUID (GPU-…/MIG-…), not both kinds."
        )
    return value


def _entry_text(entry: object, entries: Sequence[object]) -> str:
    """One entry as CUDA will read it exactly: a whole number ≥ 0, or a ``GPU-``/``MIG-`` UUID (prefix)."""
    if isinstance(entry, str):
        e = entry.strip()
        if e.startswith(("GPU-", "MIG-")) or (e and set(e) <= _ASCII_DIGITS):
            return e
        if e[:1] in ("-", "+") and e[1:] and set(e[1:]) <= _ASCII_DIGITS:
            return e.lstrip("+")  # a negative index is refused with CUDA's reason by the caller
        spec = parse_visible_devices(e)
        why = spec.notes[-1] if spec.notes else f"{shown(e)} does not start with a number"
        raise ValueError(f"{shown(entry)} in {shown(list(entries))} is not one GPU: {why} Write each GPU as its own "
                         "entry, a whole number (nvidia-smi's numbering) or a UUID: e.g. [2, 3] or 'GPU-5a16…'.")
    if is_whole_number(entry):
        return str(operator.index(entry))
    finite = isinstance(entry, float) and 0 <= entry < 2**63
    extra = f" (CUDA would read '{entry}' as GPU {int(entry)})" if finite else ""
    raise TypeError(f"{shown(entry)} in {shown(list(entries))} is a {type(entry).__name__}, not a GPU{extra}: "
                    "GPUs are whole numbers 0, 1, 2, … (nvidia-smi's numbering) or UUID strings 'GPU-…'.")


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

    def cuda_indices_of(self, physical_index: int) -> tuple[int, ...]:
        """Which ``cuda:k`` (if any) is the physical GPU ``physical_index`` (several for MIG slices of one GPU)."""
        return tuple(d.cuda_index for d in self.devices if d.physical_index == physical_index)

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


@renamed_keywords()
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
        notes.append(f"CUDA_DEVICE_ORDER={shown(order)} is not a value CUDA knows (FASTEST_FIRST or PCI_BUS_ID); "
                     "CUDA uses FASTEST_FIRST.")
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
                notes.append(f"{shown(entry, 40)} names a GPU already in the list: the whole list is invalid, no GPU is "
                             "visible.")
                out, repeated = [], True
                break
            out.append(LogicalDevice(len(out), found.physical_index, found.uuid, found.name, found.mig_uuid))
    for d in out:
        g = next((g for g in gpus if g.physical_index == d.physical_index), None)
        if g is not None and g.mig_enabled is True and d.mig_uuid is None:
            notes.append(f"GPU {g.physical_index} is in MIG mode: CUDA runs work on its MIG slices, never on the whole "
                         "GPU. Name one slice by its MIG-… UUID (nvidia-smi -L lists them) to use it.")
    if not gpus:
        notes.append("No GPU was found on this machine, so no cuda:k exists whatever the variable says.")
    return VisibleMap(raw, order, tuple(out), tuple(notes), simulated=any(g.simulated for g in gpus),
                      order_is_default=default_order, repeated=repeated and bool(gpus))


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
            notes.append(f"{shown(entry, 40)} matches {'no' if not hits else 'more than one'} {kind} UUID, so CUDA stops "
                         "reading there.")
        return None
    g, m = hits[0]
    return LogicalDevice(-1, g.physical_index, g.uuid, g.name, m.uuid if m else None)
