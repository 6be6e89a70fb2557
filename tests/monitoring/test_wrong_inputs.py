"""Wrong options to monitor() stop the cell before the work runs, with what to type instead; no thread is left
behind; junk never escapes as anything but one of our documented refusals; described GPUs say SIMULATED."""

from __future__ import annotations

import threading

import pytest
from hypothesis import given, settings
from matplotlib.text import Text

import gpulab
from gpulab.monitoring.live_monitor import Monitor
from gpulab.monitoring.sampler import SAMPLER_THREAD_NAME
from tests.junk import JUNK, assert_ours
from tests.seams import FakeClock

WRONG = [
    (
        {"title": 123},
        TypeError,
        r"monitor\(\)'s first argument is the figure's title, text such as "
        r"gpulab.monitor\(\"training\"\); got a int 123. To watch particular GPUs pass gpus=",
    ),
    ({"interval_s": "fast"}, TypeError, r"interval_s='fast' is a str; interval_s takes a positive number of seconds"),
    ({"interval_s": 0}, ValueError, r"interval_s=0: interval_s must be a positive number of seconds"),
    ({"interval_s": 1e-4}, ValueError, r"reading more often than every 0.01 s only costs the training loop CPU"),
    ({"machine": "workshop-8", "gpus": 3}, TypeError, r"gpus=3: gpus takes a list of physical GPU numbers.*gpus=\[3\]"),
    ({"machine": "workshop-8", "gpus": [9]}, ValueError, r"cannot watch GPU\(s\) \[9\]: NVML sees 8 GPU\(s\)"),
    ({"machine": 5}, TypeError, r"machine=5 is a int, not a machine to read"),
    ({"live": "yes"}, ValueError, r"live= takes True, False or 'auto'"),
    ({"show": "no"}, TypeError, r"show='no': show takes True or False"),
    ({"clock": 5}, TypeError, r"clock=5 is a int, not something to call"),
]


@pytest.mark.parametrize("options, kind, message", WRONG, ids=[m[:50] for _, _, m in WRONG])
def test_a_wrong_option_stops_the_cell_before_the_work_runs(options, kind, message):
    ran = []
    with pytest.raises(kind, match=message):
        with gpulab.monitor(**options):
            ran.append("the work")  # never reached: the refusal comes when monitor() is called
    assert ran == [] and not [t for t in threading.enumerate() if t.name == SAMPLER_THREAD_NAME]


def test_a_preset_name_is_taken_as_the_reader_and_labelled_simulated():
    clock = FakeClock()
    with gpulab.monitor("demo", machine="kaggle-2xT4", show=False, live=False, clock=clock, sleep=clock.sleep) as mon:
        mon.step(8)
    summary = mon.summary()
    assert "[SIMULATED GPUs]" in str(summary) and "[SIMULATED GPUs]" in summary._repr_html_()
    texts = " ".join(t.get_text() for t in mon.figure().findobj(Text))  # wherever the figure puts its title
    assert "SIMULATED" in texts


@settings(max_examples=80, deadline=None)
@given(JUNK, JUNK, JUNK)
def test_junk_options_are_refused_with_our_message(a, b, c):
    for call in (
        lambda: Monitor(a),
        lambda: Monitor("t", machine=a, gpus=b, interval_s=c),
        lambda: Monitor("t", live=b, show=c),
        lambda: Monitor("t", clock=a, sleep=b),
    ):
        try:
            call()
        except Exception as exc:
            assert_ours(exc)


@pytest.mark.parametrize(
    "iterable, samples, kind, message",
    [
        (None, None, TypeError, r"mon.wrap\(\) takes what the loop iterates over .* got None, which has no items"),
        (3, None, TypeError, r"mon.wrap\(\) takes what the loop iterates over .* got 3,"),
        ("abc", None, TypeError, r"got 'abc', which has no items to step through"),
        (
            [1, 2],
            "a",
            TypeError,
            r"samples='a' is a str; samples \(examples in each batch, or a function of the batch "
            r"that counts them\) takes a whole number ≥ 0 \(e.g. mon.wrap\(loader, samples=64\); "
            r"leave it out to count each batch's first dimension\)",
        ),
        ([1, 2], 2.5, TypeError, r"samples=2.5 is a float; samples \(examples in each batch"),
        ([1, 2], -1, ValueError, r"samples=-1: samples \(examples in each batch, .*\) must be a whole number ≥ 0"),
    ],
)
def test_wrong_arguments_to_wrap_are_refused_before_the_loop_runs(iterable, samples, kind, message):
    clock = FakeClock()
    with gpulab.monitor("t", machine="workshop-8", show=False, live=False, clock=clock, sleep=clock.sleep) as mon:
        with pytest.raises(kind, match=message):
            mon.wrap(iterable, samples=samples)
        assert sum(1 for _ in mon.wrap([[1, 2, 3]] * 2, samples=lambda batch: len(batch))) == 2  # still usable
    assert mon.summary().samples_total == 6


def test_a_monitor_of_a_described_machine_says_simulated_in_its_repr():
    clock = FakeClock()
    described = Monitor("x", machine="workshop-8", show=False, live=False, clock=clock, sleep=clock.sleep)
    assert repr(described) == "<Monitor 'x' new, SIMULATED GPUs, 0 readings>"
    real = Monitor("x", show=False, live=False, clock=clock, sleep=clock.sleep)  # this machine: no label
    assert repr(real) == "<Monitor 'x' new, 0 readings>"
