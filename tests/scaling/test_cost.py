"""The cost model is plain arithmetic: each formula checked by hand, and every wrong input refused with its reason."""
from __future__ import annotations

import math

import pytest

from gpulab.scaling.cost import (Link, allreduce_s, crossover_batch, mlp_parameters, predict_step, ring_bytes, speedup,
                                 train_flops)

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
    two = predict_step(1e9, 4e6, 2, flops_per_s=1e10, link=LINK, contention=0.5)
    assert two.compute_s == pytest.approx(0.2) and two.allreduce_s == pytest.approx(0.0042)
    assert two.step_s == pytest.approx(0.2042)
    half_hidden = predict_step(1e9, 4e6, 2, flops_per_s=1e10, link=LINK, hidden=0.5, fixed_s=0.01)
    assert half_hidden.step_s == pytest.approx(0.1 + 0.01 + 0.0021)
    assert speedup(one, two) == pytest.approx(2 * 0.1 / 0.2042)
    met = predict_step(1e9, 4e6, 2, flops_per_s=1e10, link=LINK, contention=0.5, sync_s=0.003)
    assert met.allreduce_s == pytest.approx(0.0072) and met.step_s == pytest.approx(0.2072)
    assert predict_step(1e9, 4e6, 1, flops_per_s=1e10, sync_s=0.003).step_s == pytest.approx(0.1)  # 1 rank meets no one


def test_the_speedup_approaches_n_when_compute_dominates_and_falls_below_1_when_it_does_not():
    big = [predict_step(1e12, 4e6, n, flops_per_s=1e10, link=LINK) for n in (1, 2)]
    small = [predict_step(1e6, 4e6, n, flops_per_s=1e10, link=LINK) for n in (1, 2)]
    assert 1.99 < speedup(*big) <= 2
    assert speedup(*small) < 1


def test_the_crossover_batch_gives_a_speedup_of_exactly_the_target():
    c, a, s = 0.05e-3, 3e-3, 0.93
    b = crossover_batch(c, a, 2, s)
    assert 2 * b * c / (b * c / s + a) == pytest.approx(1.0)
    assert 2 * 2 * b * c / (2 * b * c / s + a) > 1
    assert crossover_batch(c, a, 2, 0.4) == math.inf  # a share below 1/2: 2 ranks never pay
    assert crossover_batch(c, 0, 2, 1) == 0


@pytest.mark.parametrize("call, words", [
    (lambda: Link(0, 1e-6), "bandwidth_bytes_per_s is the link's bytes per second, a finite number > 0; got 0"),
    (lambda: Link(1e9, -1), "latency_s is .* ≥ 0; got -1"),
    (lambda: Link(float("nan"), 0), "finite number"),
    (lambda: ring_bytes(1000, 0), "ranks is how many processes share the work, a whole number ≥ 1; got 0"),
    (lambda: ring_bytes(1000, 2.0), "whole number ≥ 1; got 2.0"),
    (lambda: ring_bytes(-5, 2), "gradient_bytes is the size of the gradients"),
    (lambda: allreduce_s("4e6", 2, LINK), "got '4e6'. Pass it in the units"),
    (lambda: mlp_parameters(0, 3), "width is a whole number ≥ 1"),
    (lambda: mlp_parameters(8, True), "depth is a whole number ≥ 1"),
    (lambda: train_flops(100, 0), "batch is the samples per rank and step"),
    (lambda: predict_step(1e9, 4e6, 2, flops_per_s=1e10), "2 ranks all-reduce their gradients: pass link="),
    (lambda: predict_step(1e9, 4e6, 2, flops_per_s=0, link=LINK), "flops_per_s is one rank's FLOP rate"),
    (lambda: predict_step(1e9, 4e6, 2, flops_per_s=1e10, link=LINK, contention=1.5), "contention is a share in"),
    (lambda: predict_step(1e9, 4e6, 2, flops_per_s=1e10, link=LINK, hidden=2), "hidden a fraction in"),
    (lambda: crossover_batch(0, 1e-3), "seconds_per_sample is one rank's compute per sample"),
    (lambda: predict_step(1e9, 4e6, 2, flops_per_s=1e10, link=LINK, sync_s=-1e-3), "sync_s is a cost per step"),
])
def test_wrong_inputs_are_refused_with_what_to_pass(call, words):
    with pytest.raises(ValueError, match=words):
        call()
