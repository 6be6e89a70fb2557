"""gpulab.measure.transfer and gpulab.measure.crossover: the sweeps run their CPU path for real here; the CUDA paths are
gpu-marked."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from gpulab.measure.crossover import CrossoverSweep, SizePoint, crossover_sweep  # noqa: E402
from gpulab.measure.timing import CUDA_TIMER, BenchmarkResult  # noqa: E402
from gpulab.measure.transfer import bandwidth_sweep, nonblocking_hazard  # noqa: E402
from gpulab.testing import requires_gpus  # noqa: E402


def test_cpu_bandwidth_sweep_measures_host_copies() -> None:
    sweep = bandwidth_sweep([1 << 10, 1 << 20], device="cpu", pinned=(False,), warmup=1, repeats=3)
    assert sweep.device == "cpu" and len(sweep.measurements) == 2 * 2  # two sizes × two directions
    assert [m.nbytes for m in sweep.measurements] == [1 << 10, 1 << 10, 1 << 20, 1 << 20]
    assert all(m.bandwidth_gbps > 0 and m.result.repeats == 3 for m in sweep.measurements)
    assert sweep.peak_gbps("h2d", False) == max(m.bandwidth_gbps for m in sweep.measurements if m.direction == "h2d")
    text = str(sweep)
    assert "host-to-host copies (device is the CPU)" in text and "1.0 MiB" in text and "GB/s" in text
    assert [row[0] for row in sweep.table().rows] == ["host→host", "host→host, back"] * 2  # no h2d/d2h on a CPU
    assert "h2d" not in text and "d2h" not in text and "<table" in sweep._repr_html_()
    ax = sweep.plot()
    assert ax.get_legend_handles_labels()[1] == ["host→host pageable", "host→host, back pageable"]
    assert len(ax.lines) == 2 and ax.get_xlabel() == "bytes copied"
    plt.close(ax.figure)
    with pytest.raises(KeyError, match="no d2h pinned copies"):
        sweep.peak_gbps("d2h", True)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"pinned": (True,)}, "pass pinned=\\(False,\\)"),
        ({"directions": ("up",)}, "use 'h2d'"),
        ({"sizes_bytes": []}, "positive byte counts"),
    ],
)
def test_bandwidth_sweep_refuses_bad_arguments(kwargs: dict, match: str) -> None:
    args = {"sizes_bytes": [1024], "device": "cpu", "pinned": (False,)} | kwargs
    with pytest.raises(ValueError, match=match):
        bandwidth_sweep(**args)


def test_cpu_crossover_sweep_with_and_without_copies() -> None:
    for include in (False, True):
        # 256 against 4: 260 000 times the multiply-adds, so that a burst of load during the small size's few
        # blocks cannot turn the order round (with 64 against 4 the two were only a few times apart)
        sweep = crossover_sweep(
            [4, 256], devices=("cpu",), op="matmul", include_transfer=include, warmup=1, repeats=3, min_block_s=1e-4
        )
        assert sweep.devices == ("cpu",) and sweep.sizes == (4, 256)
        assert sweep.median_s("cpu", 256) > sweep.median_s("cpu", 4) > 0
        assert sweep.crossover_size("cuda") is None
        assert "Only cpu measured" in str(sweep)
    assert "copies in and out included" in str(sweep)
    ax = sweep.plot()
    assert ax.get_yscale() == "log" and ax.get_legend_handles_labels()[1] == ["cpu"]
    plt.close(ax.figure)
    with pytest.raises(KeyError, match="was not measured"):
        sweep.median_s("cuda:0", 4)


def test_crossover_verdict_reads_the_last_run_of_wins() -> None:
    def point(device: str, size: int, t: float) -> SizePoint:
        return SizePoint(device, size, BenchmarkResult("op", device, (t,), 1, 0, "test"))

    cpu = [1e-6, 1e-5, 1e-4, 1e-3]
    gpu = [1e-5, 5e-6, 2e-4, 2e-5]  # wins at 64, loses at 256, wins at 1024: the crossover is 1024
    sizes = [16, 64, 256, 1024]
    sweep = CrossoverSweep(
        "matmul",
        "n",
        False,
        tuple([point("cpu", s, t) for s, t in zip(sizes, cpu)] + [point("cuda:0", s, t) for s, t in zip(sizes, gpu)]),
    )
    assert sweep.crossover_size("cuda:0") == 1024
    assert "cuda:0 is faster than cpu from size 1,024 on" in sweep.verdict()
    assert "cpu ÷ cuda:0" in str(sweep) and "50.00×" in str(sweep)
    never = CrossoverSweep("add", "n", True, (point("cpu", 8, 1e-6), point("cuda:0", 8, 1e-5)))
    assert never.crossover_size("cuda:0") is None and "never faster" in never.verdict()


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"op": "conv"}, ValueError, "not one of matmul, add"),
        ({"sizes": []}, ValueError, "positive sizes"),
        ({"devices": ()}, ValueError, "at least one device"),
        ({"devices": ("meta",)}, ValueError, "Nothing runs on the 'meta' device"),
    ],
)
def test_crossover_sweep_refuses_bad_arguments(kwargs: dict, error: type, match: str) -> None:
    args = {"sizes": [8], "devices": ("cpu",)} | kwargs
    with pytest.raises(error, match=match):
        crossover_sweep(**args)


def test_hazard_demo_refuses_the_cpu() -> None:
    with pytest.raises(ValueError, match="needs a CUDA device"):
        nonblocking_hazard("cpu")


@pytest.mark.gpu
@requires_gpus(1)
def test_cuda_bandwidth_sweep_pageable_and_pinned() -> None:
    sweep = bandwidth_sweep([1 << 20, 1 << 24], device="cuda", repeats=3)
    assert {m.series for m in sweep.measurements} == {"h2d pageable", "h2d pinned", "d2h pageable", "d2h pinned"}
    assert all(m.result.timer == CUDA_TIMER for m in sweep.measurements)
    # between a slow PCIe 3.0 x4 link and NVLink-C2C (900 GB/s): a unit slip (bits, MiB, ms) lands outside
    assert 1 <= sweep.peak_gbps("h2d", True) <= 1000, str(sweep)


@pytest.mark.gpu
@requires_gpus(1)
def test_cuda_crossover_sweep_has_both_curves() -> None:
    sweep = crossover_sweep([16, 1024], devices=("cpu", "cuda"), repeats=3)
    assert sweep.devices == ("cpu", "cuda") and "cpu ÷ cuda" in str(sweep)


@pytest.mark.gpu
@requires_gpus(1)
def test_nonblocking_copy_is_right_after_synchronize() -> None:
    r = nonblocking_hazard("cuda", numel=1 << 20)
    # the copy waits behind ~8 large matmuls (milliseconds) while the host reads at once: the early read is stale
    assert r.wrong_after_sync == 0 and r.wrong_before_sync > 0, str(r)
    assert "after torch.cuda.synchronize()" in str(r)


def _point(device: str, size: int, t: float) -> SizePoint:
    return SizePoint(device, size, BenchmarkResult("op", device, (t,), 1, 0, "test"))


def test_crossover_reads_sizes_in_order_whatever_order_they_were_given() -> None:
    sizes = [1024, 16, 256, 64]  # the GPU wins from 256 on
    cpu = {16: 1e-6, 64: 1e-5, 256: 1e-4, 1024: 1e-3}
    gpu = {16: 1e-5, 64: 2e-5, 256: 3e-5, 1024: 4e-5}
    sweep = CrossoverSweep(
        "matmul",
        "n",
        False,
        tuple([_point("cpu", s, cpu[s]) for s in sizes] + [_point("cuda:0", s, gpu[s]) for s in sizes]),
    )
    assert sweep.crossover_size("cuda:0") == 256
    assert sweep.sizes == (16, 64, 256, 1024)
    measured = crossover_sweep([64, 4], devices=("cpu",), warmup=0, repeats=1, min_block_s=1e-4)
    assert measured.sizes == (4, 64) and [p.size for p in measured.points] == [4, 64]


def test_crossover_verdict_of_two_gpus_without_the_cpu_says_what_is_missing() -> None:
    sweep = CrossoverSweep("matmul", "n", False, (_point("cuda:0", 16, 1e-5), _point("cuda:1", 16, 2e-5)))
    assert "from one device" not in sweep.verdict()
    assert "no cpu baseline" in sweep.verdict() and "cuda:0, cuda:1" in sweep.verdict()
