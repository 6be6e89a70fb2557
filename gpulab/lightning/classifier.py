"""The chapters' digits MLP as a ``LightningModule`` (imports Lightning). Taught in ``notebooks/06_lightning.ipynb``."""

from __future__ import annotations

from typing import Any

import lightning
import torch

from ..workload.models import mlp

__all__ = ["DigitsClassifier"]


class DigitsClassifier(lightning.LightningModule):
    """The article's ``SimpleModel`` shape (forward, training_step, Adam at 1e-3) around the chapters' digits MLP:
    cross-entropy on the labels where the article fitted random targets with MSE."""

    def __init__(self, hidden: int = 1024, lr: float = 1e-3) -> None:
        super().__init__()
        self.net = mlp(hidden=hidden)
        self.lr = lr

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """The digits MLP's logits for a batch of images."""
        return self.net(x)

    def training_step(self, batch: Any, batch_idx: int) -> torch.Tensor:
        """Cross-entropy of the batch's logits against its labels, logged as ``train_loss``."""
        x, y = batch
        loss = torch.nn.functional.cross_entropy(self(x), y)
        self.log("train_loss", loss, prog_bar=False)
        return loss

    def configure_optimizers(self) -> torch.optim.Optimizer:
        """Adam at ``lr``, as the article's ``SimpleModel``."""
        return torch.optim.Adam(self.parameters(), lr=self.lr)
