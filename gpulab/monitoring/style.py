"""How the monitor's figure looks from the back of a room: its size, fonts, panel titles and memory ticks (pure).

Kept apart from ``figure.py`` (what each panel draws, and when) so that the look can be read, and changed for a
projector, in one place.
"""

from __future__ import annotations

import numpy as np
from matplotlib.ticker import MaxNLocator

from ..core.units import format_bytes

SMOOTHING_S = 1.0
MIN_MEMORY_SPAN = 64 * 2**20  # the memory panel spans at least this much: noise of a few MiB stays small
# 920 px: the width of a JupyterLab cell's output on a 1400 px screen with the file browser open (a narrower
# window scales the image down; 800 px left the panels themselves about 460 px wide)
DPI, WIDTH_IN = 80, 11.5
HEIGHT_IN = {
    "memory": 2.0,
    "utilisation": 2.0,
    "GPU memory": 2.0,
    "speed": 2.0,
    "GPU busy map": 1.3,
    "GPU memory map": 1.3,
}
TITLE_PT, PANEL_TITLE_PT, TICK_PT, LEGEND_PT, MARK_PT = 13, 11, 9.5, 9.5, 9.5
TITLES = {
    "utilisation": "utilisation (%)",
    "GPU memory": "GPU memory",
    "speed": "speed (samples/s)",
    "GPU busy map": "GPU utilisation (% busy; darker = busier)",
    "GPU memory map": "GPU memory used (% of each GPU; darker = fuller)",
}


def memory_tick(v: float, signed: bool) -> str:
    """A memory axis label: ``"2 GiB"``, or ``"+512 MiB"`` / ``"−1 GiB"`` for a change (``signed``)."""
    text = format_bytes(abs(v), 1).replace(".0 ", " ")
    return "0" if v == 0 else (("+" if v > 0 else "−") if signed else "") + text


class BinaryLocator(MaxNLocator):
    """Round ticks in MiB or GiB (1, 2, 4, 5, 8 …), as memory is counted, not 953.7 MiB."""

    def tick_values(self, vmin: float, vmax: float) -> np.ndarray:
        """Ticks between ``vmin`` and ``vmax`` bytes at round numbers of GiB (from 4 GiB), MiB (from 1 MiB) or bytes."""
        span = max(abs(vmin), abs(vmax))
        unit = 1024.0**3 if span >= 4 * 1024**3 else 1024.0**2 if span >= 1024**2 else 1.0
        return super().tick_values(vmin / unit, vmax / unit) * unit
