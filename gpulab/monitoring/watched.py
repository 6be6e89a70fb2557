"""The loop a monitor watches: ``mon.wrap(loader)`` reports one step per item, counting each batch's samples.

Kept apart from ``monitor.py`` (the monitor's life: start, sample, stop, figure) because it is about the learner's data,
not the monitor: what a batch is (a tensor, ``(x, y)``, a dict of tensors) and when a step ends.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any


def batch_size(item: Any) -> int:
    """Samples in a batch as loaders yield them: a tensor/array, ``(x, y)``, or a dict of tensors; else 1."""
    first = item[0] if isinstance(item, (tuple, list)) and item else item
    if isinstance(first, dict) and first:
        first = next(iter(first.values()))
    shape = getattr(first, "shape", None)
    if shape is not None and len(shape) > 0:
        return int(shape[0])
    return len(first) if isinstance(first, (list, tuple)) else 1


class Watched:
    """``mon.wrap(loader)``: iterates the loader and reports one step per item; keeps ``len`` for tqdm."""

    def __init__(
        self,
        iterable: Iterable[Any],
        samples: int | Callable[[Any], int] | None,
        *,
        step: Callable[..., None],
        restart_clock: Callable[[], None],
    ) -> None:
        self._iterable, self._samples = iterable, samples
        self._step, self._restart_clock = step, restart_clock  # the monitor's: this loop reports, it does not measure

    def __len__(self) -> int:
        return len(self._iterable)  # type: ignore[arg-type]

    def __iter__(self) -> Iterator[Any]:
        samples = self._samples
        self._restart_clock()
        for item in self._iterable:
            yield item  # the step is counted when the loop asks for the next item: loading + compute
            n = samples if isinstance(samples, int) else samples(item) if samples is not None else batch_size(item)
            self._step(samples=n)
