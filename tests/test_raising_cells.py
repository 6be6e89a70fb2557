"""tests/raising_cells.py: a raises-exception cell that stops raising, or raises something else, fails the run.

The rules are checked on their own first; then a notebook that is wrong on purpose goes through nbval and the
plugin in a separate pytest run, the way `make test` runs the chapters, and the cells that must fail do.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook, new_output

from tests import process_group
from tests.raising_cells import (
    GPU_SKIP_LINE,
    SANITIZE_FILE,
    ExpectedError,
    expected_error,
    raising_cell_problem,
    skipped_gpu_cell,
    stable_start,
    volatile_patterns,
)

ROOT = Path(__file__).resolve().parents[1]


def _error(ename: str, evalue: str) -> nbformat.NotebookNode:
    return new_output("error", ename=ename, evalue=evalue, traceback=[f"{ename}: {evalue}"])


def _stdout(text: str) -> nbformat.NotebookNode:
    return new_output("stream", name="stdout", text=text)


def _cell(source: str, outputs: list, tags=("raises-exception",), **metadata) -> nbformat.NotebookNode:
    cell = new_code_cell(source, outputs=outputs, execution_count=1)
    cell.metadata["tags"] = list(tags)
    cell.metadata.update(metadata)
    return cell


# -- the rules ----------------------------------------------------------------------------------------------------
def test_the_stable_start_is_the_first_line_with_volatile_parts_replaced():
    assert (
        stable_start("asked for 1 GPU but only 0 of 8 qualify:\n  GPU 1: reserved by pid 8257")
        == "asked for 1 GPU but only 0 of 8 qualify:"
    )
    moved = "rank 1 raised FileNotFoundError: No such file or directory: '/tmp/tmp8hnco6rd/new.pt'"
    assert stable_start(moved) == stable_start(moved.replace("tmp8hnco6rd", "tmpq2x"))
    assert stable_start("object at 0x7f3a2b1c9d00, took 12.5 ms") == stable_start("object at 0x55d0aa01b2c3, took 3 s")
    assert stable_start("bound to port 29500 by pid 4242") == stable_start("bound to port 41234 by pid 77")
    assert stable_start("only 0 of 8 qualify") != stable_start("only 1 of 8 qualify")  # plain numbers are content
    assert stable_start("found 3 at noon", marker=" at ") == "found 3"


def test_the_volatile_patterns_are_the_sanitize_file_nbval_uses(pytestconfig):
    assert Path(pytestconfig.option.nbval_sanitize_with) == SANITIZE_FILE  # one file for nbval and for this check
    names = [replace for _, replace in volatile_patterns()]
    assert {"DURATION", "0xADDRESS", "PATH"} <= set(names)


def test_the_committed_error_is_what_is_expected():
    cell = _cell("boom()", [_stdout("before\n"), _error("RuntimeError", "Invalid device string: 'cuda:1,2'\nmore")])
    assert expected_error(cell) == ExpectedError("RuntimeError", "Invalid device string: 'cuda:1,2'")
    assert expected_error(_cell("x = 1", [_stdout("1\n")])) is None
    marked = _cell("f()", [_error("ValueError", "found 3 at noon")], gpulab={"error_stable_until": " at "})
    assert expected_error(marked).message_start == "found 3"
    lost = _cell("f()", [_error("ValueError", "found 3")], gpulab={"error_stable_until": " at "})
    with pytest.raises(ValueError, match="does not occur in the first line of its committed error message"):
        expected_error(lost)


@pytest.mark.parametrize(
    ("fresh", "verdict"),
    [
        ([_error("TypeError", "'bool' object is not callable")], None),
        ([], "raised nothing now"),
        ([_stdout("ok\n")], "raised nothing now"),
        (
            [_error("ValueError", "'bool' object is not callable")],
            "it raised ValueError but the notebook committed TypeError",
        ),
        ([_error("TypeError", "'int' object is not callable")], "the message starts differently"),
        ([_error("TypeError", "'bool' object is not callable\nwith a different second line")], None),
    ],
)
def test_a_fresh_run_is_compared_with_the_committed_error(fresh, verdict):
    cell = _cell("x.is_cuda()", [_error("TypeError", "'bool' object is not callable")])
    problem = raising_cell_problem(cell, fresh)
    assert problem is None if verdict is None else verdict in problem


def test_a_raising_cell_committed_without_its_error_is_refused():
    problem = raising_cell_problem(_cell("raise KeyError(1)", [_stdout("")]), [_error("KeyError", "1")])
    assert "committed output holds no error" in problem


def test_a_gpu_cell_skipped_here_is_not_held_to_its_tag():
    skip = [_stdout(f"{GPU_SKIP_LINE} this cell needs 2 CUDA GPU(s), but …\n")]
    cell = _cell("%%gpu 2\nbad_dataparallel()", skip, tags=("multigpu", "raises-exception"))
    assert skipped_gpu_cell(cell.source, skip) and raising_cell_problem(cell, skip) is None
    # printing the same words without the magic is no skip; a %%gpu cell that ran and printed nothing must raise
    assert not skipped_gpu_cell("print('x')", skip)
    assert "raised nothing" in raising_cell_problem(cell, [_stdout("ran\n")])
    # where GPUs exist it runs and raises; committed from a CPU run, there is no class to compare with
    assert raising_cell_problem(cell, [_error("RuntimeError", "module must have its parameters on cuda:0")]) is None


def test_the_gpu_magic_starts_its_output_with_the_skip_line(capsys):
    from gpulab.machine.cuda import too_few_gpus
    from gpulab.notebook.magics import gpu_cell

    if too_few_gpus(64) is None:
        pytest.skip("this machine has 64 GPUs: the skip path cannot be shown here")
    gpu_cell("64", "raise RuntimeError('never runs')", shell=None)
    assert capsys.readouterr().out.startswith(GPU_SKIP_LINE)


# -- through nbval, as `make test` runs the chapters --------------------------------------------------------------
def _wrong_on_purpose_notebook() -> nbformat.NotebookNode:
    committed = _error("ValueError", "no GPU named 'fast' on this machine")
    cells = [
        new_code_cell("%load_ext gpulab", execution_count=1),
        _cell("raise ValueError(\"no GPU named 'fast' on this machine\")", [committed]),  # 1: holds
        _cell("x = 1", [committed]),  # 2: the pitfall was fixed upstream: no longer raises
        _cell("raise KeyError('fast')", [committed]),  # 3: another class
        _cell("raise ValueError(\"no GPU called 'fast' here\")", [committed]),  # 4: another message
        _cell(
            "import os, tempfile\nd = os.path.join(tempfile.gettempdir(), f'run{os.getpid()}')\n"
            "raise FileNotFoundError(f'no checkpoint {d}/new.pt in object at {hex(id(d))}\\nsecond line differs')",
            [_error("FileNotFoundError", "no checkpoint /tmp/tmpab12cd/new.pt in object at 0x7f00aa11bb22\nold")],
        ),  # 5
        _cell(
            "%%gpu 64\nraise RuntimeError('runs only on 64 GPUs')",
            [_stdout(f"{GPU_SKIP_LINE} …\n")],
            tags=("multigpu", "raises-exception"),
        ),  # 6: skipped here, not a failure
        _cell(
            "raise ValueError('found 3 at dusk')",
            [_error("ValueError", "found 3 at noon")],
            gpulab={"error_stable_until": " at "},
        ),  # 7: compared up to the marker
        _cell("raise KeyError('fast')", [_stdout("")]),  # 8: committed without its error
    ]
    nb = new_notebook(cells=cells)
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    return nb


def test_nbval_with_the_plugin_fails_exactly_the_wrong_cells(tmp_path):
    path = tmp_path / "wrong_on_purpose.ipynb"
    nbformat.write(_wrong_on_purpose_notebook(), path)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    run = process_group.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "tests.raising_cells",
            "-p",
            "no:cacheprovider",
            "--nbval-lax",
            "-rA",
            "-q",
            str(path),
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    out = run.stdout
    failed = sorted(int(line.split("::Cell ")[1].split()[0]) for line in out.splitlines() if line.startswith("FAILED"))
    passed = sorted(int(line.split("::Cell ")[1].split()[0]) for line in out.splitlines() if line.startswith("PASSED"))
    assert (failed, passed) == ([2, 3, 4, 8], [0, 1, 5, 6, 7]), out + run.stderr
    assert "raised nothing now" in out and "it raised KeyError but the notebook committed ValueError" in out
    assert "the message starts differently" in out and "committed output holds no error" in out
    assert run.returncode == 1
