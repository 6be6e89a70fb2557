"""The fourth article's workload: digits shaped like MNIST, its CNN, the accuracy it is scored by, and MNIST's real
loading path (torchvision's IDX reader) on small IDX files written here, since downloads fail on the test machine."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest
import torch
from torchvision.datasets import MNIST

from gpulab.workload import DatasetUnavailable, accuracy, load_digits, load_mnist
from gpulab.workload.mnist import MNIST_FILES
from gpulab.workload.models import cnn


def test_digits_at_28_are_centred_20_pixel_digits_on_black_like_mnist():
    d28, d8 = load_digits(flat=False, size=28), load_digits(flat=False)
    x = d28.train.tensors[0]
    assert x.shape == (1437, 1, 28, 28) and d28.image_shape == (1, 28, 28) and x.is_contiguous()
    assert x.min().item() == 0.0 and x.max().item() <= 1.0
    border = torch.ones(28, 28, dtype=torch.bool)
    border[4:24, 4:24] = False
    assert x[:, :, border].abs().max().item() == 0.0  # the frame is black, the digit sits in the middle 20×20
    back = torch.nn.functional.interpolate(x[:, :, 4:24, 4:24], size=(8, 8), mode="area")
    small = d8.train.tensors[0]
    same, other = (back - small).abs().mean().item(), (back - small.roll(1, dims=0)).abs().mean().item()
    assert same < other / 2, (same, other)  # shrunk back, each image is close to its own scan, not to its neighbour
    assert torch.equal(d28.train.tensors[1], d8.train.tensors[1])
    assert load_digits(size=28).train.tensors[0].shape == (1437, 784)


@pytest.mark.parametrize("size, error", [(4, ValueError), (28.0, TypeError), (True, TypeError), ("28", TypeError)])
def test_a_size_that_is_not_a_whole_number_of_pixels_from_8_is_refused(size, error):
    with pytest.raises(
        error,
        match=r"size \(the side of the square image in pixels; the scans are 8×8\) "
        r"(must be|takes) a whole number ≥ 8 \(e.g. load_digits\(size=28\)",
    ):
        load_digits(size=size)


def test_the_articles_cnn_has_its_layer_sizes_names_and_seed():
    model = cnn()
    assert sum(p.numel() for p in model.parameters()) == 25_775_882
    assert [k for k in model.state_dict()] == [
        "conv1.0.weight",
        "conv1.0.bias",
        "conv1.2.weight",
        "conv1.2.bias",
        "dense.0.weight",
        "dense.0.bias",
        "dense.3.weight",
        "dense.3.bias",
    ]
    assert model.dense[0].in_features == 14 * 14 * 128 and model.dense[2].p == 0.5
    small = cnn((4, 8), 16)
    assert small(torch.zeros(5, 1, 28, 28)).shape == (5, 10)
    assert all(p.equal(q) for p, q in zip(small.parameters(), cnn((4, 8), 16).parameters()))
    assert not cnn((4, 8), 16, seed=1).conv1[0].weight.equal(small.conv1[0].weight)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"channels": (8,)}, r"channels=\(8,\): .* two whole numbers ≥ 1, e.g. cnn\(channels=\(64, 128\)\)"),
        ({"channels": (8, 0)}, r"channels holds 0: .* are ≥ 1"),
    ],
)
def test_a_cnn_that_cannot_be_built_is_refused_with_the_reason(kwargs, match):
    with pytest.raises(ValueError, match=match):
        cnn(**kwargs)


def test_accuracy_switches_dropout_off_and_puts_the_mode_back():
    data = load_digits(flat=False, size=28)
    model = cnn((2, 4), 8).train()  # dropout 0.5: each training-mode pass differs
    scores = {accuracy(model, data.test, batch_size=100) for _ in range(3)}
    assert len(scores) == 1 and model.training
    with pytest.raises(ValueError, match="accuracy of no images: the data set is empty"):
        accuracy(model, torch.utils.data.TensorDataset(torch.zeros(0, 1, 28, 28), torch.zeros(0)))


def _idx(path: Path, array: torch.Tensor) -> None:
    """An IDX file as MNIST ships them: zero, zero, type 0x08 (unsigned byte), dimension count, big-endian sizes."""
    header = bytes([0, 0, 0x08, array.dim()]) + b"".join(struct.pack(">I", n) for n in array.shape)
    path.write_bytes(header + array.to(torch.uint8).numpy().tobytes())


def _write_mnist(root: Path, n_train: int = 12, n_test: int = 6) -> dict[str, torch.Tensor]:
    raw = root / "MNIST" / "raw"
    raw.mkdir(parents=True)
    g = torch.Generator().manual_seed(0)
    arrays = {
        "train-images-idx3-ubyte": torch.randint(0, 256, (n_train, 28, 28), generator=g),
        "train-labels-idx1-ubyte": torch.arange(n_train) % 10,
        "t10k-images-idx3-ubyte": torch.randint(0, 256, (n_test, 28, 28), generator=g),
        "t10k-labels-idx1-ubyte": (torch.arange(n_test) + 3) % 10,
    }
    for name, array in arrays.items():
        _idx(raw / name, array)
    return arrays


def test_mnist_is_read_from_the_idx_files_by_torchvision(tmp_path):
    arrays = _write_mnist(tmp_path)
    data = load_mnist(tmp_path)
    x, y = data.train.tensors
    assert x.shape == (12, 1, 28, 28) and x.dtype == torch.float32 and y.dtype == torch.int64
    assert torch.equal((x[:, 0] * 255).round().to(torch.int64), arrays["train-images-idx3-ubyte"])
    assert torch.equal(y, arrays["train-labels-idx1-ubyte"])
    assert torch.equal(data.test.tensors[1], arrays["t10k-labels-idx1-ubyte"]) and len(data.test) == 6
    assert "MNIST, read by torchvision from" in str(data) and data.image_shape == (1, 28, 28)
    assert load_mnist(tmp_path, flat=True).train.tensors[0].shape == (12, 784)
    assert cnn((2, 4), 8)(x).shape == (12, 10)  # the article's model takes it as it comes


def test_missing_mnist_names_the_files_and_the_offline_way_out(tmp_path):
    with pytest.raises(
        DatasetUnavailable,
        match=r"MNIST in .*MNIST/raw is not there \(missing: "
        + ", ".join(MNIST_FILES)
        + r"\); pass download=True .*load_digits\(size=28\)",
    ):
        load_mnist(tmp_path)


def test_a_failed_download_says_so_and_what_to_use_instead(tmp_path, monkeypatch):
    # torchvision's real download code, sent to a local port where nothing listens (the test must not need internet)
    monkeypatch.setattr(MNIST, "mirrors", ["http://127.0.0.1:9/"])
    with pytest.raises(
        DatasetUnavailable,
        match=r"could not be downloaded: Error downloading train-images-idx3-ubyte"
        r".*load_digits\(size=28\)",
    ):
        load_mnist(tmp_path / "data", download=True)
    assert not (tmp_path / "data").exists(), "a failed download left the folders it made"


def test_a_failed_download_keeps_a_folder_that_was_there(tmp_path, monkeypatch):
    monkeypatch.setattr(MNIST, "mirrors", ["http://127.0.0.1:9/"])
    (tmp_path / "MNIST").mkdir()
    (tmp_path / "MNIST" / "notes.txt").write_text("mine")
    with pytest.raises(DatasetUnavailable, match="could not be downloaded"):
        load_mnist(tmp_path, download=True)
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["MNIST", "notes.txt"]


def test_a_damaged_idx_file_is_reported_as_such(tmp_path):
    _write_mnist(tmp_path)
    (tmp_path / "MNIST" / "raw" / "train-images-idx3-ubyte").write_bytes(b"<html>not found</html>")
    with pytest.raises(
        DatasetUnavailable,
        match=r"could not be read as IDX images and labels .* download was "
        r"probably cut short",
    ):
        load_mnist(tmp_path)


def test_images_and_labels_that_do_not_belong_together_are_refused(tmp_path):
    _write_mnist(tmp_path)
    _idx(tmp_path / "MNIST" / "raw" / "train-labels-idx1-ubyte", torch.arange(5))
    with pytest.raises(DatasetUnavailable, match=r"MNIST has 12 images but 5 labels"):
        load_mnist(tmp_path)
