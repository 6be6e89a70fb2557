"""``CUDA_VISIBLE_DEVICES`` as text: read exactly as the CUDA runtime reads it, and written so that it means what a list
says.

CUDA reads the list left to right and stops at the first entry it cannot use; a device named twice makes the whole
list invalid (no GPU at all). Entries are indices (parsed like C's ``strtoul``: ``"1gpu"`` is 1), ``GPU-<uuid>``
(a unique prefix is enough) or ``MIG-<uuid>``. What the entries map to on a machine is ``visible.py``'s job.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from dataclasses import dataclass

from .arguments import is_whole_number, shown

__all__ = ["VisibleSpec", "parse_visible_devices", "format_visible_devices"]

Entry = int | str
_ASCII_DIGITS = frozenset("0123456789")
ULONG_MAX = 2**64 - 1  # what C's strtoul gives for a number too large to hold


@dataclass(frozen=True)
class VisibleSpec:
    """The parsed variable: the ``entries`` CUDA accepts (ints or UUID prefixes) and, in words, where and why it
    stopped.

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
        return "\n".join(
            [f"CUDA_VISIBLE_DEVICES={shown(self.raw)} → CUDA uses: {seen}", *(f"  note: {n}" for n in self.notes)]
        )


def _leading(s: str) -> tuple[int, str]:
    """The leading integer of ``s`` as C's ``strtoul`` reads it (ASCII digits, one optional sign; -1 if none or
    negative; ``ULONG_MAX`` if too large), and the rest of ``s`` that it ignores."""
    sign = s[:1] if s[:1] in ("+", "-") else ""
    end = len(sign)
    while end < len(s) and s[end] in _ASCII_DIGITS:
        end += 1
    digits = s[len(sign) : end]
    if not digits:
        return -1, s
    value = int(digits) if len(digits) <= 20 else ULONG_MAX + 1  # int() of thousands of digits is refused
    if sign == "-" and value:
        return -1, s[end:]
    return min(value, ULONG_MAX), s[end:]


def _read_as(elem: str, x: int, rest: str) -> str | None:
    """A note when CUDA reads an entry as something other than what it seems to say (``0x1``, ``2;3``, huge)."""
    if x == ULONG_MAX:
        return (
            f"{shown(elem.strip(), 30)} is larger than any number CUDA holds: it reads it as {ULONG_MAX}, a GPU "
            "no machine has."
        )
    if not rest:
        return None
    head = (
        f"{shown(elem.strip(), 30)} is read as GPU {x}: CUDA reads the leading decimal digits and ignores the rest "
        f"({shown(rest, 20)})"
    )
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
        return VisibleSpec(
            None, None, ("CUDA_VISIBLE_DEVICES is unset: every GPU is visible, cuda:k is the k-th in CUDA's order.",)
        )
    if not isinstance(raw, str):
        example = ",".join(map(str, raw)) if isinstance(raw, (list, tuple)) else str(raw)
        raise TypeError(
            f"parse_visible_devices reads the variable's text, a str such as {example!r}; got a "
            f"{type(raw).__name__} {shown(raw)}. To set the variable from a list of GPUs, use "
            "gpulab.set_visible_devices([2, 3])."
        )
    elems = raw.split(",")
    for prefix in ("GPU-", "MIG-"):
        if raw.startswith(prefix):
            out: list[str] = []
            for pos, elem in enumerate(elems):
                if elem in out:
                    return VisibleSpec(
                        raw,
                        (),
                        (f"{shown(elem)} is listed twice, which makes the whole list invalid: no GPU is visible.",),
                        pos,
                        True,
                    )
                if not elem.startswith(prefix):
                    return VisibleSpec(
                        raw,
                        tuple(out),
                        (
                            f"{shown(elem)} does not start with {prefix!r} like the first "
                            f"entry, so CUDA stops reading there{_after(out)}.",
                        ),
                        pos,
                    )
                out.append(elem)
            return VisibleSpec(raw, tuple(out))
    nums: list[int] = []
    notes: list[str] = []
    for pos, elem in enumerate(elems):
        x, rest = _leading(elem.strip())
        if x >= 0 and x in nums:
            return VisibleSpec(
                raw,
                (),
                (
                    *notes,
                    f"GPU {x} is listed twice ({shown(elem, 30)}), which makes the whole "
                    "list invalid: no GPU is visible.",
                ),
                pos,
                True,
            )
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
        raise ValueError(
            f"{shown(entry)} in {shown(list(entries))} is not one GPU: {why} Write each GPU as its own "
            "entry, a whole number (nvidia-smi's numbering) or a UUID: e.g. [2, 3] or 'GPU-5a16…'."
        )
    if is_whole_number(entry):
        return str(operator.index(entry))
    finite = isinstance(entry, float) and 0 <= entry < 2**63
    extra = f" (CUDA would read '{entry}' as GPU {int(entry)})" if finite else ""
    raise TypeError(
        f"{shown(entry)} in {shown(list(entries))} is a {type(entry).__name__}, not a GPU{extra}: "
        "GPUs are whole numbers 0, 1, 2, … (nvidia-smi's numbering) or UUID strings 'GPU-…'."
    )
