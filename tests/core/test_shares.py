"""Each share's memory cap and how the room reads it (``gpulab.core.shares``, pure), on the cards a workshop meets."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpulab.core.shares import CONTEXT_BYTES, GpuShare, max_shares, share_cap_bytes, shares_of
from gpulab.machine.simulated import PRESETS

MiB = 1024**2
H100 = json.loads((Path(__file__).resolve().parents[2] / "evidence/2026-11-26-h100-80gb-hbm3.json").read_text())
H100_MIB = H100["machine"]["gpus"][0]["memory_bytes"] // MiB  # 81079: the H100 80GB HBM3's memory as torch read it


def test_the_context_left_for_is_the_one_measured_on_the_h100():
    measured = H100["figures"]["cuda_context_bytes"]  # nvidia-smi's memory.used before and after (648 MB)
    assert CONTEXT_BYTES == round(measured["value"] / MiB) * MiB == 618 * MiB


def test_an_h100_in_three_shares_reads_as_the_picker_says_it():
    shares = shares_of(4, H100_MIB * MiB, 3)
    assert [s.share for s in shares] == [1, 2, 3] and {s.cap_bytes for s in shares} == {26408 * MiB}
    assert str(shares[1]) == "share 2 of 3 of GPU 4 (25.8 GiB cap)"
    assert shares[1].environment() == {"GPULAB_MEMORY_CAP": str(26408 * MiB)}


@pytest.mark.parametrize(
    "total_mib, n, cap_mib",
    [
        (40960, 3, 13035),  # workshop-8's A100 40GB: (40960 - 3 x 618) / 3 = 13035.3
        (40960, 1, 40342),  # a whole GPU: all but its own context
        (15360, 2, 7062),  # a T4
        (H100_MIB, 8, 9516),
    ],
)
def test_each_cap_leaves_one_context_per_kernel_and_the_caps_fit_the_card(total_mib, n, cap_mib):
    cap = share_cap_bytes(total_mib * MiB, n)
    assert cap == cap_mib * MiB and cap % MiB == 0
    assert n * (cap + CONTEXT_BYTES) <= total_mib * MiB < n * (cap + MiB + CONTEXT_BYTES)


def test_the_workshop_cards_take_three_shares_each():
    for gpu in PRESETS["workshop-8"]["gpus"]:
        assert str(shares_of(0, gpu["memory_total_bytes"], 3)[2]) == "share 3 of 3 of GPU 0 (12.7 GiB cap)"


def test_a_whole_gpu_says_so():
    assert str(GpuShare(1, 1, 1, 40342 * MiB)) == "GPU 1 (whole, 39.4 GiB cap)"


def test_a_card_too_small_for_its_shares_is_refused_with_the_most_it_takes():
    assert max_shares(15360 * MiB) == 17 and max_shares(100 * MiB) == 0
    share_cap_bytes(15360 * MiB, 17)
    with pytest.raises(
        ValueError, match=r"A GPU of 15.0 GiB cannot be split into 18 shares: .* \(at most 17 on this card\)"
    ):
        share_cap_bytes(15360 * MiB, 18)


@pytest.mark.parametrize("shares", [0, -1, 2.5, "3", True, None])
def test_shares_is_a_whole_number_of_kernels(shares):
    with pytest.raises(ValueError, match=r"shares=.*: the number of kernels that share one GPU is a whole number ≥ 1"):
        share_cap_bytes(40960 * MiB, shares)


def test_memory_is_a_whole_number_of_bytes():
    with pytest.raises(ValueError, match=r"memory_total_bytes='40 GiB': a number of bytes is a whole number"):
        share_cap_bytes("40 GiB", 3)
