"""A reservation held by another process (another learner's kernel), for tests that must tell it from this one's."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

_HOLD = """
import json, sys
from gpulab.machine.simulated import SimulatedGpuReader
from gpulab.placement.reservation import reserve_gpus
held = reserve_gpus(int(sys.argv[1]), SimulatedGpuReader(sys.argv[2]), reservations=sys.argv[3])
print(json.dumps(list(held.physical_indices)), flush=True)
sys.stdin.read()  # hold until the test closes stdin (or kills the group)
"""


@contextmanager
def held_elsewhere(n: int, preset: str, directory: str | os.PathLike[str]) -> Iterator[tuple[int, list[int]]]:
    """Another process reserves ``n`` GPUs of the described ``preset`` in ``directory``; yields (its pid, the GPUs)."""
    child = subprocess.Popen(
        [sys.executable, "-c", _HOLD, str(n), preset, str(Path(directory))],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )  # its own process group, ended with the test
    try:
        line = child.stdout.readline()
        assert line, f"the holding process failed: {child.stderr.read()}"
        yield child.pid, json.loads(line)
    finally:
        try:
            os.killpg(child.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        child.wait(timeout=30)
        child.stdout.close()
        child.stderr.close()
        child.stdin.close()
