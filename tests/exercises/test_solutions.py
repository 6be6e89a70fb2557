"""Every solution cell in the chapters passes its checker, and every skeleton cell does not.

The exercise cells are read from the committed notebooks and run here, in a namespace holding what each chapter has
defined by then (a small prelude per chapter), so a solution that drifts from its checker fails this test.
"""

from __future__ import annotations

import ast
from pathlib import Path

import nbformat
import pytest

import gpulab
from gpulab.exercises.check import exercise_names

NOTEBOOKS = sorted((Path(__file__).resolve().parents[2] / "notebooks").glob("[0-9][0-9]_*.ipynb"))

PRELUDES = {  # what the chapter defines before its exercises, and the exercise cells use
    "00": "import torch\nworkshop = gpulab.SimulatedGpuReader('workshop-8')",
    "01": "import numpy as np\nimport torch\nfrom torch import nn\nfrom torch.utils import benchmark",
    "02": "import torch\nfrom gpulab import parse_visible_devices",
    "03": "import torch",
    "04": "import torch\nfrom torch.utils.data import DistributedSampler",
    "05": (
        "import torch\nfrom torch.profiler import ProfilerActivity, profile\nfrom gpulab.workload import load_digits\n"
        "data = load_digits()\nwith gpulab.monitor(show=False) as mon:\n    torch.ones(1000).sum()"
    ),
    "06": "import lightning as L\nimport torch\nfrom torch import nn\nfrom gpulab.workload import mlp",
    "07": "import contextlib",
    "08": "",
}


def _tags(cell: nbformat.NotebookNode) -> list[str]:
    return cell.metadata.get("tags", [])


def test_exercise_cells_are_tagged_for_handouts_and_nbval():
    for path in NOTEBOOKS:
        cells = nbformat.read(path, as_version=4).cells
        for i, cell in enumerate(cells):
            if "solution" in _tags(cell):
                skeleton, check = cells[i - 2], cells[i - 1]
                assert sorted(_tags(cell)) == ["nbval-check-output", "solution"], cell.source[:60]
                assert _tags(check) == ["nbval-check-output"] and _tags(skeleton) == [], check.source[:60]
                assert skeleton.cell_type == check.cell_type == cell.cell_type == "code"


def exercise_cells() -> list[tuple[str, str, str, str, str]]:
    """(exercise, chapter, skeleton, check cell, solution) sources for every exercise in the notebooks: each solution
    cell follows the learner's skeleton cell and its check cell."""
    found = []
    for path in NOTEBOOKS:
        cells = nbformat.read(path, as_version=4).cells
        for i, cell in enumerate(cells):
            if "solution" in _tags(cell):
                name = ast.literal_eval(_check_call(cell.source).args[0])
                found.append((name, path.name[:2], cells[i - 2].source, cells[i - 1].source, cell.source))
    return found


def _check_call(source: str) -> ast.Call:
    last = ast.parse(source).body[-1]
    assert isinstance(last, ast.Expr) and isinstance(last.value, ast.Call), "a check cell ends with gpulab.check(...)"
    assert ast.unparse(last.value.func) == "gpulab.check", ast.unparse(last.value)
    return last.value


def run_ending_in_check(source: str, namespace: dict) -> gpulab.exercises.feedback.Feedback:
    """Run a cell whose last line is ``gpulab.check(...)`` and return what that line gives."""
    tree = ast.parse(source)
    *body, last = tree.body
    exec(compile(ast.Module(body=body, type_ignores=[]), "<cell>", "exec"), namespace)
    return eval(compile(ast.Expression(last.value), "<cell>", "eval"), namespace)


CELLS = exercise_cells()


def test_every_exercise_has_a_solution_cell_in_its_chapter():
    assert sorted(name for name, *_ in CELLS) == sorted(exercise_names())
    assert all(name.startswith(f"ch{chapter}-") for name, chapter, *_ in CELLS)


@pytest.mark.parametrize("name, chapter, skeleton, check, solution", CELLS, ids=[c[0] for c in CELLS])
def test_the_solution_passes_and_the_skeleton_does_not(name, chapter, skeleton, check, solution, capsys, monkeypatch):
    monkeypatch.chdir(NOTEBOOKS[0].parent)  # where a chapter's cells run: its paths (scripts/...) are relative to it
    assert ast.unparse(_check_call(check)) == ast.unparse(_check_call(solution)), "the solution ends with the check"
    namespace: dict = {"gpulab": gpulab}
    exec(PRELUDES[chapter], namespace)
    exec(skeleton, namespace)
    unfinished = run_ending_in_check(check, namespace)
    assert not unfinished.passed and unfinished.exercise == name
    assert unfinished.verdict in ("not answered yet", "not yet"), str(unfinished)
    done = run_ending_in_check(solution, namespace)
    assert done.passed, str(done)
    printed = capsys.readouterr().out
    assert "False" not in printed, printed  # a solution's own comparison (chapter 05) holds


def _markdown(stem: str) -> str:
    path = next(p for p in NOTEBOOKS if p.name.startswith(stem))
    return "\n".join(c.source for c in nbformat.read(path, as_version=4).cells if c.cell_type == "markdown")


def test_the_tasks_quote_what_the_checkers_check():
    from gpulab.exercises import ch00_setup, ch01_transfer, ch02_choosing, ch06_lightning

    for letter, call in ch00_setup.CALLS.items():
        assert f"| {letter} | " in _markdown("00") and (call in _markdown("00")), call
    for letter, code in ch01_transfer.CONVERSIONS.items():
        assert f"| {letter} | `{code}` |" in _markdown("01"), code
    assert f"CUDA_VISIBLE_DEVICES={ch02_choosing.UUIDS}`" in _markdown("02")
    for raw in ch02_choosing.VALUES:
        assert f'"{raw}"' in "\n".join(c[2] for c in CELLS if c[0] == "ch02-ex2"), raw
    for old_call, _ in ch06_lightning.OLD_CALLS.values():
        assert f"`{old_call}`" in _markdown("06"), old_call
