"""What the tests that start a real JupyterHub share: waiting for a state with a guard against a hang, and finding
every process a run started (the Hub, its proxy, the servers and their kernels) by a marker in their environment."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")


def until(what: str, check: Callable[[], T], timeout_s: float = 60.0, every_s: float = 0.2) -> T:
    """Poll ``check`` until it returns something true (a guard against a hang, not a time to assert)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(every_s)
    raise AssertionError(f"gave up after {timeout_s} s waiting for {what}")


def marked(marker: str) -> list[int]:
    """Every process whose environment carries ``GPULAB_HUB_TEST=marker``."""
    needle = f"GPULAB_HUB_TEST={marker}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if needle in (entry / "environ").read_bytes().split(b"\0"):
                    found.append(int(entry.name))
            except OSError:  # gone meanwhile, or not ours to read
                pass
    return found
