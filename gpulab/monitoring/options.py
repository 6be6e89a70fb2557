"""``monitor()``'s options, validated when it is called, so a wrong one stops the cell before the work runs.

``with gpulab.monitor(123):`` would otherwise run the whole training loop and fail only when the block ends and the
figure is drawn. Taught in ``notebooks/05_live_monitor.ipynb``.
"""

from __future__ import annotations

from typing import Any

from ..core.arguments import flag, function, index_list, seconds, shown
from ..machine.resolve import as_reader

__all__ = ["validated_options"]

MIN_INTERVAL_S = 0.01


def validated_options(
    *, title: Any, reader: Any, gpus: Any, interval_s: Any, show: Any, clock: Any, sleep: Any
) -> tuple[Any, list[int] | None, float]:
    """The options as the monitor uses them (reader resolved, interval as a float), or the first one that is wrong."""
    if not isinstance(title, str):
        raise TypeError(
            f"monitor()'s first argument is the figure's title, text such as gpulab.monitor(\"training\"); "
            f"got a {type(title).__name__} {shown(title)}. To watch particular GPUs pass gpus=[...], e.g. "
            'gpulab.monitor("training", gpus=[1]).'
        )
    reader = as_reader(reader)
    gpus = None if gpus is None else list(index_list(gpus, "gpus", example="[0, 1]"))
    interval_s = seconds(interval_s, "interval_s", allow_zero=False, example="0.2")
    if interval_s < MIN_INTERVAL_S:
        raise ValueError(
            f"interval_s={interval_s:g}: reading more often than every "
            f"{MIN_INTERVAL_S} s only costs the training loop CPU time (the driver updates utilisation "
            "about every 1/6 s). Use interval_s=0.2, the default."
        )
    flag(show, "show")
    function(clock, "clock", example="time.monotonic")
    if sleep is not None:
        function(sleep, "sleep", example="time.sleep")
    return reader, gpus, interval_s
