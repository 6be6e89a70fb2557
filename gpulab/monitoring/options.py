"""``monitor()``'s options, validated when it is called, so a wrong one stops the cell before the work runs.

``with gpulab.monitor(123):`` would otherwise run the whole training loop and fail only when the block ends and the
figure is drawn. Taught in ``notebooks/05_live_monitor.ipynb``.
"""

from __future__ import annotations

from typing import Any

from ..core.arguments import flag, function, index_list, seconds, shown, whole_number
from ..machine.resolve import as_reader

__all__ = ["validated_options", "MAX_CAPACITY"]

MAX_CAPACITY = 250_000  # readings kept in memory: over 13 hours at 5 a second
MIN_INTERVAL_S = 0.01


def validated_options(
    *,
    title: Any,
    reader: Any,
    gpus: Any,
    interval_s: Any,
    process_interval_s: Any,
    render_interval_s: Any,
    capacity: Any,
    show: Any,
    clock: Any,
    sleep: Any,
) -> tuple[Any, list[int] | None, float, float, float]:
    """The options as the monitor uses them (reader resolved, numbers as floats), or the first one that is wrong."""
    if not isinstance(title, str):
        raise TypeError(
            f"monitor()'s first argument is the figure's title, text such as gpulab.monitor(\"training\"); "
            f"got a {type(title).__name__} {shown(title)}. To watch particular GPUs pass gpus=[...], e.g. "
            'gpulab.monitor("training", gpus=[1]).'
        )
    reader = as_reader(reader)
    gpus = None if gpus is None else list(index_list(gpus, "gpus", example="[0, 1]"))
    times = [
        seconds(v, name, allow_zero=False, example=ex)
        for v, name, ex in (
            (interval_s, "interval_s", "0.2"),
            (process_interval_s, "process_interval_s", "2.0"),
            (render_interval_s, "render_interval_s", "1.0"),
        )
    ]
    if times[0] < MIN_INTERVAL_S or times[1] < MIN_INTERVAL_S:
        raise ValueError(
            f"interval_s={times[0]:g}, process_interval_s={times[1]:g}: reading more often than every "
            f"{MIN_INTERVAL_S} s only costs the training loop CPU time (the driver updates utilisation "
            "about every 1/6 s). Use interval_s=0.2, the default."
        )
    capacity = whole_number(capacity, "capacity", minimum=1, example="36_000, two hours at 5 readings a second")
    if capacity > MAX_CAPACITY:
        raise ValueError(
            f"capacity={capacity:,} readings would reserve too much memory up front; {MAX_CAPACITY:,} is "
            "over 13 hours at 5 readings a second. Use the default (36,000) or less."
        )
    flag(show, "show")
    function(clock, "clock", example="time.monotonic")
    if sleep is not None:
        function(sleep, "sleep", example="time.sleep")
    return reader, gpus, times[0], times[1], times[2]
