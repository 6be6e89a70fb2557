"""Shared by the launcher tests: count the processes a launch leaves behind (there must be none), run fresh Pythons.

Ranks are children of the fork server, which is this process's child: every descendant of this process except the
fork server itself and multiprocessing's resource tracker (both kept for the whole session, as a kernel keeps them)
counts as a process that survived.
"""

from __future__ import annotations

import multiprocessing.forkserver
import multiprocessing.resource_tracker
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import psutil

from tests import process_group

ROOT = Path(__file__).resolve().parents[2]


def leftover_processes(wait_s: float = 3.0) -> list[psutil.Process]:
    """Descendants of this process other than the fork server and resource tracker, after up to ``wait_s``."""
    keep = {
        multiprocessing.forkserver._forkserver._forkserver_pid,
        multiprocessing.resource_tracker._resource_tracker._pid,
    }
    deadline = time.monotonic() + wait_s
    while True:
        left = []
        for p in psutil.Process().children(recursive=True):
            try:
                if p.pid not in keep and p.status() != psutil.STATUS_ZOMBIE:
                    left.append(p)
            except psutil.NoSuchProcess:
                pass
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.05)


def run_python(code: str, timeout: float = 180, **kwargs) -> subprocess.CompletedProcess:
    """Run ``code`` in a fresh interpreter (this checkout first on the path); output captured as text."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    env.update(kwargs.pop("env", {}))
    return process_group.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        **kwargs,
    )
