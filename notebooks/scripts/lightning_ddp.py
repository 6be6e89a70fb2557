"""Train a small classifier on scikit-learn's digits with Lightning on several devices, as a script.

    python lightning_ddp.py                        # 2 CPU processes; Lightning starts the second itself
    torchrun --nproc-per-node=2 lightning_ddp.py   # the same, with torchrun starting both

It writes checkpoints/best.ckpt in the current folder.

With GPUs, write accelerator="gpu" and devices=N: nothing else changes. A script, unlike a notebook, can use
strategy="ddp": Lightning starts each extra rank as a fresh `python lightning_ddp.py`, with nothing inherited from a
kernel. Taught in notebooks/06_lightning.ipynb.
"""

import os

import lightning as L
import torch
import torch.nn.functional as F
from lightning.pytorch.callbacks import ModelCheckpoint
from sklearn.datasets import load_digits
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


def digits():
    x, y = load_digits(return_X_y=True)  # 8×8 images, pixels 0..16, labels 0..9
    data = TensorDataset(torch.tensor(x / 16, dtype=torch.float32), torch.tensor(y))
    return torch.utils.data.random_split(data, [1500, 297], generator=torch.Generator().manual_seed(0))


class Digits(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10))

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = F.cross_entropy(self.net(x), y)
        self.log("train_loss", loss)
        return loss

    def validation_step(self, batch, batch_idx):
        x, y = batch
        logits = self.net(x)
        # sync_dist=True: the logged value is the mean over the ranks, not rank 0's share alone
        self.log("val_loss", F.cross_entropy(logits, y), sync_dist=True)
        self.log("val_acc", (logits.argmax(1) == y).float().mean(), sync_dist=True)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)


def main():
    L.seed_everything(0, verbose=False)
    train, val = digits()
    checkpoint = ModelCheckpoint(dirpath="checkpoints", monitor="val_loss", filename="best")  # rank 0 saves it
    trainer = L.Trainer(
        accelerator="cpu",
        devices=2,
        strategy="ddp",  # in a script: each rank a fresh process
        max_epochs=2,
        callbacks=[checkpoint],
        logger=False,
        enable_progress_bar=False,
        enable_model_summary=False,
    )
    # the Trainer adds a DistributedSampler to each loader: every rank sees its own half
    trainer.fit(Digits(), DataLoader(train, batch_size=32, shuffle=True), DataLoader(val, batch_size=64))
    if trainer.is_global_zero:  # printing and files: one rank
        metrics = {k: round(v.item(), 3) for k, v in trainer.callback_metrics.items() if k.startswith("val")}
        print(f"world size {trainer.world_size}, validation over both ranks: {metrics}")
        print("best checkpoint:", os.path.relpath(checkpoint.best_model_path))


if __name__ == "__main__":
    main()
