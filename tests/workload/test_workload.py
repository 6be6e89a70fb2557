"""The shared workload: real digits offline, a seeded model, a loop that learns, and clear errors for wrong input."""

from __future__ import annotations

import pytest
import torch

from gpulab.workload import accuracy, load_digits, mlp, train


def test_digits_are_the_real_scans_split_the_same_way_every_time():
    a, b = load_digits(), load_digits()
    x, y = a.train.tensors
    assert x.shape == (1437, 64) and len(a.test) == 360 and x.dtype == torch.float32
    assert 0.0 == x.min().item() and x.max().item() == 1.0 and set(y.tolist()) == set(range(10))
    assert torch.equal(x, b.train.tensors[0]) and "no download" in str(a)
    assert load_digits(flat=False).image_shape == (1, 8, 8)


def test_the_same_seed_builds_the_same_model_and_another_seed_does_not():
    same = [p.equal(q) for p, q in zip(mlp().parameters(), mlp().parameters())]
    assert all(same) and not mlp(seed=1)[0].weight.equal(mlp()[0].weight)


def test_training_beats_chance_by_far_and_the_monitor_counts_every_batch():
    from gpulab.machine.simulated import SimulatedGpuReader
    from gpulab.monitoring import monitor

    torch.manual_seed(0)
    data, model = load_digits(), mlp(hidden=64)
    before = accuracy(model, data.test)
    loader = data.loader(batch_size=64)
    with monitor(machine=SimulatedGpuReader(None), show=False) as mon:
        train(model, loader, 5, mon)
    after = accuracy(model, data.test)
    assert before < 0.3 and after > 0.85, (before, after)
    s = mon.summary()
    assert s.steps_total == 5 * len(loader) and s.samples_total == 5 * len(data.train)
    assert [label for _, label in s.marks] == [f"epoch {k}" for k in range(1, 6)]


@pytest.mark.parametrize(
    "call, error, match",
    [
        (
            lambda d: d.loader(batch_size=0),
            ValueError,
            r"batch_size=0: batch_size \(images per batch\) must be a whole "
            r"number ≥ 1 \(e.g. data.loader\(batch_size=64\)\)",
        ),
        (lambda d: d.loader(batch_size=2.5), TypeError, "batch_size=2.5 is a float"),
        (
            lambda d: train(mlp(hidden=8), d.loader(), -1),
            ValueError,
            r"epochs=-1: epochs \(how many passes over the data",
        ),
        (lambda d: train(mlp(hidden=8), d.loader(), "3"), TypeError, "epochs='3' is a str"),
    ],
)
def test_wrong_input_is_refused_with_what_to_type(call, error, match):
    with pytest.raises(error, match=match):
        call(load_digits())
