"""Fixtures of the launcher tests."""

from __future__ import annotations

import pytest

from .processes import leftover_processes


@pytest.fixture
def no_process_left():
    """Fails the test if any rank (or anything else it started) is still running after it."""
    before = {p.pid for p in leftover_processes(wait_s=0)}
    yield
    left = [p for p in leftover_processes() if p.pid not in before]
    assert left == [], f"processes survived the test: {[(p.pid, p.cmdline()[:3]) for p in left]}"
