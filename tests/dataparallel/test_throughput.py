"""Samples per second against batch size: real (tiny) training steps timed here; the setups that need GPUs are
refused on the CPU with the reason, and run in the multigpu test."""

from __future__ import annotations

import pytest
import torch

from gpulab.dataparallel.throughput import training_throughput
from gpulab.workload import mlp
from tests.seams import requires_gpus


def _tiny() -> torch.nn.Module:
    return mlp(16, 8)


def test_one_device_and_the_by_hand_steps_are_timed_side_by_side():
    t = training_throughput(
        _tiny,
        [4, 8],
        parallel_devices=["cpu", "cpu"],
        setups=["one device", "by hand"],
        image_shape=(16,),
        repeats=2,
        label="tiny MLP",
    )
    assert [(r.setup, r.batch_per_device, len(r.devices)) for r in t.rows] == [
        ("one device", 4, 1),
        ("by hand", 4, 2),
        ("one device", 8, 1),
        ("by hand", 8, 2),
    ]
    for r in t.rows:
        assert r.step_s > 0 and r.samples_per_s == pytest.approx(r.batch_per_device * len(r.devices) / r.step_s)
    assert t.speedup("by hand", 8) == pytest.approx(t.rows[3].samples_per_s / t.rows[2].samples_per_s)
    text = str(t)
    assert "training speed, tiny MLP" in text and "batch 8 per device: by hand ÷ one device =" in text
    with pytest.raises(KeyError, match=r"no 'DataParallel' and 'one device' rows at batch 8"):
        t.speedup("DataParallel", 8)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"setups": ["DDP"]}, r"setups are some of \('one device', 'DataParallel', 'by hand'\); got \['DDP'\]"),
        ({"setups": []}, r"setups are some of"),
        (
            {"batch_sizes": [0]},
            r"batch_sizes holds 0: images per device and step are ≥ 1, e.g. batch_sizes=\[32, 128, ",
        ),
        ({"batch_sizes": []}, r"batch_sizes=list \[\] is empty: batch_sizes takes at least one"),
        (
            {"setups": ["DataParallel"], "parallel_devices": ["cpu", "cpu"]},
            r"DataParallel runs on GPUs only: .* \(device_ids becomes \[\]\)",
        ),
    ],
)
def test_setups_that_cannot_be_measured_are_refused(kwargs, match):
    args = {"batch_sizes": [4], "image_shape": (16,), "repeats": 1} | kwargs
    with pytest.raises(ValueError, match=match):
        training_throughput(_tiny, **args)


@pytest.mark.multigpu
@requires_gpus(2)
def test_dataparallel_on_two_gpus_is_timed_next_to_one():
    t = training_throughput(
        _tiny,
        [32],
        device="cuda:0",
        parallel_devices=["cuda:0", "cuda:1"],
        setups=["one device", "DataParallel", "by hand"],
        image_shape=(16,),
        repeats=2,
    )
    assert {r.setup for r in t.rows} == {"one device", "DataParallel", "by hand"} and t.speedup("DataParallel", 32) > 0
