"""DataParallel's devices are a decision of the GPU count alone, tested for 0, 1, 2 and 8 GPUs; then carried out.

On one H100 (the GPU run of 2026-11-26, evidence/2026-11-26-h100-80gb-hbm3.md) chapter 03's
``DataParallel(model, device_ids=[0, 1])`` raised ``AssertionError: Invalid device id``: torch checks every listed
GPU exists once CUDA is there, and ignores ``device_ids`` altogether without it, so no CPU run could see the mistake.
The decision below never lists a GPU the machine lacks. The CPU carries it out here for 0 GPUs; the ``gpu`` and
``multigpu`` tests carry it out where GPUs exist (2+ GPUs have never been at hand: those rows are checked here only).
"""

from __future__ import annotations

import pytest
import torch

from gpulab.dataparallel.device_ids import chunk_sizes, dataparallel_devices, dataparallel_table
from gpulab.machine.cuda import cuda_gpu_count
from gpulab.testing import requires_gpus

EXPECTED = {  # gpu count -> device_ids, model and outputs on, active, splits, where a batch of 64 per GPU goes
    0: ((), "cpu", False, False, (("cpu", 64),)),
    1: ((0,), "cuda:0", True, False, (("cuda:0", 64),)),
    2: ((0, 1), "cuda:0", True, True, (("cuda:0", 64), ("cuda:1", 64))),
    8: (tuple(range(8)), "cuda:0", True, True, tuple((f"cuda:{i}", 64) for i in range(8))),
}


@pytest.mark.parametrize("gpus", sorted(EXPECTED))
def test_the_devices_for_0_1_2_and_8_gpus(gpus):
    ids, where, active, splits, goes = EXPECTED[gpus]
    plan = dataparallel_devices(gpus)
    assert (plan.device_ids, plan.model_device, plan.output_device) == (ids, where, where)
    assert (plan.active, plan.splits) == (active, splits)
    assert plan.batch_goes(64 * max(1, gpus)) == goes


@pytest.mark.parametrize("gpus", range(0, 17))
@pytest.mark.parametrize("at_most", [None, 1, 2, 4])
def test_never_a_gpu_the_machine_lacks_and_never_two_on_one_gpu(gpus, at_most):
    ids = dataparallel_devices(gpus, at_most=at_most).device_ids
    assert all(0 <= i < gpus for i in ids) and len(set(ids)) == len(ids)
    assert len(ids) == (gpus if at_most is None else min(gpus, at_most))
    assert ids[:1] == ((0,) if gpus else ())  # device_ids[0] is cuda:0, where the model must be


def test_one_gpu_asked_for_two_gets_the_one_it_has():
    """The chapter's old cell asked for [0, 1] on every machine; on one GPU that is the AssertionError above."""
    assert dataparallel_devices(1, at_most=2).device_ids == (0,)
    assert dataparallel_devices(8, at_most=2).device_ids == (0, 1)


@pytest.mark.parametrize("batch", [1, 2, 9, 10, 11, 29, 30, 64, 127, 128, 1437])
@pytest.mark.parametrize("devices", [1, 2, 3, 4, 8])
def test_chunk_sizes_are_torchs(batch, devices):
    """As ``Tensor.chunk`` and torch's own scatter (which still splits a CPU tensor given the device number -1)."""
    assert list(chunk_sizes(batch, devices)) == [len(c) for c in torch.arange(batch).chunk(devices)]
    assert list(chunk_sizes(batch, devices)) == [
        len(c) for c in torch.nn.parallel.comm.scatter(torch.arange(batch), [-1] * devices)
    ]


def test_a_batch_smaller_than_the_gpus_leaves_the_last_gpus_idle():
    assert dataparallel_devices(8).batch_goes(9) == (
        ("cuda:0", 2),
        ("cuda:1", 2),
        ("cuda:2", 2),
        ("cuda:3", 2),
        ("cuda:4", 1),
    )


@pytest.mark.parametrize(
    "call, error, match",
    [
        (lambda: dataparallel_devices(-1), ValueError, r"gpu_count=-1: gpu_count must be a whole number ≥ 0"),
        (lambda: dataparallel_devices("2"), TypeError, r"gpu_count='2' is a str; .*cuda_gpu_count\(\)"),
        (lambda: dataparallel_devices(2, at_most=0), ValueError, r"at_most=0: at_most must be a whole number ≥ 1"),
        (lambda: dataparallel_devices(1).batch_goes(0), ValueError, r"batch=0: batch must be a whole number ≥ 1"),
        (lambda: chunk_sizes(10, 0), ValueError, r"devices=0: devices must be a whole number ≥ 1"),
    ],
)
def test_wrong_arguments_say_what_to_pass(call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_the_table_says_which_rows_a_machine_has_shown():
    table = dataparallel_table()
    seen = {row[0]: row[-1] for row in table.rows}
    assert list(seen) == [0, 1, 2, 8]
    assert seen[0].startswith("yes") and seen[1].startswith("partly: one H100")
    assert seen[2] == seen[8] == "no: decided, tested"
    assert "only on machines with no GPU or one" in str(table)
    assert "64 → each of cuda:0…cuda:7" in str(table) and "64 → cuda:0, 64 → cuda:1" in str(table)
    six = dataparallel_table((0, 1, 2, 8), batch=6, at_most=2)
    assert [row[3] for row in six.rows] == ["6 → cpu", "6 → cuda:0"] + ["3 → cuda:0, 3 → cuda:1"] * 2
    assert "a batch of 6" in str(six)
    one = str(dataparallel_devices(1))
    assert "[0]" in one and "no split" in one and "<table" in dataparallel_devices(1)._repr_html_()


def _where_things_go(plan, batch: int) -> tuple[list[tuple[str, int]], str, str]:
    """Carry the decision out with the real DataParallel: what each replica received, the model's and outputs'
    devices. The pre-hook runs on every replica (replicas share the module's hooks)."""
    model = torch.nn.Sequential(torch.nn.Linear(5, 3))
    dp = torch.nn.DataParallel(model, device_ids=plan.device_ids)
    if plan.splits:
        dp.module.to(plan.model_device)  # with 2+ GPUs the model must be there first; with one DataParallel moves it
    seen = []
    dp.module.register_forward_pre_hook(lambda m, args: seen.append((str(args[0].device), len(args[0]))))
    out = dp(torch.ones(batch, 5))  # the inputs left on the CPU
    return sorted(seen), str(next(dp.module.parameters()).device), str(out.device)


def test_carried_out_on_this_machine_with_no_gpu_dataparallel_is_a_pass_through():
    if cuda_gpu_count():
        pytest.skip("this machine has a GPU: the gpu tests carry the decision out")
    plan = dataparallel_devices(0)
    assert _where_things_go(plan, 6) == ([("cpu", 6)], "cpu", "cpu")


@pytest.mark.gpu
@requires_gpus(1)
def test_carried_out_on_a_gpu_machine_the_batch_model_and_outputs_go_where_the_decision_says():
    plan = dataparallel_devices(cuda_gpu_count(), at_most=2)
    batch = 6
    seen, model_on, out_on = _where_things_go(plan, batch)
    assert seen == sorted(plan.batch_goes(batch))
    assert (model_on, out_on) == (plan.model_device, plan.output_device)


@pytest.mark.gpu
@requires_gpus(1)
def test_on_one_gpu_device_ids_0_is_legal_and_moves_the_model_to_cuda_0():
    seen, model_on, out_on = _where_things_go(dataparallel_devices(1), 5)
    assert (seen, model_on, out_on) == ([("cuda:0", 5)], "cuda:0", "cuda:0")


@pytest.mark.multigpu
@requires_gpus(2)
def test_on_two_gpus_the_batch_is_split_as_the_decision_says():
    plan = dataparallel_devices(2)
    seen, model_on, out_on = _where_things_go(plan, 7)
    assert seen == [("cuda:0", 4), ("cuda:1", 3)] == sorted(plan.batch_goes(7)) and out_on == "cuda:0"
