"""Every argument check goes through ``gpulab.core.arguments``: no module writes its own number check beside it.

A hand-written ``isinstance(n, bool) or not isinstance(n, int) or n < 1`` refuses ``numpy.int64(2)`` (what
``np.arange`` and ``len`` of an array-derived list give) and tends to raise another class than the door's (TypeError
for a wrong kind, ValueError for a wrong value). The walk below finds such checks in the source; the calls after it
pass numpy's integers and floats to the public functions that take counts, and get the same answer as for ``int``.
"""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest

PKG = Path(__file__).resolve().parents[1] / "gpulab"
DOOR = PKG / "core" / "arguments.py"
NUMBER_TYPES = {"int", "float", "complex", "Integral", "Real", "Number", "Rational"}


def _names(node: ast.AST) -> set[str]:
    """The type names an ``isinstance`` second argument mentions: ``int``, ``numbers.Real``, ``(int, float)``."""
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)} | {
        n.attr for n in ast.walk(node) if isinstance(n, ast.Attribute)
    }


def _isinstance_of(node: ast.AST) -> tuple[ast.AST, set[str]] | None:
    if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "isinstance" and len(node.args) == 2:
        return node.args[0], _names(node.args[1])
    return None


def hand_written_number_checks(source: str) -> list[int]:
    """Lines where one expression asks ``isinstance(v, bool)`` and also whether ``v`` is a number type: a whole or
    real number check written by hand instead of ``is_whole_number``/``whole_number``/``positive_number``."""
    tree = ast.parse(source)
    parents = {child: parent for parent in ast.walk(tree) for child in ast.iter_child_nodes(parent)}
    found = set()
    for node in ast.walk(tree):
        asked = _isinstance_of(node)
        if asked is None or asked[1] != {"bool"}:
            continue
        root = node
        while isinstance(parents.get(root), ast.expr):
            root = parents[root]
        subject = ast.dump(asked[0])
        for other in ast.walk(root):
            checked = _isinstance_of(other)
            if checked and ast.dump(checked[0]) == subject and checked[1] & NUMBER_TYPES:
                found.add(node.lineno)
    return sorted(found)


def test_the_walk_finds_a_hand_written_number_check_and_only_that():
    assert hand_written_number_checks("if isinstance(n, bool) or not isinstance(n, int) or n < 1:\n    pass\n") == [1]
    assert hand_written_number_checks(
        "ok = all(isinstance(i, numbers.Integral) and not isinstance(i, bool)\n         for i in items)\n"
    ) == [1]
    assert hand_written_number_checks("bad = isinstance(x, bool) or not isinstance(x, (int, float))\n") == [1]
    assert hand_written_number_checks("if not isinstance(flag, bool):\n    raise TypeError\n") == []  # a flag
    assert hand_written_number_checks("if isinstance(a, bool) or isinstance(b, int):\n    pass\n") == []
    assert hand_written_number_checks("if not is_whole_number(n) or n < 1:\n    pass\n") == []


def test_no_module_checks_numbers_by_hand():
    found = {
        f"{p.relative_to(PKG)}:{line}"
        for p in sorted(PKG.rglob("*.py"))
        if p != DOOR
        for line in hand_written_number_checks(p.read_text())
    }
    assert not found, (
        f"{sorted(found)}: check through gpulab.core.arguments (whole_number, whole_numbers, "
        "positive_number, is_whole_number, is_real_number), which accept numpy's numbers and raise "
        "TypeError for a wrong kind, ValueError for a wrong value"
    )


def test_numpy_integers_are_whole_numbers_wherever_one_is_taken():
    import torch

    import gpulab
    from gpulab.core.arguments import index_list, whole_number, whole_numbers
    from gpulab.lightning.fork_hang import ForkVariant
    from gpulab.machine.cuda import too_few_gpus
    from gpulab.measure.timing import benchmark
    from gpulab.scaling import StepPlan, allreduce_s
    from gpulab.scaling.cost import Link, crossover_batch, mlp_parameters, predict_step, train_flops
    from gpulab.scaling.sweep import steps_for
    from gpulab.workload import load_digits
    from gpulab.workload.models import cnn

    i = np.int64
    assert whole_number(np.int32(3), "n", minimum=1) == 3 and whole_numbers(
        [np.uint8(2), i(0)], "n", example="[2]", what="n"
    ) == (2, 0)
    assert index_list(np.arange(2, 4).tolist(), "gpus") == index_list([i(2), i(3)], "gpus") == (2, 3)
    w8 = gpulab.devices("workshop-8")
    assert gpulab.choose_gpus(i(2), w8).physical_indices == gpulab.choose_gpus(2, w8).physical_indices
    assert too_few_gpus(i(1)) == too_few_gpus(1)
    assert mlp_parameters(i(8), np.int32(2)) == mlp_parameters(8, 2)
    assert train_flops(i(100), i(4)) == train_flops(100, 4)
    assert steps_for(i(64), i(8), i(3), i(4), step_s=np.float32(0.01)) == steps_for(64, 8, 3, 4, step_s=0.01)
    assert StepPlan(i(64), i(8)) == StepPlan(64, 8)
    link = Link(np.float64(1e9), np.float32(1e-5))
    assert allreduce_s(np.float32(4e6), i(2), link) == pytest.approx(allreduce_s(4e6, 2, link))
    assert predict_step(1e9, 4e6, i(2), flops_per_s=np.float64(1e10), link=link).step_s == pytest.approx(
        predict_step(1e9, 4e6, 2, flops_per_s=1e10, link=link).step_s
    )
    assert crossover_batch(np.float32(1e-4), 1e-3, i(2)) == pytest.approx(crossover_batch(1e-4, 1e-3, 2))
    assert ForkVariant("x", i(1), i(1), work_threads=i(1)).fit_threads == 1
    assert gpulab.translate_trainer(gpus=2).for_cpu(devices=i(2)).kwargs["devices"] == 2
    data = load_digits(size=i(8))
    assert len(next(iter(data.loader(batch_size=i(16))))[0]) == 16
    assert cnn((i(2), i(4)), 8)(torch.zeros(1, 1, 28, 28)).shape == (1, 10)
    assert benchmark(lambda: None, repeats=i(2), warmup=i(0), number=i(1)).repeats == 2
    with gpulab.monitor("numpy counts", machine="workshop-8", show=False, live=False) as mon:
        mon.step(i(4))
        assert list(mon.wrap([1, 2], samples=i(3))) == [1, 2]
    assert mon.summary().samples_total == 4 + 2 * 3
