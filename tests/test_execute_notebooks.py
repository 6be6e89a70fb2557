"""tools/execute_notebooks.py saves a timing chapter only from a quiet machine, says why not, and can be overridden."""

from __future__ import annotations

import sys
from pathlib import Path

import nbformat
import pytest

from gpulab.scaling.probes import Ceiling
from gpulab.scaling.quiet import Quietness, read_quietness

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import execute_notebooks as ex  # noqa: E402  (a script beside the checkout's tools)


def _quietness(ceiling: float, load: float = 0.3) -> Quietness:
    return Quietness("a test CPU", 2, load, Ceiling(alone_s=ceiling / 2, pair_s=1.0))


def test_the_timing_chapters_include_the_two_whose_lessons_read_timings():
    assert {"05_live_monitor.ipynb", "07_scaling.ipynb"} <= set(ex.TIMING_CHAPTERS)
    assert all((ROOT / "notebooks" / name).exists() for name in ex.TIMING_CHAPTERS)


def test_a_busy_machine_refuses_a_timing_chapter_before_running_it_and_says_why(monkeypatch, tmp_path, capsys):
    import gpulab.scaling

    monkeypatch.setattr(gpulab.scaling, "how_quiet", lambda: _quietness(1.57, load=1.9))
    chapter = tmp_path / "07_scaling.ipynb"
    chapter.write_text("not a notebook: the refusal comes before it is read")
    assert ex.main([str(chapter)]) == 1
    err = capsys.readouterr().err
    assert (
        "07_scaling.ipynb: not saved, because the machine was not quiet before it ran: 2 independent processes" in err
    )
    assert "reached 1.57× one, load average 1.90, below the 1.7× of a quiet machine" in err
    assert "--allow-noisy (or GPULAB_ALLOW_NOISY=1)" in err and "not saved (machine not quiet): 07_scaling.ipynb" in err


def test_a_ceiling_above_two_is_refused_as_a_slowed_single_run_not_as_a_held_core(monkeypatch, tmp_path, capsys):
    import gpulab.scaling

    monkeypatch.setattr(gpulab.scaling, "how_quiet", lambda: _quietness(2.36, load=1.12))
    assert ex.main([str(tmp_path / "04_ddp.ipynb")]) == 1
    err = capsys.readouterr().err
    assert "reached 2.36× one, load average 1.12, above the 2× two processes can reach" in err
    assert "below the 1.7×" not in err


def test_the_override_and_a_quiet_machine_let_it_run(monkeypatch, tmp_path):
    import gpulab.scaling

    ran = []
    monkeypatch.setattr(ex, "run", lambda path, allow_noisy=False: ran.append((path.name, allow_noisy)))
    assert ex.main(["--allow-noisy", str(tmp_path / "07_scaling.ipynb")]) == 0
    monkeypatch.setenv("GPULAB_ALLOW_NOISY", "1")
    assert ex.main([str(tmp_path / "05_live_monitor.ipynb")]) == 0
    assert ran == [("07_scaling.ipynb", True), ("05_live_monitor.ipynb", True)]
    monkeypatch.setattr(gpulab.scaling, "how_quiet", lambda: _quietness(1.9))
    ex.check_before(tmp_path / "07_scaling.ipynb")  # quiet: no refusal


def _ran(first_output: str) -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("print(how_quiet())")
    cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=first_output)]
    nb.cells = [cell]
    return nb


def test_after_the_run_the_chapters_own_top_line_must_say_quiet():
    path = Path("07_scaling.ipynb")
    ex.check_after(path, _ran(str(_quietness(1.85)) + "\n"))
    with pytest.raises(ex.NotQuiet, match=r"not quiet while it ran: 2 independent processes reached 1.40× one"):
        ex.check_after(path, _ran(str(_quietness(1.4)) + "\n"))
    # the top line prints the ceiling rounded: 2.054× reads back as 2.05, not above DISTURBED_ABOVE, yet not quiet
    with pytest.raises(ex.NotQuiet, match=r"reached 2.05× one, above the 2× two processes can reach") as refused:
        ex.check_after(path, _ran(str(_quietness(2.054)) + "\n"))
    assert "below the 1.7×" not in str(refused.value)
    with pytest.raises(ValueError, match=r"printed no \"this run's machine:\" line"):
        ex.check_after(path, _ran("fast mode: True\n"))


def test_the_printed_line_reads_back_as_it_was_decided():
    assert read_quietness(str(_quietness(1.85))) == (1.85, True)
    assert read_quietness(str(_quietness(1.3))) == (1.3, False)
    disturbed = str(_quietness(2.1))  # above 2×: the 1-process run was slowed by another program, so not quiet
    assert (
        read_quietness(disturbed) == (2.1, False) and "above 2×: another program slowed the 1-process run" in disturbed
    )
    assert read_quietness("nothing here") is None
