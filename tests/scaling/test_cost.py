"""The cost model is plain arithmetic: each formula checked by hand, and every wrong input refused with its reason."""

from __future__ import annotations

import math

import pytest

from gpulab.scaling.cost import (
    Link,
    allreduce_s,
    crossover_batch,
    mlp_parameters,
    predict_step,
    ring_bytes,
    speedup,
    train_flops,
)

LINK = Link(1e9, 100e-6)


def test_a_ring_sends_2_n_minus_1_over_n_of_the_gradients():
    assert ring_bytes(1000, 1) == 0
    assert ring_bytes(1000, 2) == 1000
    assert ring_bytes(1000, 4) == 1500
    assert ring_bytes(1000, 8) == 1750


def test_an_all_reduce_is_latency_per_message_plus_bytes_over_bandwidth():
    assert allreduce_s(4e6, 1, LINK) == 0
    assert allreduce_s(4e6, 2, LINK) == pytest.approx(2 * 100e-6 + 4e6 / 1e9)
    assert allreduce_s(4e6, 8, LINK) == pytest.approx(14 * 100e-6 + 1.75 * 4e6 / 1e9)


def test_flops_of_a_step_are_six_per_weight_and_sample():
    assert mlp_parameters(10, 3) == 3 * 110
    assert train_flops(330, 4) == 6 * 330 * 4


def test_a_step_is_compute_plus_the_all_reduce_not_hidden():
    one = predict_step(1e9, 4e6, 1, flops_per_s=1e10)
    assert (one.compute_s, one.exposed_s, one.step_s) == (pytest.approx(0.1), 0, pytest.approx(0.1))
    two = predict_step(1e9, 4e6, 2, flops_per_s=1e10, link=LINK, ceiling=1)  # 2 ranks no faster than 1: half each
    assert two.compute_s == pytest.approx(0.2) and two.allreduce_s == pytest.approx(0.0042)
    assert two.step_s == pytest.approx(0.2042)
    half_hidden = predict_step(1e9, 4e6, 2, flops_per_s=1e10, link=LINK, hidden=0.5, fixed_s=0.01)
    assert half_hidden.step_s == pytest.approx(0.1 + 0.01 + 0.0021)
    assert speedup(one, two) == pytest.approx(2 * 0.1 / 0.2042)
    met = predict_step(1e9, 4e6, 2, flops_per_s=1e10, link=LINK, ceiling=1, sync_s=0.003)
    assert met.allreduce_s == pytest.approx(0.0072) and met.step_s == pytest.approx(0.2072)
    assert predict_step(1e9, 4e6, 1, flops_per_s=1e10, sync_s=0.003).step_s == pytest.approx(0.1)  # 1 rank meets no one


def test_the_speedup_approaches_n_when_compute_dominates_and_falls_below_1_when_it_does_not():
    big = [predict_step(1e12, 4e6, n, flops_per_s=1e10, link=LINK) for n in (1, 2)]
    small = [predict_step(1e6, 4e6, n, flops_per_s=1e10, link=LINK) for n in (1, 2)]
    assert 1.99 < speedup(*big) <= 2
    assert speedup(*small) < 1


def test_the_crossover_batch_gives_a_speedup_of_exactly_one():
    c, a, ceiling = 0.05e-3, 3e-3, 1.86  # each of 2 ranks computes at 1.86 / 2 = 93 % of its rate alone
    b = crossover_batch(c, a, 2, ceiling)
    assert 2 * b * c / (b * c * 2 / ceiling + a) == pytest.approx(1.0)
    assert 2 * 2 * b * c / (2 * b * c * 2 / ceiling + a) > 1
    assert crossover_batch(c, a, 2, 0.8) == math.inf  # a ceiling below 1: 2 ranks never pay
    assert crossover_batch(c, a, 2, 1.0) == math.inf  # nor at 1: only the all-reduce is left to pay for
    assert crossover_batch(c, 0, 2, 2) == crossover_batch(c, 0, 2) == 0  # without a ceiling: each rank owns a device


def test_the_ceiling_slows_each_rank_to_its_part_of_it():
    alone = predict_step(1e9, 0, 1, flops_per_s=1e10)
    four = predict_step(1e9, 0, 4, flops_per_s=1e10, link=LINK, ceiling=3)  # 4 ranks at most 3× one: 75 % each
    assert four.compute_s == pytest.approx(alone.compute_s / 0.75)
    assert predict_step(1e9, 0, 4, flops_per_s=1e10, link=LINK).compute_s == pytest.approx(alone.compute_s)


V, T = ValueError, TypeError  # a value out of range; a value of the wrong kind (gpulab.core.arguments)


@pytest.mark.parametrize(
    "call, error, words",
    [
        (
            lambda: Link(0, 1e-6),
            V,
            r"bandwidth_bytes_per_s=0: bandwidth_bytes_per_s \(the link's bytes per second\) must "
            "be a finite number > 0",
        ),
        (lambda: Link(1e9, -1), V, r"latency_s=-1: latency_s \(.*\) must be a finite number ≥ 0"),
        (lambda: Link(float("nan"), 0), V, "finite number"),
        (
            lambda: ring_bytes(1000, 0),
            V,
            r"world_size=0: world_size \(how many processes \(ranks\) share the work\) must "
            r"be a whole number ≥ 1 \(e.g. world_size=2\)",
        ),
        (lambda: ring_bytes(1000, 2.0), T, "world_size=2.0 is a float; world_size .* takes a whole number ≥ 1"),
        (lambda: ring_bytes(-5, 2), V, r"gradient_bytes \(the size of the gradients\)"),
        (
            lambda: allreduce_s("4e6", 2, LINK),
            T,
            "gradient_bytes='4e6' is a str; gradient_bytes .* takes a finite number",
        ),
        (
            lambda: mlp_parameters(0, 3),
            V,
            r"width=0: width \(the model's features\) must be a whole number ≥ 1 "
            r"\(e.g. mlp_parameters\(256, 3\)\)",
        ),
        (lambda: mlp_parameters(8, True), T, "depth=True is a bool; depth .* takes a whole number ≥ 1"),
        (lambda: train_flops(100, 0), V, r"batch \(the samples per rank and step\)"),
        (lambda: predict_step(1e9, 4e6, 2, flops_per_s=1e10), V, "2 ranks all-reduce their gradients: pass link="),
        (lambda: predict_step(1e9, 4e6, 2, flops_per_s=0, link=LINK), V, r"flops_per_s \(one rank's FLOP rate\)"),
        (
            lambda: predict_step(1e9, 4e6, 2, flops_per_s=1e10, link=LINK, ceiling=2.5),
            V,
            r"ceiling=2.5 is more than 2 ranks can reach: 2 ranks compute at most 2 times as fast as one \(a measured "
            r"ceiling above 2 means the 1-process run was slowed by other programs\). Pass ceiling=min\(2, measured\).",
        ),
        (
            lambda: predict_step(1e9, 4e6, 2, flops_per_s=1e10, link=LINK, ceiling=0),
            V,
            r"ceiling=0: ceiling \(how much faster the ranks compute together than one, at most\) must be a finite "
            r"number > 0",
        ),
        (lambda: crossover_batch(1e-3, 1e-3, 2, "1.9×"), T, r"ceiling='1.9×' is a str; ceiling \(how much faster"),
        (lambda: crossover_batch(1e-3, 1e-3, 2, 3), V, "ceiling=3 is more than 2 ranks can reach"),
        (
            lambda: predict_step(1e9, 4e6, 2, flops_per_s=1e10, link=LINK, hidden=2),
            V,
            r"hidden is the fraction of the all-reduce that the backward pass hides, in \[0, 1\]; got hidden=2\.",
        ),
        (lambda: crossover_batch(0, 1e-3), V, r"seconds_per_sample \(one rank's compute per sample\)"),
        (lambda: predict_step(1e9, 4e6, 2, flops_per_s=1e10, link=LINK, sync_s=-1e-3), V, r"sync_s \(a cost per step"),
    ],
)
def test_wrong_inputs_are_refused_with_what_to_pass(call, error, words):
    with pytest.raises(error, match=words):
        call()


def test_numpy_numbers_are_numbers_to_the_model():
    np = pytest.importorskip("numpy")
    assert ring_bytes(np.float32(1000), np.int64(2)) == ring_bytes(1000, 2) == 1000.0
    assert mlp_parameters(np.int32(8), np.int64(2)) == mlp_parameters(8, 2)
    assert train_flops(np.int64(100), np.int16(4)) == train_flops(100, 4)
