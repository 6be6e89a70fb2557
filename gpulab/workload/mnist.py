"""MNIST through torchvision, as the fourth article loads it, returned like the bundled digits (a ``Digits``).

``load_mnist(root)`` reads the four IDX files torchvision keeps in ``root/MNIST/raw`` (``train-images-idx3-ubyte``,
``train-labels-idx1-ubyte``, ``t10k-images-idx3-ubyte``, ``t10k-labels-idx1-ubyte``) with torchvision's own reader,
downloading them first when ``download=True``. Where they are missing and cannot be downloaded (no internet, as on
the course's CI machine) or are damaged, it raises ``DatasetUnavailable`` naming the folder and the way out:
``load_digits(size=28)``, the same shape from files scikit-learn ships. Taught in ``notebooks/03_dataparallel.ipynb``.
"""

from __future__ import annotations

import os
from os import PathLike

import torch
from torch.utils.data import TensorDataset

from .digits import Digits

__all__ = ["load_mnist", "DatasetUnavailable", "MNIST_FILES"]

MNIST_FILES = ("train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte")
_FALLBACK = (
    "Without MNIST, gpulab.workload.load_digits(size=28) gives scikit-learn's bundled digits in the same "
    "28×28 shape (nothing to download)."
)


class DatasetUnavailable(RuntimeError):
    """The data set is not on this machine and could not be fetched or read; the message says where and what next."""


def load_mnist(root: str | PathLike[str] = "data", *, download: bool = False, flat: bool = False) -> Digits:
    """MNIST's 60,000 training and 10,000 test images as float32 in 0–1, ``(1, 28, 28)`` each (``flat``: 784 values).

    Reads ``root/MNIST/raw``; with ``download=True`` fetches the files there first if they are missing.
    """
    try:
        from torchvision.datasets import MNIST
    except ImportError as e:
        raise DatasetUnavailable(
            f"torchvision is not installed ({e}), and it is what reads MNIST. Install it with "
            f"`pip install torchvision`. {_FALLBACK}"
        ) from None
    raw = os.path.join(os.fspath(root), "MNIST", "raw")
    made = _missing_folders(raw)  # what a download would create, to be taken back if it fails
    try:
        train = MNIST(os.fspath(root), train=True, download=download)
        test = MNIST(os.fspath(root), train=False, download=False)
    except RuntimeError as e:
        if download:
            _remove_if_empty(made)
            why = f"could not be downloaded: {_first_lines(str(e))}"
        else:
            missing = [f for f in MNIST_FILES if not os.path.exists(os.path.join(raw, f))]
            why = (
                f"is not there (missing: {', '.join(missing)}); pass download=True to fetch it, or copy the four "
                f"IDX files into that folder"
            )
        raise DatasetUnavailable(f"MNIST in {raw} {why}. {_FALLBACK}") from e
    except (AssertionError, TypeError, ValueError, KeyError, IndexError) as e:
        raise DatasetUnavailable(
            f"The MNIST files in {raw} could not be read as IDX images and labels "
            f"({type(e).__name__}: {e or 'bad header'}): a download was probably cut short. "
            f"Delete that folder and load again with download=True. {_FALLBACK}"
        ) from e
    return Digits(
        _tensors(train.data, train.targets, flat),
        _tensors(test.data, test.targets, flat),
        source=f"MNIST, read by torchvision from {raw}",
    )


def _missing_folders(path: str) -> list[str]:
    """``path`` and those of its parents that do not exist yet, deepest first."""
    out = []
    while path and not os.path.exists(path):
        out.append(path)
        parent = os.path.dirname(path)
        if parent == path:
            break
        path = parent
    return out


def _remove_if_empty(folders: list[str]) -> None:
    """Remove the folders a failed download created (deepest first), so that no empty ``data/MNIST/raw`` stays in a
    learner's folder; one that holds anything (a file another load wrote) stays."""
    for folder in folders:
        try:
            os.rmdir(folder)
        except OSError:  # not empty, or already gone: leave it
            return


def _tensors(images: torch.Tensor, labels: torch.Tensor, flat: bool) -> TensorDataset:
    if len(images) != len(labels):
        raise DatasetUnavailable(
            f"MNIST has {len(images)} images but {len(labels)} labels: the files do not belong "
            f"together. Delete them and load again with download=True. {_FALLBACK}"
        )
    x = images.to(torch.float32).div(255).unsqueeze(1)
    return TensorDataset(x.flatten(1) if flat else x, labels.to(torch.int64))


def _first_lines(text: str, most: int = 3) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return " / ".join(lines[:most]) + (" …" if len(lines) > most else "")
