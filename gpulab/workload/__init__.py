"""The small real workload the chapters share: handwritten digits that need no download, models, training loops.

``load_digits()`` gives scikit-learn's bundled 8×8 scans as train/test tensors (``size=28``: shaped like MNIST);
``load_mnist(root)`` MNIST itself through torchvision, in the same ``Digits`` form. ``mlp()`` and ``cnn()`` (the
fourth article's CNN) are the models; ``train(model, loader, epochs, mon=...)`` the plain SGD loop and
``fit(model, data, epochs)`` the article's Adam loop with a tqdm bar and a per-epoch table; ``accuracy(model,
data.test)`` the score. Used by chapters 03–06.
"""
from .digits import Digits, load_digits
from .fit import EpochResult, FitHistory, fit
from .mnist import DatasetUnavailable, load_mnist
from .models import DigitsCNN, cnn, mlp
from .train import accuracy, train

__all__ = ["Digits", "load_digits", "load_mnist", "DatasetUnavailable", "mlp", "cnn", "DigitsCNN", "train",
           "accuracy", "fit", "FitHistory", "EpochResult"]
