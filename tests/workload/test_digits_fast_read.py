"""The digits read from scikit-learn's file equal scikit-learn's own loader, without importing scikit-learn."""

from __future__ import annotations

import sys

import numpy as np

from gpulab.workload.digits import _scans
from tests import process_group


def test_the_file_read_equals_scikit_learns_loader():
    from sklearn.datasets import load_digits

    pixels, labels = _scans()
    raw = load_digits()
    assert pixels.shape == (1797, 64) and np.array_equal(pixels, raw.data)
    assert labels.dtype == np.int64 and np.array_equal(labels, raw.target)


def test_loading_the_digits_does_not_import_scikit_learn():
    code = (
        "import sys; from gpulab.workload import load_digits; d = load_digits(); "
        "print(len(d.train) + len(d.test), 'sklearn' in sys.modules)"
    )
    out = process_group.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["1797", "False"]
