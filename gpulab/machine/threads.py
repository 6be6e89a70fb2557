"""Threads of this process that Python did not start: torch's own, a process group's, and OpenMP's pool (a probe).

GNU OpenMP's pool does not survive ``fork`` (``notebooks/06_lightning.ipynb``), and no library says whether it has
started; its workers are threads Python does not know that carry the process's own name. Importing torch starts a
fixed number of such threads itself, counted once when ``torch.cuda`` finishes importing (``cuda_watch`` calls
``note_torch_imported``), before any CPU work can have started the pool.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

__all__ = [
    "native_threads",
    "note_torch_imported",
    "threads_at_torch_import",
    "lightning_threads_per_rank",
    "COURSE_RANKS",
]

_at_torch_import: int | None = None


def native_threads() -> int:
    """Threads of this process that Python did not start and that carry the process's own name (ZeroMQ's named
    ``ZMQbg/…`` and other named helpers are left out). 0 where ``/proc`` is missing."""
    task = Path("/proc/self/task")
    try:
        main = Path("/proc/self/comm").read_text().strip()
        tids = [int(t) for t in os.listdir(task)]
    except OSError:
        return 0
    python = {t.native_id for t in threading.enumerate()}
    count = 0
    for tid in tids:
        if tid in python:
            continue
        try:
            if (task / str(tid) / "comm").read_text().strip() == main:
                count += 1
        except OSError:
            continue  # ended meanwhile
    return count


def note_torch_imported() -> None:
    """Count torch's own threads now (called as ``torch.cuda``'s import finishes, before any CPU work)."""
    global _at_torch_import
    if _at_torch_import is None:
        _at_torch_import = native_threads()


def threads_at_torch_import() -> int | None:
    """The count taken by ``note_torch_imported`` (``None`` when torch was imported before gpulab)."""
    return _at_torch_import


COURSE_RANKS = 2  # the ranks a ddp_notebook fit starts in the course (devices=2)


def lightning_threads_per_rank(usable_cores: int, world_size: int) -> int:
    """The threads Lightning gives each forked CPU rank when OMP_NUM_THREADS is unset: cores ÷ ranks, at least 1
    (lightning/fabric/utilities/distributed.py, _set_num_threads_if_needed, called by its multiprocessing launcher,
    with os.sched_getaffinity's cores; Lightning 2.6)."""
    return max(1, usable_cores // world_size)
