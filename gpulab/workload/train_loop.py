"""The chapters' training loop and accuracy: plain PyTorch, optionally watched by ``gpulab.monitor``.

The loop takes the monitor as an argument, so the same function runs watched or not: it marks each epoch and
counts each batch through ``mon.wrap(loader)``. Taught in ``notebooks/05_live_monitor.ipynb``.
"""

from __future__ import annotations

from typing import Any

import torch
from torch.utils.data import DataLoader, TensorDataset

from ..core.arguments import whole_number

__all__ = ["train", "accuracy"]


def train(
    model: torch.nn.Module,
    loader: DataLoader,
    epochs: int,
    mon: Any = None,
    device: str | torch.device = "cpu",
    *,
    lr: float = 0.05,
    momentum: float = 0.9,
) -> torch.nn.Module:
    """SGD with momentum on cross-entropy for ``epochs`` passes over ``loader``; batches are moved to ``device``.

    With ``mon`` (a running ``gpulab.monitor``), each epoch is marked ``"epoch k"`` and each batch counted.
    Returns the model (trained in place).
    """
    epochs = whole_number(
        epochs, "epochs", what="how many passes over the data to make", example="train(model, loader, epochs=2)"
    )
    opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=momentum)
    for epoch in range(1, epochs + 1):
        if mon is not None:
            mon.mark(f"epoch {epoch}")
        for xb, yb in mon.wrap(loader) if mon is not None else loader:
            xb, yb = xb.to(device), yb.to(device)
            opt.zero_grad(set_to_none=True)
            torch.nn.functional.cross_entropy(model(xb), yb).backward()
            opt.step()
    return model


def accuracy(
    model: torch.nn.Module, data: TensorDataset, device: str | torch.device = "cpu", *, batch_size: int = 500
) -> float:
    """Share of ``data``'s images whose most likely class is the label (0–1), without gradients, in evaluation mode
    (dropout off; the model's mode is put back after), ``batch_size`` images at a time so big test sets fit."""
    x, y = data.tensors[:2]
    if len(x) == 0:
        raise ValueError("accuracy of no images: the data set is empty (check the split or the slice you passed).")
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            guess = torch.cat(
                [model(x[i : i + batch_size].to(device)).argmax(dim=1).cpu() for i in range(0, len(x), batch_size)]
            )
    finally:
        model.train(was_training)
    return (guess == y).float().mean().item()
