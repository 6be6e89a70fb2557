"""Run a function on the device the launcher gave this rank: ``launch(on_own_device(time_plans), 2, ...)``.

A measurement that runs on every rank wants "my own GPU" — rank k on ``cuda:k`` — but only where the launcher's plan
gave every rank one (``plan_ranks``): picking ``cuda:LOCAL_RANK`` blindly fails with "invalid device ordinal" on rank
1 of a one-GPU machine, and a rank the plan put on the CPU must never touch CUDA. So the device comes from the plan:
the rank's trampoline (``worker.run_rank``) records it, ``rank_device`` reads it, and ``on_own_device(fn)`` calls
``fn(..., device=<that device>)`` after making a GPU current. Taught in ``notebooks/04_ddp.ipynb``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["rank_device", "on_own_device", "OnOwnDevice", "take_rank_device"]

_device: str | None = None  # set in each rank by worker.run_rank, from the launch plan


def take_rank_device(device: str) -> None:
    """Record this rank's device (the trampoline calls it before the function runs)."""
    global _device
    _device = device


def rank_device() -> str:
    """This rank's device as the launch plan decided it: ``"cuda:k"`` or ``"cpu"``."""
    if _device is None:
        raise RuntimeError(
            "rank_device() is known only inside a rank that gpulab.launch started (its plan gives "
            "each rank a device); here no launch started this process. Call it from the function you "
            "launch, or pass the device yourself."
        )
    return _device


@dataclass(frozen=True)
class OnOwnDevice:
    """``fn`` called with ``device=`` this rank's device (a plain class, so it travels into ranks by reference)."""

    fn: Callable[..., Any]

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        device = rank_device()
        if device.startswith("cuda"):  # a rank told "cpu" never touches CUDA
            import torch

            torch.cuda.set_device(torch.device(device))
        return self.fn(*args, device=device, **kwargs)


def on_own_device(fn: Callable[..., Any]) -> OnOwnDevice:
    """``fn`` run on each rank's own device: ``fn(*args, device=rank_device(), **kwargs)``, a GPU made current first."""
    if not callable(fn):
        raise TypeError(f"on_own_device wraps a function that takes device=; got {type(fn).__name__} {fn!r}.")
    return OnOwnDevice(fn)
