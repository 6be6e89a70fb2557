"""scikit-learn's 1,797 real 8×8 scans of handwritten digits as PyTorch tensors: real data that works offline.

Pixels (0–16) are scaled to 0–1. The first 80 % (in the order scikit-learn ships them) are for training, the rest for
testing, so every run and every rank sees the same split. Taught in ``notebooks/05_live_monitor.ipynb``.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
from torch.utils.data import DataLoader, TensorDataset

__all__ = ["Digits", "load_digits"]


@dataclass(frozen=True)
class Digits:
    """The digits split into ``train`` and ``test`` ``TensorDataset``s of (image, label)."""

    train: TensorDataset
    test: TensorDataset

    @property
    def image_shape(self) -> tuple[int, ...]:
        return tuple(self.train.tensors[0].shape[1:])

    def loader(self, batch_size: int = 32, *, shuffle: bool = True) -> DataLoader:
        """A ``DataLoader`` over the training images (shuffled with torch's global generator: seed it to repeat)."""
        if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size < 1:
            raise ValueError(f"batch_size must be a whole number of images, at least 1; got {batch_size!r}.")
        return DataLoader(self.train, batch_size=batch_size, shuffle=shuffle)

    def __str__(self) -> str:
        return (f"digits: images {self.image_shape}, train {len(self.train)}, test {len(self.test)} "
                "(scikit-learn's bundled scans, no download)")


def load_digits(*, flat: bool = True, train_fraction: float = 0.8) -> Digits:
    """The digits as float32 images in 0–1 and int64 labels: ``flat`` gives 64 values per image, else ``(1, 8, 8)``."""
    if not 0.0 < train_fraction < 1.0:
        raise ValueError(f"train_fraction is the share of images used for training, between 0 and 1 (0.8 keeps 80 % "
                         f"for training and 20 % for the test); got {train_fraction!r}.")
    from sklearn.datasets import load_digits as sklearn_digits

    raw = sklearn_digits()
    x = torch.tensor(raw.data, dtype=torch.float32) / 16
    if not flat:
        x = x.view(-1, 1, 8, 8)
    y = torch.tensor(raw.target)
    n_train = int(train_fraction * len(x))
    return Digits(TensorDataset(x[:n_train], y[:n_train]), TensorDataset(x[n_train:], y[n_train:]))
