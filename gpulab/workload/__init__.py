"""The small real workload the chapters share: handwritten digits that need no download, models, a training loop.

``load_digits()`` gives scikit-learn's bundled 8×8 scans as train/test tensors (``size=28``: shaped like MNIST);
``load_mnist(root)`` MNIST itself through torchvision, in the same ``Digits`` form. ``mlp()`` is the chapters' model
(``models.cnn()``, the fourth article's CNN, is what chapter 03's footprint trains); ``train(model, loader, epochs,
mon=...)`` the plain SGD loop and ``accuracy(model, data.test)`` the score. Used by chapters 03–06.
"""

from ..core.lazy import export_lazily

export_lazily(
    __name__,
    {
        "load_digits": "digits",
        "load_mnist": "mnist",
        "DatasetUnavailable": "mnist",
        "mlp": "models",
        "train": "train_loop",
        "accuracy": "train_loop",
    },
)
