"""The monitor's ring buffer: fixed memory, oldest rows overwritten in order, peaks kept for the whole run."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from gpulab.monitoring.ring_buffer import History


def test_rows_come_back_oldest_first_with_their_times():
    h = History(["a", "b"], capacity=4)
    h.append(0.0, [1, 10])
    h.append(0.2, [2, 20])
    t, data = h.snapshot()
    assert t.tolist() == [0.0, 0.2]
    assert data.tolist() == [[1, 10], [2, 20]]
    assert len(h) == 2 and h.appended == 2 and h.dropped == 0
    assert h.column("b").tolist() == [10, 20]
    assert h.last("a") == 2


def test_a_full_buffer_overwrites_the_oldest_rows_and_counts_them():
    h = History(["x"], capacity=3)
    for i in range(5):
        h.append(i * 0.2, [i])
    t, data = h.snapshot()
    assert data[:, 0].tolist() == [2, 3, 4]
    assert np.allclose(t, [0.4, 0.6, 0.8])
    assert len(h) == 3 and h.appended == 5 and h.dropped == 2


def test_peaks_survive_overwriting_and_ignore_unreadable_values():
    h = History(["mem"], capacity=2)
    h.append(0.0, [7.0])
    h.append(0.2, [math.nan])
    h.append(0.4, [3.0])
    h.append(0.6, [math.nan])
    assert 7.0 not in h.column("mem")  # gone from the buffer ...
    assert h.peak("mem") == 7.0  # ... but the summary still knows the peak
    assert h.nanmean("mem") == 3.0


def test_a_column_never_readable_has_nan_peak_and_mean():
    h = History(["util"], capacity=2)
    h.append(0.0, [math.nan])
    assert math.isnan(h.peak("util")) and math.isnan(h.nanmean("util"))
    assert math.isnan(History(["util"]).last("util"))


def test_the_buffer_is_allocated_once():
    h = History(["a", "b", "c"], capacity=100)
    before = h._data
    for i in range(250):
        h.append(float(i), [i, i, i])
    assert h._data is before and h._data.shape == (100, 3)


@given(n=st.integers(0, 60), capacity=st.integers(1, 20))
def test_snapshot_is_the_last_rows_in_order(n, capacity):
    h = History(["v"], capacity=capacity)
    for i in range(n):
        h.append(float(i), [float(i)])
    t, data = h.snapshot()
    expected = list(range(max(n - capacity, 0), n))
    assert t.tolist() == expected and data[:, 0].tolist() == expected


def test_mistakes_are_explained():
    with pytest.raises(ValueError, match="at least one row"):
        History(["a"], capacity=0)
    with pytest.raises(ValueError, match="must be unique"):
        History(["a", "a"])
    h = History(["a", "b"])
    with pytest.raises(ValueError, match="needs 2 values"):
        h.append(0.0, [1.0])
    with pytest.raises(KeyError, match="no column 'c'; the columns are: a, b"):
        h.column("c")
