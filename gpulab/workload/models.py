"""The chapters' models, built the same way every time (seeded), so runs on one device, DataParallel and DDP compare.

Taught in ``notebooks/05_live_monitor.ipynb``.
"""
from __future__ import annotations

import torch

__all__ = ["mlp"]


def mlp(inputs: int = 64, hidden: int = 1024, classes: int = 10, *, seed: int = 0) -> torch.nn.Module:
    """Two hidden ReLU layers of ``hidden`` units: big enough that a step is real work, small enough for a laptop."""
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(inputs, hidden), torch.nn.ReLU(),
                               torch.nn.Linear(hidden, hidden), torch.nn.ReLU(),
                               torch.nn.Linear(hidden, classes))
