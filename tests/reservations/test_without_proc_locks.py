"""Where /proc/locks cannot name a lock's holder (no /proc, or the entry not there yet), the newest holder file speaks
for it. That path once passed its arguments in the wrong order: ``python -m gpulab release`` failed with "unsupported
operand type(s) for /: 'int' and 'str'" in make test, under load."""

from __future__ import annotations

import os

from gpulab.reservations import holders
from gpulab.reservations.folder import hold, let_go
from gpulab.reservations.holders import reservation_holders


def test_without_proc_locks_the_newest_holder_file_names_the_holder(tmp_path, monkeypatch):
    fd = hold(tmp_path, "GPU-abc", {"notebook": "lesson.ipynb"})
    assert fd is not None
    try:
        monkeypatch.setattr(holders, "_flock_pids", lambda fd: [])  # what a machine without /proc/locks reads
        held = reservation_holders(["GPU-abc"], tmp_path)["GPU-abc"]
        assert held.pid == os.getpid() and held.mine, held
    finally:
        let_go(fd)
