"""gpulab.measure.transfer: the sweep runs its CPU path for real here; the CUDA path is gpu-marked."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from gpulab.measure.timing import CUDA_TIMER  # noqa: E402
from gpulab.measure.transfer import bandwidth_sweep  # noqa: E402
from tests.seams import requires_gpus  # noqa: E402


def test_cpu_bandwidth_sweep_measures_host_copies() -> None:
    sweep = bandwidth_sweep([1 << 10, 1 << 20], device="cpu", pinned=(False,), warmup=1, repeats=3)
    assert sweep.device == "cpu" and len(sweep.measurements) == 2 * 2  # two sizes × two directions
    assert [m.nbytes for m in sweep.measurements] == [1 << 10, 1 << 10, 1 << 20, 1 << 20]
    assert all(m.bandwidth_gbps > 0 and m.result.repeats == 3 for m in sweep.measurements)
    text = str(sweep)
    assert "host-to-host copies (device is the CPU)" in text and "1.0 MiB" in text and "GB/s" in text
    assert [row[0] for row in sweep.table().rows] == ["host→host", "host→host, back"] * 2  # no h2d/d2h on a CPU
    assert "h2d" not in text and "d2h" not in text and "<table" in sweep._repr_html_()
    ax = sweep.plot()
    assert ax.get_legend_handles_labels()[1] == ["host→host pageable", "host→host, back pageable"]
    assert len(ax.lines) == 2 and ax.get_xlabel() == "bytes copied"
    plt.close(ax.figure)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"pinned": (True,)}, "pass pinned=\\(False,\\)"),
        ({"sizes_bytes": []}, "positive byte counts"),
    ],
)
def test_bandwidth_sweep_refuses_bad_arguments(kwargs: dict, match: str) -> None:
    args = {"sizes_bytes": [1024], "device": "cpu", "pinned": (False,)} | kwargs
    with pytest.raises(ValueError, match=match):
        bandwidth_sweep(**args)


@pytest.mark.gpu
@requires_gpus(1)
def test_cuda_bandwidth_sweep_pageable_and_pinned() -> None:
    sweep = bandwidth_sweep([1 << 20, 1 << 24], device="cuda", repeats=3)
    assert {m.series for m in sweep.measurements} == {"h2d pageable", "h2d pinned", "d2h pageable", "d2h pinned"}
    assert all(m.result.timer == CUDA_TIMER for m in sweep.measurements)
    # between a slow PCIe 3.0 x4 link and NVLink-C2C (900 GB/s): a unit slip (bits, MiB, ms) lands outside
    peak_gbps = max(m.bandwidth_gbps for m in sweep.measurements if m.series == "h2d pinned")
    assert 1 <= peak_gbps <= 1000, str(sweep)
