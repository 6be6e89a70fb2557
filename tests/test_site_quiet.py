"""The site never publishes a run its own chapter calls not quiet (tools/sitekit/quiet.py), and its footer says what
the GPU cells on its pages really show (tools/sitekit/pages.py)."""

from __future__ import annotations

import sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
from sitekit import pages, quiet  # noqa: E402


def _run(ceiling: float | None, word: str = "quiet") -> nbformat.NotebookNode:
    cells = [nbformat.v4.new_markdown_cell("# 04 · DDP"), nbformat.v4.new_code_cell("print(how_quiet())")]
    if ceiling is not None:
        line = f"this run's machine: a 2-core CPU, 2 usable cores, load 0.4; ceiling {ceiling:.2f}× → {word}\n"
        cells[1].outputs = [nbformat.v4.new_output("stream", name="stdout", text=line)]
    return nbformat.v4.new_notebook(cells=cells)


def _chapter(tmp_path: Path, committed: nbformat.NotebookNode) -> Path:
    path = tmp_path / "04_ddp.ipynb"
    nbformat.write(committed, path)
    return path


def test_a_quiet_run_or_a_chapter_that_times_nothing_is_published_as_it_ran(tmp_path):
    path = _chapter(tmp_path, _run(1.9))
    for nb in (_run(1.95), _run(None)):
        chosen = quiet.quiet_run(path, run=lambda p, nb=nb: nb, rerun=lambda p: 1 / 0, say=lambda _: None)
        assert chosen.nb is nb and chosen.note is None and not chosen.committed


def test_a_noisy_run_is_run_again_and_the_quiet_second_run_is_published(tmp_path):
    path, said = _chapter(tmp_path, _run(1.9)), []
    second = _run(1.88)
    chosen = quiet.quiet_run(path, run=lambda p: _run(0.99, "not quiet"), rerun=lambda p: second, say=said.append)
    assert chosen.nb is second and chosen.note is None
    assert said == ["site: 04_ddp.ipynb: its run says the machine was not quiet (ceiling 0.99×); running it once more"]


def test_noisy_twice_falls_back_to_the_committed_quiet_run_and_says_so_on_the_page(tmp_path):
    path = _chapter(tmp_path, _run(1.93))
    noisy = lambda p: _run(1.2, "not quiet")  # noqa: E731
    chosen = quiet.quiet_run(path, run=noisy, rerun=noisy, say=lambda _: None)
    assert chosen.committed and quiet.quietness_of(chosen.nb) == (1.93, True)
    assert "committed run, saved from a quiet machine" in chosen.note and "ceiling 1.20× twice" in chosen.note
    page = quiet.with_note(chosen.nb, chosen.note)
    assert page.cells[0].source == "# 04 · DDP" and page.cells[1].source.startswith("```{admonition} Which run")


def test_without_a_second_run_a_noisy_run_falls_back_to_the_committed_quiet_run(tmp_path):
    path, said = _chapter(tmp_path, _run(1.93)), []
    chosen = quiet.quiet_run(path, run=lambda p: _run(1.2, "not quiet"), rerun=None, say=said.append)
    assert chosen.committed and quiet.quietness_of(chosen.nb) == (1.93, True)
    assert "ceiling 1.20× in its one run" in chosen.note
    assert said == [
        "site: 04_ddp.ipynb: not quiet in its one run; the page shows the committed quiet run (ceiling 1.93×)"
    ]


def test_with_no_quiet_run_anywhere_the_page_is_labelled_not_quiet(tmp_path):
    path = _chapter(tmp_path, _run(1.1, "not quiet"))
    noisy = lambda p: _run(1.2, "not quiet")  # noqa: E731
    chosen = quiet.quiet_run(path, run=noisy, rerun=noisy, say=lambda _: None)
    assert not chosen.committed and "This run was not quiet (ceiling 1.20×)" in chosen.note


def test_the_footer_says_what_the_gpu_cells_show():
    assert pages.gpu_footer(0, 41) == (
        "The 41 GPU cells did not run here and have no recorded GPU output yet: each says what it needs."
    )
    assert pages.gpu_footer(1, 0).startswith("1 GPU cell that could not run here shows what a recorded GPU run")
    assert pages.gpu_footer(3, 2).endswith("; 2 more have no recorded GPU output yet and say what they need.")
    assert pages.gpu_footer(0, 0) == "Every GPU cell ran on this machine."


def test_a_pages_gpu_cells_are_counted_by_what_they_show():
    skipped = nbformat.v4.new_code_cell("%%gpu 2\nx = 1")
    skipped.outputs = [
        nbformat.v4.new_output("stream", name="stdout", text="Not run here: … No recorded GPU output yet.")
    ]
    shown = nbformat.v4.new_code_cell("%%gpu\ny = 1", metadata={"tags": ["gpu", "recorded"]})
    plain = nbformat.v4.new_code_cell("z = 1")
    page = nbformat.v4.new_notebook(cells=[skipped, shown, plain])
    assert pages.gpu_cell_counts(page) == {"recorded": 1, "waiting": 1}
