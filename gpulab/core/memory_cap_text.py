"""``GPULAB_MEMORY_CAP``: a kernel's memory cap on its GPU, as the variable writes it, and the line a learner reads
when they go over it (pure).

The variable is set by whoever starts a kernel that shares a GPU (the kernel provisioner and the Hub's hooks, from
``core.shares``; by hand for a script) and read in that kernel when CUDA starts (``gpulab.machine.memory_cap``). Its
value is one of:

* a whole number of bytes: ``27858518016`` (what ``GpuShare.environment()`` writes);
* a size with a binary unit: ``26GiB``, ``800 MiB`` (``KiB``, ``MiB``, ``GiB``, ``TiB``);
* a fraction of each visible GPU's memory, written with a decimal point: ``0.33``, ``1.0`` (more than 0, at most 1).

A cap covers what PyTorch's allocator holds on each GPU the kernel sees (its tensors and its cache), not the CUDA
context (about 618 MiB), which ``core.shares`` leaves room for. Unset or empty: no cap.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .shares import MEMORY_CAP_VARIABLE
from .units import format_bytes

__all__ = ["MEMORY_CAP_VARIABLE", "MemoryCap", "parse_memory_cap", "over_cap_note"]

_UNITS = {"KiB": 1024, "MiB": 1024**2, "GiB": 1024**3, "TiB": 1024**4}
_SIZE = re.compile(r"^(\d+(?:\.\d+)?)\s*(KiB|MiB|GiB|TiB)$")
_SMALLEST = 64 * 1024**2  # below this no lesson's model fits: a typo, not a cap
_FORMS = "a number of bytes (27858518016), a size (26GiB, 800MiB) or a fraction of the GPU's memory (0.33)"


@dataclass(frozen=True)
class MemoryCap:
    """A cap as the variable gave it: ``cap_bytes`` or ``fraction`` (the other is None), and the text it came from."""

    text: str
    cap_bytes: int | None = None
    fraction: float | None = None

    def fraction_of(self, memory_total_bytes: int) -> float:
        """The fraction of a GPU of ``memory_total_bytes`` that this cap allows (at most 1), as
        ``torch.cuda.set_per_process_memory_fraction`` takes it."""
        if self.fraction is not None:
            return self.fraction
        assert self.cap_bytes is not None
        return min(1.0, self.cap_bytes / memory_total_bytes) if memory_total_bytes > 0 else 1.0

    def bytes_of(self, memory_total_bytes: int) -> int:
        """The cap in bytes on a GPU of ``memory_total_bytes`` (at most all of it)."""
        if self.cap_bytes is not None:
            return min(self.cap_bytes, memory_total_bytes)
        return int(self.fraction_of(memory_total_bytes) * memory_total_bytes)

    def __str__(self) -> str:
        if self.fraction is not None:
            return f"{self.fraction:g} of the GPU's memory"
        return format_bytes(self.cap_bytes or 0)


def parse_memory_cap(text: str | None) -> MemoryCap | None:
    """The cap that ``GPULAB_MEMORY_CAP``'s value ``text`` names; None when it is unset or empty. A value it cannot
    read is refused, naming the variable and the forms it takes: a kernel meant to share a GPU must not start
    CUDA without its cap."""
    if text is None or not text.strip():
        return None
    value = text.strip()
    where = f"{MEMORY_CAP_VARIABLE}={text!r}"
    size = _SIZE.match(value)
    if size:
        cap = int(float(size.group(1)) * _UNITS[size.group(2)])
    elif value.isdigit():
        cap = int(value)
    elif re.fullmatch(r"\d*\.\d+", value):
        fraction = float(value)
        if not 0 < fraction <= 1:
            raise ValueError(
                f"{where}: a fraction of the GPU's memory is more than 0 and at most 1 (0.33 for a third). "
                "Whoever started this kernel set it: fix it there (the kernelspec or the Hub's settings), then "
                "restart the kernel."
            )
        return MemoryCap(value, fraction=fraction)
    else:
        raise ValueError(
            f"{where} cannot be read: it is {_FORMS}. Whoever started this kernel set it: fix it there (the "
            "kernelspec or the Hub's settings), then restart the kernel."
        )
    if cap < _SMALLEST:
        raise ValueError(
            f"{where} caps this kernel at {format_bytes(cap)}, less than the {format_bytes(_SMALLEST)} any lesson "
            f"needs: a unit left out? It is {_FORMS}."
        )
    return MemoryCap(value, cap_bytes=cap)


def over_cap_note(
    cap_bytes: int, allocated_bytes: int | None, reserved_bytes: int | None, *, device: str = "cuda:0", why: str = ""
) -> str:
    """The line added under a CUDA out-of-memory error in a kernel with a cap: the cap, what the kernel holds, and
    what to do. ``allocated_bytes`` is what its tensors take, ``reserved_bytes`` what PyTorch's cache holds with
    them (``torch.cuda.memory_allocated`` / ``memory_reserved``); None, with ``why``, where they could not be read."""
    if allocated_bytes is None or reserved_bytes is None:
        holds = f"what it holds could not be read ({why or 'no reason given'})"
    else:
        cached = reserved_bytes - allocated_bytes
        cache = f" and {format_bytes(cached)} more in PyTorch's cache" if cached > 0 else ""
        holds = f"it holds {format_bytes(allocated_bytes)} in tensors{cache}"
    return (
        f"gpulab: this kernel shares its GPU and may hold at most {format_bytes(cap_bytes)} on {device} "
        f"({MEMORY_CAP_VARIABLE}); {holds}. Free tensors you no "
        "longer need (del x, then torch.cuda.empty_cache()), use a smaller batch or model, or restart the kernel "
        "to start again from nothing. The other kernels on this GPU are not affected."
    )
