"""Chapter 06's LightningModule exercise: the checker fits the learner's class with a CPU Trainer; a right module
passes, and each typical mistake is told what is missing."""

from __future__ import annotations

import lightning as L
import torch
from torch import nn

from gpulab import check
from gpulab.workload import mlp


class Right(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = mlp()

    def forward(self, x):
        return self.net(x)

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = nn.functional.cross_entropy(self(x), y)
        self.log("train_loss", loss)
        return loss

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=1e-3)


class Skeleton(Right):
    def training_step(self, batch, batch_idx): ...

    def configure_optimizers(self): ...


class NoLossReturned(Right):
    def training_step(self, batch, batch_idx):
        x, y = batch
        nn.functional.cross_entropy(self(x), y)


class NoOptimiser(Right):
    def configure_optimizers(self):
        return None


class WrongLoss(Right):
    def training_step(self, batch, batch_idx):
        x, _ = batch
        return self(x).square().mean()  # never looks at the labels


def test_a_right_module_is_fitted_and_passes():
    feedback = check("ch06-ex4", Right)
    assert feedback.passed, str(feedback)
    assert "fitted your Right for 2 epochs" in str(feedback)


def test_each_typical_mistake_is_named():
    assert check("ch06-ex4", Skeleton).verdict == "not answered yet"
    assert "Lightning calls backward() on what it returns" in str(check("ch06-ex4", NoLossReturned))
    assert "train with no optimiser" in str(check("ch06-ex4", NoOptimiser))
    assert "compare self(x) with the labels y" in str(check("ch06-ex4", WrongLoss))
    assert "give the class itself" in str(check("ch06-ex4", Right()))
    assert "is not a LightningModule" in str(check("ch06-ex4", nn.Linear))
