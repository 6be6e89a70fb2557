"""The fourth article's training loop, kept honest: Adam on cross-entropy, a tqdm bar per epoch, and per epoch the
loss, the training accuracy and the test accuracy, returned as a ``FitHistory`` (a table) instead of only printed.

Two things differ from the article, on purpose: the loss is the mean per training image (the article divides a sum of
per-*batch* means by the number of *images*, which shrinks it by the batch size), and the test accuracy is taken in
evaluation mode (dropout off). The same function trains a plain model or a ``DataParallel`` one: batches go to
``device``, which for DataParallel is ``device_ids[0]``. ``notebooks/03_dataparallel.ipynb`` writes the loop out in
plain PyTorch; this is the same loop as a tested function.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from typing import Any

import torch
from torch.utils.data import DataLoader

from ..core.arguments import whole_number
from ..core.tables import Table, TableView
from ..core.units import format_rate
from .digits import Digits
from .train_loop import accuracy

__all__ = ["fit", "FitHistory", "EpochResult"]


@dataclass(frozen=True)
class EpochResult:
    """One epoch of ``fit``: its loss, training and test accuracy, and the training pass's time and images."""

    epoch: int
    loss: float  # mean cross-entropy per training image
    train_accuracy: float  # share right while training (dropout on), counted as the article counts it
    test_accuracy: float  # share right on the test images, evaluation mode
    train_seconds: float  # the pass over the training images, without the test
    samples: int


@dataclass(frozen=True)
class FitHistory(TableView):
    """One row per epoch, after the test accuracy of the untrained model."""

    epochs: tuple[EpochResult, ...]
    initial_test_accuracy: float
    device: str
    batch_size: int

    @property
    def final_test_accuracy(self) -> float:
        """The test accuracy after the last epoch (before any, when no epoch ran)."""
        return self.epochs[-1].test_accuracy if self.epochs else self.initial_test_accuracy

    @property
    def samples_per_s(self) -> float:
        """Training images per second over all epochs (the test passes not counted)."""
        seconds = sum(e.train_seconds for e in self.epochs)
        return sum(e.samples for e in self.epochs) / seconds if seconds > 0 else float("nan")

    def table(self) -> Table:
        """One row per epoch after the untrained model's: loss, accuracies and images per second."""
        rows = [["0 (untrained)", "", "", _percent(self.initial_test_accuracy), ""]]
        rows += [
            [
                e.epoch,
                f"{e.loss:.4f}",
                _percent(e.train_accuracy),
                _percent(e.test_accuracy),
                format_rate(e.samples / e.train_seconds, "samples"),
            ]
            for e in self.epochs
        ]
        return Table(
            ["epoch", "loss", "train accuracy", "test accuracy", "speed"],
            rows,
            title=f"training on {self.device}, batches of {self.batch_size}",
        )


def fit(
    model: torch.nn.Module,
    data: Digits,
    epochs: int,
    *,
    batch_size: int = 64,
    device: str | torch.device = "cpu",
    lr: float = 1e-3,
    seed: int | None = 0,
    progress: bool = True,
    mon: Any = None,
) -> FitHistory:
    """Train ``model`` (already on ``device``; DataParallel: on ``device_ids[0]``) for ``epochs`` passes over
    ``data.train`` in shuffled batches of ``batch_size``, testing on ``data.test`` after each.

    ``seed`` fixes the shuffling and dropout (``torch.manual_seed``); ``progress`` draws a tqdm bar per epoch;
    ``mon`` (a running ``gpulab.monitor``) gets a mark per epoch and a step per batch.
    """
    epochs = whole_number(epochs, "epochs", what="how many passes over the data to make", example="fit(model, data, 2)")
    batch_size = whole_number(
        batch_size,
        "batch_size",
        minimum=1,
        example="fit(model, data, 2, batch_size=64)",
        what="images per batch; the article uses 64 per GPU × the number of GPUs",
    )
    if seed is not None:
        torch.manual_seed(seed)
    loader = DataLoader(data.train, batch_size=batch_size, shuffle=True)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    history: list[EpochResult] = []
    initial = accuracy(model, data.test, device)
    for epoch in range(1, epochs + 1):
        if mon is not None:
            mon.mark(f"epoch {epoch}")
        model.train()
        loss_sum, right, seen, t0 = 0.0, 0, 0, time.perf_counter()
        bar = _bar(len(loader), f"epoch {epoch}/{epochs}") if progress else None
        for xb, yb in mon.wrap(loader) if mon is not None else loader:
            xb, yb = xb.to(device), yb.to(device)
            opt.zero_grad(set_to_none=True)
            out = model(xb)
            loss = torch.nn.functional.cross_entropy(out, yb)
            loss.backward()
            opt.step()
            loss_sum += loss.item() * len(yb)  # .item() waits for the device: the timing below is real
            right += (out.argmax(dim=1) == yb).sum().item()
            seen += len(yb)
            if bar is not None:
                bar.update(1)
        seconds = time.perf_counter() - t0
        test = accuracy(model, data.test, device)
        if bar is not None:
            bar.set_postfix_str(f"loss {loss_sum / seen:.4f}, test accuracy {test:.1%}")
            bar.close()
        history.append(EpochResult(epoch, loss_sum / seen, right / seen, test, seconds, seen))
    return FitHistory(tuple(history), initial, str(device), batch_size)


def _bar(batches: int, desc: str) -> Any:
    """tqdm's text bar, as in the article, on stdout: it redraws in place in a terminal and in Jupyter, and a saved
    notebook keeps its last state (tqdm's widget bar would keep its first, 0 %, in a file or a handout)."""
    from tqdm import tqdm

    return tqdm(total=batches, desc=desc, unit="batch", leave=True, file=sys.stdout, mininterval=0.5)


def _percent(fraction: float) -> str:
    return f"{100 * fraction:.1f} %"
