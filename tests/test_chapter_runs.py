"""The count of chapter runs (tests/chapter_runs.py) sees a real kernel run a chapter's cells, and fails over 2."""
from __future__ import annotations

from collections import Counter

import nbformat
from nbclient import NotebookClient

from tests import chapter_runs


def test_a_third_run_of_a_chapter_is_reported_and_two_are_not():
    assert chapter_runs.over_limit(Counter({"02_choosing_gpus.ipynb": 2, "04_ddp.ipynb": 1})) == []
    assert chapter_runs.over_limit(Counter({"02_choosing_gpus.ipynb": 3})) == [
        "02_choosing_gpus.ipynb ran 3 times in this session (at most 2: nbval and the simulated run)"]


def test_a_notebook_is_known_by_its_cells_ids():
    chapter = nbformat.read(chapter_runs.CHAPTERS[0], as_version=4)
    assert chapter_runs.chapter_of(chapter) == chapter_runs.CHAPTERS[0].name
    assert chapter_runs.chapter_of(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("1")])) is None


def test_a_kernel_that_runs_a_chapters_cells_is_counted():
    # The first chapter's cells, each with its id but a trivial source: counted as that chapter, cheap to run.
    chapter = nbformat.read(chapter_runs.CHAPTERS[0], as_version=4)
    for cell in chapter.cells:
        if cell.cell_type == "code":
            cell.source, cell.metadata["tags"] = "1", []
    name = chapter_runs.CHAPTERS[0].name
    before = chapter_runs.RUNS[name]
    try:
        NotebookClient(chapter, kernel_name="python3", timeout=120).execute()
        assert chapter_runs.RUNS[name] == before + 1
    finally:
        chapter_runs.RUNS[name] = before  # this run is the test's, not a chapter's
