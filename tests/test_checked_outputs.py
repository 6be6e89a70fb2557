"""The comparison that holds a chapter's checked outputs under a described machine rejects what nbval rejects (a
changed line, a missing output) and accepts what nbval's sanitising forgives (a duration, a pid)."""

from __future__ import annotations

import copy
from pathlib import Path

import nbformat
import pytest

from .checked_outputs import checked_differences

CHAPTER = Path(__file__).resolve().parents[1] / "notebooks" / "02_choosing_gpus.ipynb"


def _stdout(text: str) -> nbformat.NotebookNode:
    return nbformat.v4.new_output("stream", name="stdout", text=text)


def _notebook(text: str, tags: list[str]) -> nbformat.NotebookNode:
    cell = nbformat.v4.new_code_cell("print(...)")
    cell.id = "c0ffee00"
    cell.metadata["tags"] = tags
    cell.outputs = [_stdout(text)]
    nb = nbformat.v4.new_notebook()
    nb.cells = [cell]
    return nb


@pytest.mark.parametrize(
    "then, now",
    [
        ("NoFreeGpu: every GPU is held\n", "reserved GPU 3 (SIMULATED)\n"),  # chapter 02's cell under workshop-8
        ("a\nb\n", "a\n"),
    ],
)
def test_a_changed_checked_output_is_reported(then, now):
    assert checked_differences(_notebook(then, ["nbval-check-output"]), _notebook(now, [])) != []


@pytest.mark.parametrize(
    "then, now",
    [
        ("took 3.2 ms in pid 123\n", "took 41 µs in pid 9\n"),  # nbval_sanitize.cfg's durations and pids
        ("same\n", "same\n"),
    ],
)
def test_what_nbval_forgives_is_forgiven(then, now):
    assert checked_differences(_notebook(then, ["nbval-check-output"]), _notebook(now, [])) == []


def test_an_unchecked_cell_is_not_compared():
    assert checked_differences(_notebook("one\n", []), _notebook("another\n", [])) == []


def test_a_committed_chapter_agrees_with_itself_and_not_with_an_edit():
    committed = nbformat.read(CHAPTER, as_version=4)
    assert checked_differences(committed, copy.deepcopy(committed)) == []
    edited = copy.deepcopy(committed)
    cell = next(c for c in edited.cells if "nbval-check-output" in c.metadata.get("tags", []) and c.outputs)
    cell.outputs = [_stdout("something else\n")]
    assert len(checked_differences(committed, edited)) == 1
