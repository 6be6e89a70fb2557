"""The count of chapter runs (tests/chapter_runs.py) sees a real kernel run a chapter's cells, and fails over 2."""

from __future__ import annotations

import os
import sys
from collections import Counter
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from tests import chapter_runs
from tests.process_group import run

ROOT = Path(__file__).resolve().parents[1]


def test_a_third_run_of_a_chapter_is_reported_and_two_are_not():
    assert chapter_runs.over_limit(Counter({"02_choosing_gpus.ipynb": 2, "04_ddp.ipynb": 1})) == []
    assert chapter_runs.over_limit(Counter({"02_choosing_gpus.ipynb": 3})) == [
        "02_choosing_gpus.ipynb ran 3 times in this session (at most 2)"
    ]


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


def test_under_xdist_the_workers_counts_are_added_up(tmp_path):
    # Two files on two workers (--dist loadfile): a chapter counted twice on one and once on the other ran 3 times.
    pytest.importorskip("xdist")
    name = chapter_runs.CHAPTERS[0].name
    for file, n in (("test_a.py", 2), ("test_b.py", 1)):
        (tmp_path / file).write_text(
            f"from tests import chapter_runs\n\n\ndef test_run():\n    chapter_runs.RUNS[{name!r}] += {n}\n"
        )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "tests.chapter_runs",
            "-n",
            "2",
            "--dist",
            "loadfile",
            "-q",
            "-p",
            "no:cacheprovider",
            "-c",
            os.devnull,
            "--rootdir",
            str(tmp_path),
            str(tmp_path),
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert "2 passed" in done.stdout, done.stdout + done.stderr
    assert f"ERROR: {name} ran 3 times in this session" in done.stdout
    assert done.returncode == 1
