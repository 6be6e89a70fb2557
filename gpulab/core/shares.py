"""Shares of one GPU: how much memory each kernel that shares a card may hold, and how the room reads it (pure).

An instructor lets N kernels share each GPU. Every kernel on the card pays for its own CUDA context before it holds a
single tensor (618 MiB on an H100, measured with nvidia-smi before and after:
``evidence/2026-11-26-h100-80gb-hbm3.md``), and that memory is outside what PyTorch's allocator counts or caps. So each
share's cap is what is left of the card after N contexts, split N ways, rounded down to a whole MiB:

    cap = (memory_total - N x context) / N          an 80 GB H100 (81079 MiB) in 3 shares: 25.8 GiB each

The kernel enforces its cap with ``torch.cuda.set_per_process_memory_fraction`` when CUDA starts in it
(``gpulab.machine.memory_cap``), told through ``GPULAB_MEMORY_CAP``, whose value ``GpuShare.environment()`` gives;
the picker and the watch say ``share 2 of 3 of GPU 4 (25.8 GiB cap)``.
"""

from __future__ import annotations

from dataclasses import dataclass

from .arguments import is_whole_number, shown
from .units import format_bytes

__all__ = ["CONTEXT_BYTES", "MEMORY_CAP_VARIABLE", "GpuShare", "max_shares", "share_cap_bytes", "shares_of"]

MiB = 1024**2
# A CUDA context on an H100 with torch 2.11 (driver 580): nvidia-smi's used memory before and after the first CUDA
# tensor (evidence/2026-11-26-h100-80gb-hbm3.md, "a CUDA context"). Other cards and drivers differ by some 100 MiB.
CONTEXT_BYTES = 618 * MiB
MEMORY_CAP_VARIABLE = "GPULAB_MEMORY_CAP"  # read at a kernel's CUDA start; ``core.memory_cap_text`` reads its value


def share_cap_bytes(memory_total_bytes: int, shares: int, *, context_bytes: int = CONTEXT_BYTES) -> int:
    """Each of ``shares`` kernels' memory cap on a card of ``memory_total_bytes``: what is left after one CUDA context
    per kernel, split evenly, rounded down to a whole MiB. Refuses a card too small for that many contexts.

    ``memory_total_bytes`` is what processes can have of the card: torch's ``total_memory``, or NVML's total less what
    it shows used with nothing running. The driver keeps that part for itself: on the H100, NVML read 79.6 GiB total
    and 480 MiB used with no process (the first H100 run's ``python -m gpulab devices``), and torch 81079 MiB (its
    evidence file). Caps computed from NVML's 79.6 GiB would add up to more than the card gives, and the last kernel
    would meet a full card before its cap."""
    if not is_whole_number(shares) or shares < 1:
        raise ValueError(
            f"shares={shown(shares)}: the number of kernels that share one GPU is a whole number ≥ 1 "
            "(1: a whole GPU per kernel; 3: three kernels per GPU)."
        )
    for name, value in (("memory_total_bytes", memory_total_bytes), ("context_bytes", context_bytes)):
        if not is_whole_number(value) or value < 0:
            raise ValueError(f"{name}={shown(value)}: a number of bytes is a whole number ≥ 0.")
    left = memory_total_bytes - shares * context_bytes
    if left < shares * 256 * MiB:
        raise ValueError(
            f"A GPU of {format_bytes(memory_total_bytes)} cannot be split into {shares} shares: each kernel's CUDA "
            f"context alone takes about {format_bytes(context_bytes)}, which would leave "
            f"{format_bytes(max(left, 0) / shares)} per kernel for tensors. Choose fewer shares per GPU "
            f"(at most {max_shares(memory_total_bytes, context_bytes=context_bytes)} on this card)."
        )
    return left // shares // MiB * MiB


def max_shares(memory_total_bytes: int, *, context_bytes: int = CONTEXT_BYTES) -> int:
    """The most shares a card can hold with at least 256 MiB per kernel beside its context (0 for a tiny card)."""
    return max(memory_total_bytes // (context_bytes + 256 * MiB), 0)


@dataclass(frozen=True)
class GpuShare:
    """One of ``shares`` parts of GPU ``physical_index``: ``share`` counts from 1, as the room reads it."""

    physical_index: int
    share: int
    shares: int
    cap_bytes: int

    def __str__(self) -> str:
        if self.shares == 1:
            return f"GPU {self.physical_index} (whole, {format_bytes(self.cap_bytes)} cap)"
        return f"share {self.share} of {self.shares} of GPU {self.physical_index} ({format_bytes(self.cap_bytes)} cap)"

    def environment(self) -> dict[str, str]:
        """What a kernel holding this share needs in its environment to enforce the cap at CUDA start."""
        return {MEMORY_CAP_VARIABLE: str(self.cap_bytes)}


def shares_of(physical_index: int, memory_total_bytes: int, shares: int) -> tuple[GpuShare, ...]:
    """The ``shares`` equal shares of one card, numbered 1 to ``shares``."""
    cap = share_cap_bytes(memory_total_bytes, shares)
    return tuple(GpuShare(physical_index, k, shares, cap) for k in range(1, shares + 1))
