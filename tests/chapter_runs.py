"""Counts the kernels that run each chapter during a pytest session; a chapter run more than twice fails the session.

A chapter runs once under nbval (against its committed outputs); its run on a described server is JupyterLab's
(``tests/test_browser.py``), in a kernel of that server's, not counted here. A test that needs executed outputs uses the
committed ones that nbval verifies, or a small chapter of its own; a test that must run a chapter once more is marked
``slow`` (``make test-slow``). Counted here, in this process: every nbval notebook's kernel, and every nbclient
kernel started for a notebook whose cells are a chapter's (matched by cell ids). At the end of the session the
counts are checked, and the run fails naming each chapter over the limit.

Under pytest-xdist (``make test`` runs two workers) each worker counts its own kernels and hands the counts to the
controller in ``workeroutput`` (xdist's channel for exactly this); the controller adds them up as each worker goes
down and checks the sum, so a chapter run once on each worker is still two runs.
"""

from __future__ import annotations

import functools
from collections import Counter
from pathlib import Path

import nbformat
import pytest

LIMIT = 2
_NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"
# the chapters, and the workshop guide, which runs like them (nbval, a described machine)
CHAPTERS = sorted(_NOTEBOOKS.glob("[0-9][0-9]_*.ipynb")) + [_NOTEBOOKS / "workshop_guide.ipynb"]
RUNS: Counter[str] = Counter()
OUTPUT_KEY = "gpulab_chapter_runs"


@functools.cache
def _chapter_by_cell_id() -> dict[str, str]:
    ids = {}
    for path in CHAPTERS:
        for cell in nbformat.read(path, as_version=4).cells:
            ids[cell.get("id")] = path.name
    ids.pop(None, None)
    return ids


def chapter_of(nb: nbformat.NotebookNode) -> str | None:
    """The chapter whose cells ``nb`` holds (most of its cell ids are that chapter's), or None."""
    names = Counter(_chapter_by_cell_id().get(cell.get("id")) for cell in nb.cells)
    names.pop(None, None)
    if not names:
        return None
    name, count = names.most_common(1)[0]
    return name if count * 2 > len(nb.cells) else None


def over_limit(runs: Counter[str], limit: int = LIMIT) -> list[str]:
    """One line per chapter that ran more than ``limit`` times."""
    return [f"{name} ran {n} times in this session (at most {limit})" for name, n in sorted(runs.items()) if n > limit]


def _count_nbclient() -> None:
    from nbclient import NotebookClient

    start = NotebookClient.async_start_new_kernel
    if getattr(start, "counts_chapters", False):
        return

    @functools.wraps(start)
    async def counted(self, **kwargs):
        name = chapter_of(self.nb)
        if name:
            RUNS[name] += 1
        return await start(self, **kwargs)

    counted.counts_chapters = True
    NotebookClient.async_start_new_kernel = counted


def _count_nbval() -> None:
    try:
        from nbval.plugin import IPyNbFile
    except ImportError:
        return
    setup = IPyNbFile.setup
    if getattr(setup, "counts_chapters", False):
        return

    @functools.wraps(setup)
    def counted(self):
        name = Path(str(self.fspath)).name
        if any(name == p.name for p in CHAPTERS):
            RUNS[name] += 1
        return setup(self)

    counted.counts_chapters = True
    IPyNbFile.setup = counted


def pytest_configure(config: pytest.Config) -> None:
    _count_nbclient()
    _count_nbval()


def _is_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error) -> None:
    """In the xdist controller: one worker's counts, added to the session's."""
    RUNS.update(getattr(node, "workeroutput", {}).get(OUTPUT_KEY, {}))


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if _is_worker(session.config):
        session.config.workeroutput[OUTPUT_KEY] = dict(RUNS)
        return
    problems = over_limit(RUNS)
    if problems:
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        for line in problems:
            if reporter:
                reporter.write_line(f"ERROR: {line}", red=True)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
