"""A preallocated ring buffer of readings, one row per sample (pure: numpy only).

The sampler thread appends rows a few times a second; the live plot and the summary read copies. Memory is fixed when
the buffer is made (``capacity`` rows × columns float64), so a monitor left on for hours never grows: once full, the
oldest rows are overwritten and ``dropped`` says how many. Peaks are kept for every row ever appended, so the summary's
"peak memory" stays right after old rows are gone. A value that could not be read is stored as NaN.
Taught in ``notebooks/05_live_monitor.ipynb``.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

import numpy as np

__all__ = ["History"]


class History:
    """Rows of ``(elapsed_s, value per column)``; thread-safe for one writer and any number of readers."""

    def __init__(self, columns: Sequence[str], capacity: int = 36_000) -> None:
        if capacity < 1:
            raise ValueError(f"a History needs room for at least one row; got capacity={capacity}.")
        names = tuple(columns)
        if len(set(names)) != len(names):
            raise ValueError(f"column names must be unique; got {names}.")
        self.columns: tuple[str, ...] = names
        self.capacity = int(capacity)
        self._index = {name: i for i, name in enumerate(names)}
        self._t = np.full(self.capacity, np.nan)
        self._data = np.full((self.capacity, len(names)), np.nan)
        self._peak = np.full(len(names), np.nan)
        self._appended = 0
        self._lock = threading.Lock()

    # -- writing -----------------------------------------------------------------------------------------------------
    def append(self, elapsed_s: float, values: Sequence[float] | np.ndarray) -> None:
        """Add one row; ``values`` in column order (NaN for "could not read"). Overwrites the oldest row when full."""
        row = np.asarray(values, dtype=np.float64)
        if row.shape != (len(self.columns),):
            raise ValueError(f"a row needs {len(self.columns)} values (one per column), got shape {row.shape}.")
        with self._lock:
            slot = self._appended % self.capacity
            self._t[slot] = elapsed_s
            self._data[slot] = row
            np.fmax(self._peak, row, out=self._peak)  # fmax ignores NaN: an unreadable value never erases a peak
            self._appended += 1

    # -- reading -----------------------------------------------------------------------------------------------------
    def __len__(self) -> int:
        """Rows held now (at most ``capacity``)."""
        return min(self._appended, self.capacity)

    @property
    def appended(self) -> int:
        """Rows ever appended."""
        return self._appended

    @property
    def dropped(self) -> int:
        """Oldest rows overwritten because the buffer was full."""
        return max(self._appended - self.capacity, 0)

    def index(self, column: str) -> int:
        """The position of ``column`` in each row (``KeyError`` naming the columns there are)."""
        try:
            return self._index[column]
        except KeyError:
            raise KeyError(f"no column {column!r}; the columns are: {', '.join(self.columns)}") from None

    def snapshot(self) -> tuple[np.ndarray, np.ndarray]:
        """Copies ``(elapsed_s[n], values[n, columns])`` of the rows held, oldest first."""
        with self._lock:
            n = len(self)
            if self._appended <= self.capacity:
                return self._t[:n].copy(), self._data[:n].copy()
            start = self._appended % self.capacity
            order = np.r_[start : self.capacity, 0:start]
            return self._t[order], self._data[order]

    def column(self, column: str) -> np.ndarray:
        """One column's values held now, oldest first (a copy)."""
        _, data = self.snapshot()
        return data[:, self.index(column)]

    def times(self) -> np.ndarray:
        """The elapsed seconds of the rows held, oldest first (a copy)."""
        return self.snapshot()[0]

    def peak(self, column: str) -> float:
        """Largest value ever appended to ``column`` (NaN if it was never readable)."""
        with self._lock:
            return float(self._peak[self.index(column)])

    def last(self, column: str) -> float:
        """The newest value of ``column`` (NaN when empty)."""
        with self._lock:
            if self._appended == 0:
                return float("nan")
            return float(self._data[(self._appended - 1) % self.capacity, self.index(column)])

    def nanmean(self, column: str) -> float:
        """Mean of the readable values held in ``column`` (NaN when none)."""
        values = self.column(column)
        values = values[~np.isnan(values)]
        return float(values.mean()) if values.size else float("nan")
