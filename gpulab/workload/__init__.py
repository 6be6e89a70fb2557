"""The small real workload the chapters share: handwritten digits that need no download, a model, a training loop.

``load_digits()`` gives scikit-learn's bundled 8×8 scans as train/test tensors; ``mlp()`` the chapters' model;
``train(model, loader, epochs, mon=...)`` and ``accuracy(model, data.test)`` the loop, watched by the live monitor
when one is passed. Used by chapters 03–06.
"""
from .digits import Digits, load_digits
from .models import mlp
from .train import accuracy, train

__all__ = ["Digits", "load_digits", "mlp", "train", "accuracy"]
