"""Test seams: a fake clock, the ``gpu``/``multigpu`` skip markers and a described GPU made busy (only the tests use
them).

Only our own seam in front of missing hardware (NVML) is faked: tests describe GPUs with
``gpulab.machine.simulated.SimulatedGpuReader`` (default: two GPUs, one a MIG parent, one with a refused field).
torch.distributed, processes, matplotlib and widgets run for real in the tests.
"""

from __future__ import annotations

import threading

import pytest

from gpulab.machine.cuda import too_few_gpus
from gpulab.machine.simulated import SimulatedGpuReader

__all__ = ["FakeClock", "requires_gpus", "set_usage"]


class FakeClock:
    """A monotonic clock that moves only when told (``advance``) or when something ``sleep``s on it."""

    def __init__(self, start: float = 1000.0) -> None:
        self._t = start
        self._lock = threading.Lock()

    def __call__(self) -> float:
        with self._lock:
            return self._t

    def advance(self, seconds: float) -> None:
        """Move the clock ``seconds`` forward (never back); ``sleep`` is the same, so code that sleeps on this clock
        returns at once."""
        if seconds < 0:
            raise ValueError("a clock cannot go backwards")
        with self._lock:
            self._t += seconds

    sleep = advance


def requires_gpus(n: int = 1) -> pytest.MarkDecorator:
    """``@requires_gpus(2)``: skip with the reason unless n CUDA GPUs are usable. Use with the gpu/multigpu marker."""
    reason = too_few_gpus(n)
    return pytest.mark.skipif(reason is not None, reason=f"this test {reason}")


def set_usage(
    reader: SimulatedGpuReader,
    i: int,
    *,
    memory_used_bytes: int | None = None,
    utilization_gpu_percent: int | None = None,
) -> None:
    """Change described GPU ``i``'s memory used or utilisation while the reader is being read (under its lock), so that
    a monitor or a choice sees a busy GPU."""
    with reader._lock:
        g = reader.description["gpus"][i]
        if memory_used_bytes is not None:
            g["memory_used_bytes"] = int(memory_used_bytes)
        if utilization_gpu_percent is not None:
            g["utilization_gpu_percent"] = int(utilization_gpu_percent)
