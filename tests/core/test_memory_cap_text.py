"""``GPULAB_MEMORY_CAP``'s value as a kernel reads it, and the line under an out-of-memory error (pure)."""

from __future__ import annotations

import pytest

from gpulab.core.memory_cap_text import MemoryCap, over_cap_note, parse_memory_cap
from gpulab.core.shares import GpuShare

GiB = 1024**3
H100 = 85017493504  # torch's total_memory on the H100 (evidence/2026-11-26-h100-80gb-hbm3.json)


@pytest.mark.parametrize(
    "text, cap_bytes, fraction",
    [
        ("27690991616", 27690991616, None),
        (" 26GiB ", 26 * GiB, None),
        ("800 MiB", 800 * 1024**2, None),
        ("1.5TiB", int(1.5 * 1024**4), None),
        ("0.33", None, 0.33),
        (".5", None, 0.5),
        ("1.0", None, 1.0),
    ],
)
def test_each_form_of_the_value(text, cap_bytes, fraction):
    cap = parse_memory_cap(text)
    assert (cap.cap_bytes, cap.fraction) == (cap_bytes, fraction)


def test_unset_or_empty_is_no_cap():
    assert parse_memory_cap(None) is None and parse_memory_cap("  ") is None


def test_what_a_share_writes_reads_back_as_its_cap():
    share = GpuShare(4, 2, 3, 26408 * 1024**2)
    assert parse_memory_cap(share.environment()["GPULAB_MEMORY_CAP"]).cap_bytes == share.cap_bytes


def test_a_cap_becomes_the_fraction_torch_takes_and_never_more_than_the_card():
    assert MemoryCap("x", cap_bytes=H100 // 4).fraction_of(H100) == 0.25
    assert MemoryCap("x", cap_bytes=2 * H100).fraction_of(H100) == 1.0  # a MIG slice smaller than the cap
    assert MemoryCap("x", fraction=0.5).bytes_of(H100) == H100 // 2
    assert MemoryCap("x", cap_bytes=H100 // 3).bytes_of(H100) == H100 // 3  # exactly, not through a float
    assert MemoryCap("x", cap_bytes=2 * H100).bytes_of(H100) == H100
    assert str(MemoryCap("26GiB", cap_bytes=26 * GiB)) == "26.0 GiB" and str(MemoryCap("0.33", fraction=0.33)) == (
        "0.33 of the GPU's memory"
    )


@pytest.mark.parametrize(
    "text, match",
    [
        ("26 GB", r"GPULAB_MEMORY_CAP='26 GB' cannot be read: it is a number of bytes .* a fraction"),
        ("a third", r"cannot be read: .*fix it there \(the kernelspec or the Hub's settings\), then restart"),
        ("-1", r"GPULAB_MEMORY_CAP='-1' cannot be read"),
        ("1.5", r"GPULAB_MEMORY_CAP='1.5': a fraction of the GPU's memory is more than 0 and at most 1"),
        ("0.0", r"a fraction of the GPU's memory is more than 0"),
        ("26", r"GPULAB_MEMORY_CAP='26' caps this kernel at 26 B, less than the 64.0 MiB any lesson needs: a unit"),
    ],
)
def test_a_value_it_cannot_read_is_refused_naming_the_variable(text, match):
    with pytest.raises(ValueError, match=match):
        parse_memory_cap(text)


def test_the_note_gives_the_cap_what_is_held_and_what_to_do():
    note = over_cap_note(26 * GiB, 25 * GiB, 25 * GiB + 512 * 1024**2, device="cuda:0")
    assert note == (
        "gpulab: this kernel shares its GPU and may hold at most 26.0 GiB on cuda:0 (GPULAB_MEMORY_CAP); it holds "
        "25.0 GiB in tensors and 512.0 MiB more in PyTorch's cache. Free tensors you no longer need (del x, then "
        "torch.cuda.empty_cache()), use a smaller batch or model, or restart the kernel to start again from nothing. "
        "The other kernels on this GPU are not affected."
    )
    assert "cache" not in over_cap_note(26 * GiB, GiB, GiB).split(". Free")[0]
    unread = over_cap_note(26 * GiB, None, None, why="RuntimeError: CUDA error: unspecified launch failure")
    assert "(GPULAB_MEMORY_CAP); what it holds could not be read (RuntimeError: CUDA error: unspecified launch " in (
        unread
    )
