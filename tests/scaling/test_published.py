"""Every GPU figure carries its source, every line is labelled a prediction, and the predictions behave as the
physics says (more work per step: closer to N×; a slower link: a lower speed-up)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from gpulab.scaling.cost import Link
from gpulab.scaling.on_gpus import setup_for
from gpulab.scaling.published import SETUPS, predicted_speedups


def test_the_three_setups_are_there_with_their_sources():
    names = [s.name for s in SETUPS]
    assert [s.n_gpus for s in SETUPS] == [2, 2, 8]
    assert "T4" in names[0] and "PCIe Gen3 x16" in names[0] and "A100" in names[1] and "NVLink 3" in names[1]
    assert "8×H100" in names[2] and "NVSwitch" in names[2]
    for setup in SETUPS:
        label = setup.label()
        assert label.startswith(f"{setup.name}: prediction from published figures")
        assert "datasheet" in setup.flops_source and "datasheet" in setup.link.source
        assert "nccl" in label.lower() and "launch" in label
    assert "PCI-SIG" in SETUPS[0].link.source


def test_predictions_rise_with_the_batch_and_fall_with_a_slower_link():
    points = [(1024, b) for b in (8, 64, 512, 4096)]
    for setup in SETUPS:
        speedups = predicted_speedups(setup, points, depth=3)
        assert speedups == sorted(speedups) and speedups[-1] <= setup.n_gpus
        slow = replace(setup, link=Link(setup.link.bandwidth_bytes_per_s / 100, setup.link.latency_s))
        assert all(s < f for s, f in zip(predicted_speedups(slow, points, 3), speedups))
    t4, a100, _ = (predicted_speedups(s, [(1024, 8)], 3)[0] for s in SETUPS)
    assert t4 < 1 < a100  # a 12.6 MB all-reduce of a small batch: PCIe loses, NVLink pays


@pytest.mark.parametrize(
    "name, card", [("Tesla T4", "T4"), ("NVIDIA A100-SXM4-80GB", "A100"), ("NVIDIA H100 80GB HBM3", "H100")]
)
def test_a_card_is_matched_to_its_published_setup_at_two_gpus(name, card):
    setup = setup_for(name)
    assert setup is not None and setup.n_gpus == 2 and name in setup.name and card in setup.name


def test_an_unknown_card_has_no_published_setup():
    assert setup_for("NVIDIA GeForce RTX 4090") is None
