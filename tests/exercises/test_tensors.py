"""The checkers compare weights wherever they live: on the CPU here, and across the CPU and a GPU where one exists.

On one H100 (the GPU run of 2026-11-26, evidence/2026-11-26-h100-80gb-hbm3.md, chapter 03 cells 26-27)
``gpulab.check("ch03-ex1")`` raised "Expected all tensors to be on the same device ... cuda:0 ... cpu": DataParallel
on one GPU had moved the checker's model to cuda:0, and ``torch.equal`` compared it with the learner's CPU model.
This machine has no second device to put a tensor on (``meta`` holds no values), so the CPU tests hold every checker
to comparing through ``gpulab.exercises.tensors``, and the ``gpu`` tests run the real case where a GPU exists.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
import torch
from torch import nn

import gpulab
from gpulab.exercises.tensors import close_tensor, same_tensor, same_weights, state_differences

EXERCISES = Path(gpulab.__file__).parent / "exercises"
COMPARISONS = {"equal", "allclose", "isclose", "eq"}
NOT_TENSORS = {"math", "np", "numpy"}  # math.isclose(a, b) compares two floats


def _model(seed: int) -> nn.Module:
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.Linear(4, 2))


def test_same_weights_holds_for_a_copy_and_names_what_differs_otherwise():
    a, b = _model(1), _model(1)
    assert same_weights(a, b) and state_differences(a, b.state_dict()) == []
    with torch.no_grad():
        b[2].bias[0] += 1
    assert not same_weights(a, b)
    assert state_differences(a, b) == ["2.bias: different values"]


def test_keys_are_matched_by_name_not_by_position():
    a = _model(1).state_dict()
    shuffled = dict(reversed(list(a.items())))
    assert same_weights(a, shuffled)
    missing = {k: v for k, v in a.items() if k != "1.running_mean"}
    assert state_differences(a, missing) == ["1.running_mean: only in the first"]
    assert state_differences(missing, a) == ["1.running_mean: only in the second"]


def test_a_shape_mismatch_is_a_difference_not_an_error():
    a, b = {"w": torch.zeros(2, 3)}, {"w": torch.zeros(3, 2)}
    assert state_differences(a, b) == ["w: shape (2, 3) against (3, 2)"]
    assert not same_tensor(a["w"], b["w"]) and not close_tensor(a["w"], b["w"])


def test_close_tensor_allows_rounding_and_nothing_more():
    x = torch.tensor([1.0, 2.0])
    assert close_tensor(x, x + 1e-9) and not close_tensor(x, x + 1e-3) and not same_tensor(x, x + 1e-3)


def _tensor_comparisons(path: Path) -> list[str]:
    """Calls like ``torch.equal(a, b)``, ``a.equal(b)``, ``torch.allclose(...)`` in a module, with their lines."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in COMPARISONS
            and not (isinstance(node.func.value, ast.Name) and node.func.value.id in NOT_TENSORS)
        ):
            found.append((node.lineno, f"{path.name}:{node.lineno}: {ast.unparse(node)}"))
    return [text for _, text in sorted(found)]


def test_every_checker_compares_tensors_through_the_module_that_moves_them_to_the_cpu():
    modules = sorted(p for p in EXERCISES.glob("*.py") if p.name != "tensors.py")
    assert len(modules) >= 10
    direct = [c for p in modules for c in _tensor_comparisons(p)]
    assert direct == [], (
        "compare with gpulab.exercises.tensors (same_weights, same_tensor, close_tensor), which "
        "works wherever the tensors are; torch.equal refuses a CPU and a GPU tensor:\n" + "\n".join(direct)
    )


def test_the_scan_finds_a_direct_comparison(tmp_path):
    path = tmp_path / "chXX.py"
    path.write_text(
        "import math, torch\nok = all(torch.equal(x, y) for x, y in pairs)\nclose = a.allclose(b)\n"
        "fine = math.isclose(1.0, 1.0)\n"
    )
    assert _tensor_comparisons(path) == ["chXX.py:2: torch.equal(x, y)", "chXX.py:3: a.allclose(b)"]


@pytest.mark.gpu
def test_on_a_gpu_weights_on_cuda_and_on_the_cpu_compare_by_value():
    a = _model(1)
    b = _model(1).to("cuda:0")
    assert same_weights(a, b) and same_weights(b, a)
    with torch.no_grad():
        b[0].weight[0, 0] += 1
    assert state_differences(a, b) == ["0.weight: different values"]


@pytest.mark.gpu
def test_on_a_gpu_the_dataparallel_checkpoint_exercise_accepts_the_solution():
    """The failure of the 2026-11-26 run: one GPU, so DataParallel put the checker's model on cuda:0."""

    def load_plain(model, state_dict):
        state_dict = dict(state_dict)
        torch.nn.modules.utils.consume_prefix_in_state_dict_if_present(state_dict, "module.")
        model.load_state_dict(state_dict)
        return model

    feedback = gpulab.check("ch03-ex1", load_plain)
    assert feedback.passed, str(feedback)
