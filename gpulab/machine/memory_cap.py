"""A kernel's memory cap on its GPU, applied as CUDA starts in that kernel and not before (a probe: torch).

Kernels that share a GPU each get ``GPULAB_MEMORY_CAP`` in their environment (``core.memory_cap_text`` reads its
value, ``core.shares`` computes it). When ``torch.cuda`` is imported in a process that has imported gpulab
(``cuda_watch``), ``watch`` queues the cap with PyTorch's own calls-at-CUDA-start (``compat.at_cuda_start``): nothing
touches CUDA then, so ``import gpulab``, ``import torch`` and the kernel's start stay CUDA-free, and
``CUDA_VISIBLE_DEVICES`` can still change. As CUDA starts (the first tensor on a GPU), before any tensor is made,
``torch.cuda.set_per_process_memory_fraction`` caps PyTorch's allocator on each visible GPU. A kernel that goes over
gets PyTorch's ``OutOfMemoryError`` (its own allocation fails; the other kernels on the card keep their memory), with
one more line (``add_cap_note``): the cap, what the kernel holds, and what to do. In a notebook the line is added by
gpulab's short tracebacks (``%load_ext gpulab``), or, where no other handler is set, by one for that error alone.

A value that cannot be read fails CUDA's start with the reason: a kernel meant to share a card must not take it all.
The cap covers PyTorch's allocator, not the CUDA context (about 618 MiB) or libraries that allocate beside it (NCCL).
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable, Mapping
from typing import Any

from ..core.memory_cap_text import MEMORY_CAP_VARIABLE, MemoryCap, over_cap_note, parse_memory_cap
from . import compat

__all__ = ["MEMORY_CAP_VARIABLE", "watch", "applied_caps", "add_cap_note"]

_applied: dict[int, int] = {}  # cuda index -> the cap in bytes, once applied at CUDA start
_queued = False
_NOTE_START = "gpulab: this kernel shares its GPU"


def watch(torch_cuda: Any, environ: Mapping[str, str] | None = None) -> bool:
    """Queue the cap that ``GPULAB_MEMORY_CAP`` names for CUDA's start in this process (called as ``torch.cuda`` is
    imported; once per process). True when something was queued: the cap, or the refusal of a value it cannot read."""
    global _queued
    if _queued:
        return False
    text = (os.environ if environ is None else environ).get(MEMORY_CAP_VARIABLE)
    try:
        cap = parse_memory_cap(text)
    except ValueError as exc:
        reason = str(exc)

        def refuse() -> None:
            raise ValueError(f"CUDA was not started in this kernel: {reason}")

        _queued = compat.at_cuda_start(torch_cuda, refuse)
        return _queued
    if cap is None:
        return False
    _queued = compat.at_cuda_start(torch_cuda, lambda: _apply(torch_cuda, cap))
    return _queued


def _apply(torch_cuda: Any, cap: MemoryCap) -> None:
    """Cap PyTorch's allocator on every GPU this process sees (runs inside CUDA's start)."""
    for index in range(torch_cuda.device_count()):
        total = torch_cuda.get_device_properties(index).total_memory
        torch_cuda.set_per_process_memory_fraction(cap.fraction_of(total), index)
        _applied[index] = cap.bytes_of(total)
    _note_out_of_memory_in_ipython()


def applied_caps() -> dict[int, int]:
    """The caps applied in this process: ``cuda`` index -> bytes (empty before CUDA starts, or without a cap)."""
    return dict(_applied)


def _torch_held(index: int) -> tuple[int, int]:
    torch = sys.modules["torch"]
    return torch.cuda.memory_allocated(index), torch.cuda.memory_reserved(index)


def add_cap_note(
    exc: BaseException,
    *,
    caps: Mapping[int, int] | None = None,
    held: Callable[[int], tuple[int, int]] = _torch_held,
) -> bool:
    """Add the line about this kernel's cap to a CUDA out-of-memory error (once); False, changing nothing, for any
    other error or where no cap applies. ``caps`` (default: ``applied_caps()``) and ``held`` (tensors and cache, in
    bytes, for a ``cuda`` index) are what this process reads; tests give their own."""
    caps = applied_caps() if caps is None else caps
    if not caps or not _is_out_of_memory(exc) or any(n.startswith(_NOTE_START) for n in getattr(exc, "__notes__", ())):
        return False
    found = re.search(r"GPU (\d+) has a total capacity", str(exc))  # torch's message names the device
    index = int(found.group(1)) if found and int(found.group(1)) in caps else min(caps)
    try:
        allocated, reserved = held(index)
        why = ""
    except Exception as failed:  # the line must never cost the learner the error it explains: say why instead
        allocated = reserved = None
        why = f"{type(failed).__name__}: {failed}".splitlines()[0][:120]
    exc.add_note(over_cap_note(caps[index], allocated, reserved, device=f"cuda:{index}", why=why))
    return True


def _is_out_of_memory(exc: BaseException) -> bool:
    torch = sys.modules.get("torch")
    oom = getattr(torch, "OutOfMemoryError", None) if torch is not None else None
    return isinstance(exc, oom) if isinstance(oom, type) else "CUDA out of memory" in str(exc)


def _note_out_of_memory_in_ipython() -> None:
    """In an IPython kernel with no handler of its own, show the cap's line under out-of-memory errors. gpulab's short
    tracebacks (``%load_ext gpulab``) add it themselves, and replace this handler."""
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None
    torch = sys.modules.get("torch")
    oom = getattr(torch, "OutOfMemoryError", None)
    if shell is None or shell.custom_exceptions or not isinstance(oom, type):
        return
    shell.set_custom_exc((oom,), _show_with_note)


def _show_with_note(
    shell: Any, etype: type[BaseException], value: BaseException, tb: Any, tb_offset: int | None = None
) -> None:
    add_cap_note(value)
    shell.showtraceback((etype, value, tb), tb_offset=tb_offset)
