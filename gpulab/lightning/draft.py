"""A translation while it is being built: today's arguments so far, the changes and the notes (pure).

The rules in ``device_flags.py``, ``strategy.py`` and ``flags.py`` each read the old call and write into one ``Draft``.
Taught in ``notebooks/06_lightning.ipynb``.
"""

from __future__ import annotations

from collections.abc import Mapping

from .call import render_value
from .flag_history import FLAG_HISTORY
from .translation import Change

__all__ = ["Draft", "fmt", "removal"]


def fmt(name: str, value: object) -> str:
    """``fmt("gpus", [0, 2])`` → ``"gpus=[0, 2]"``."""
    return f"{name}={render_value(value)}"


def removal(key: str) -> str:
    """The release that removed an old flag (a key of ``history.FLAG_HISTORY``)."""
    return FLAG_HISTORY[key].removed_in


class Draft:
    """The old call, and what the rules have decided so far."""

    def __init__(self, old: Mapping[str, object], notebook: bool) -> None:
        self.old, self.notebook = dict(old), notebook
        self.front: dict[str, object] = {}  # accelerator, devices, strategy, precision: first in today's call
        self.changes: list[Change] = []
        self.notes: list[str] = []
        self.gpu_request: object = None  # None: the CPU; an int n > 0; -1 (every GPU); a list of indices
        self.cpu_processes = 1
        self.old_device_flag = False  # the devices came from gpus= or num_processes= (1.x defaults applied)

    def change(self, old: str, new: str, status: str, reason: str, removed: str | None = None) -> None:
        """Record one change from the old call to today's, with its status, reason and the release that removed the old
        form."""
        self.changes.append(Change(old, new, status, reason, removed))

    @property
    def device_count(self) -> int | None:
        """Processes the run starts: None when the call asks for every GPU (-1), whose number only the machine knows."""
        request = self.gpu_request
        if request is None:
            return self.cpu_processes
        if isinstance(request, list):
            return len(request)
        if isinstance(request, int):
            return None if request == -1 else request
        return None  # find_usable_cuda_devices(...) or other code: known only when it runs
