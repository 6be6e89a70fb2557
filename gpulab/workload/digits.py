"""scikit-learn's 1,797 real 8×8 scans of handwritten digits as PyTorch tensors: real data that works offline.

Pixels (0–16) are scaled to 0–1. The first 80 % (in the order scikit-learn ships them) are for training, the rest for
testing, so every run and every rank sees the same split. ``size=28`` shapes them like MNIST for models written for
it: each scan is enlarged to a 20×20 digit (bilinear) and centred in a 28×28 frame, as MNIST centres its 20×20 digits.
Taught in ``notebooks/05_live_monitor.ipynb`` (8×8) and ``notebooks/03_dataparallel.ipynb`` (28×28).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch.utils.data import DataLoader, TensorDataset

from ..core.arguments import whole_number

__all__ = ["Digits", "load_digits"]


@dataclass(frozen=True)
class Digits:
    """The digits split into ``train`` and ``test`` ``TensorDataset``s of (image, label)."""

    train: TensorDataset
    test: TensorDataset
    source: str = "scikit-learn's bundled scans, no download"

    @property
    def image_shape(self) -> tuple[int, ...]:
        """The shape of one image as the tensors hold it: ``(64,)`` flat, else ``(1, 8, 8)`` (``(1, 28, 28)`` at
        ``size=28``)."""
        return tuple(self.train.tensors[0].shape[1:])

    def loader(self, batch_size: int = 32, *, shuffle: bool = True) -> DataLoader:
        """A ``DataLoader`` over the training images (shuffled with torch's global generator: seed it to repeat)."""
        batch_size = whole_number(
            batch_size, "batch_size", minimum=1, what="images per batch", example="data.loader(batch_size=64)"
        )
        return DataLoader(self.train, batch_size=batch_size, shuffle=shuffle)

    def __str__(self) -> str:
        return f"digits: images {self.image_shape}, train {len(self.train)}, test {len(self.test)} ({self.source})"


SCAN_SIZE = 8  # scikit-learn's scans are 8×8
DIGIT_SHARE = 20 / 28  # MNIST: a 20×20 digit centred in a 28×28 frame
TRAIN_FRACTION = 0.8  # the first 80 % of the scans train, the rest test


def load_digits(*, flat: bool = True, size: int = SCAN_SIZE) -> Digits:
    """The digits as float32 images in 0–1 and int64 labels: ``flat`` gives ``size²`` values per image, else
    ``(1, size, size)``. ``size`` above 8 enlarges each digit to ``size·20/28`` pixels and centres it in the frame."""
    size = whole_number(
        size,
        "size",
        minimum=SCAN_SIZE,
        example="load_digits(size=28), shaped like MNIST",
        what="the side of the square image in pixels; the scans are 8×8",
    )
    pixels, labels = _scans()
    x = torch.tensor(pixels, dtype=torch.float32).view(-1, 1, SCAN_SIZE, SCAN_SIZE) / 16
    if size > SCAN_SIZE:
        x = _frame(x, size)
    if flat:
        x = x.flatten(1)
    y = torch.tensor(labels)
    n_train = int(TRAIN_FRACTION * len(x))
    return Digits(TensorDataset(x[:n_train], y[:n_train]), TensorDataset(x[n_train:], y[n_train:]))


def _scans() -> tuple[Any, Any]:
    """The 1,797 scans (64 pixels each, 0–16) and their labels, read from the file scikit-learn ships.

    Written here, rather than calling ``sklearn.datasets.load_digits``, because ``import sklearn`` takes about 1.4 s
    (it imports scipy), and every DDP rank of chapters 04 and 06 loads the digits in a fresh process; finding the
    package's folder does not import it. Where the file is not where this version of scikit-learn keeps it, its own
    loader is used (``tests/workload`` checks that both give the same arrays).
    """
    import gzip
    import importlib.util

    import numpy as np

    spec = importlib.util.find_spec("sklearn")
    folders = list(spec.submodule_search_locations or []) if spec is not None else []
    for folder in folders:
        path = Path(folder) / "datasets" / "data" / "digits.csv.gz"
        if path.is_file():
            with gzip.open(path, "rt") as f:
                table = np.loadtxt(f, delimiter=",")
            return table[:, :-1], table[:, -1].astype(np.int64)
    from sklearn.datasets import load_digits as sklearn_digits

    raw = sklearn_digits()
    return raw.data, raw.target


def _frame(x: torch.Tensor, size: int) -> torch.Tensor:
    """Enlarge (bilinear, values stay in 0–1) to the digit's share of ``size`` and pad with black to ``size``."""
    inner = max(SCAN_SIZE, round(size * DIGIT_SHARE))
    x = torch.nn.functional.interpolate(x, size=(inner, inner), mode="bilinear", align_corners=False)
    before = (size - inner) // 2
    after = size - inner - before
    return torch.nn.functional.pad(x, (before, after, before, after)).contiguous()
