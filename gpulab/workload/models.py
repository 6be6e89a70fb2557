"""The chapters' models, built the same way every time (seeded), so runs on one device, DataParallel and DDP compare.

Taught in ``notebooks/05_live_monitor.ipynb`` (``mlp``); ``notebooks/03_dataparallel.ipynb`` writes ``cnn``'s class out
as its own ``CNN``.
"""

from __future__ import annotations

import torch

from ..core.arguments import whole_numbers

__all__ = ["mlp", "cnn", "DigitsCNN"]

IMAGE_SIDE = 28  # MNIST's images, 28×28 pixels: the 2×2 pool halves the side to 14


def mlp(inputs: int = 64, hidden: int = 1024, classes: int = 10, *, seed: int = 0) -> torch.nn.Module:
    """Two hidden ReLU layers of ``hidden`` units: big enough that a step is real work, small enough for a laptop."""
    torch.manual_seed(seed)
    return torch.nn.Sequential(
        torch.nn.Linear(inputs, hidden),
        torch.nn.ReLU(),
        torch.nn.Linear(hidden, hidden),
        torch.nn.ReLU(),
        torch.nn.Linear(hidden, classes),
    )


class DigitsCNN(torch.nn.Module):
    """The fourth article's CNN: two 3×3 convolutions (1 → 64 → 128 channels), a 2×2 max-pool, then 1024 hidden units
    with dropout 0.5 and 10 classes. Its attribute names (``conv1``, ``dense``) are the article's, so its state_dict
    keys are too (``conv1.0.weight`` …; ``module.conv1.0.weight`` once wrapped in DataParallel)."""

    def __init__(
        self,
        channels: tuple[int, int] = (64, 128),
        hidden: int = 1024,
        classes: int = 10,
    ) -> None:
        super().__init__()
        c1, c2 = channels
        self.conv1 = torch.nn.Sequential(
            torch.nn.Conv2d(1, c1, kernel_size=3, stride=1, padding=1),
            torch.nn.ReLU(),
            torch.nn.Conv2d(c1, c2, kernel_size=3, stride=1, padding=1),
            torch.nn.ReLU(),
            torch.nn.MaxPool2d(stride=2, kernel_size=2),
        )
        self.dense = torch.nn.Sequential(
            torch.nn.Linear((IMAGE_SIDE // 2) ** 2 * c2, hidden),
            torch.nn.ReLU(),
            torch.nn.Dropout(p=0.5),
            torch.nn.Linear(hidden, classes),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Logits for a batch of images: the convolutions, flattened, then the dense layers."""
        # the article writes x.view(-1, 14 * 14 * 128): flatten(1) keeps the batch size even for a wrong image size
        return self.dense(self.conv1(x).flatten(1))


def cnn(
    channels: tuple[int, int] = (64, 128),
    hidden: int = 1024,
    classes: int = 10,
    *,
    seed: int = 0,
) -> DigitsCNN:
    """The article's CNN for 28×28 single-channel images (MNIST's), seeded; the defaults are its layer sizes
    (25.8 M parameters, almost all in the first dense layer). Narrower ``channels``/``hidden`` train in seconds on a
    CPU."""
    channels = whole_numbers(
        channels, "channels", minimum=1, example="(64, 128)", what="two convolutions' output channels"
    )
    if len(channels) != 2:
        raise ValueError(
            f"channels={channels!r}: channels are the two convolutions' output channels, two whole "
            "numbers ≥ 1, e.g. cnn(channels=(64, 128))."
        )
    torch.manual_seed(seed)
    return DigitsCNN(tuple(channels), hidden, classes)
