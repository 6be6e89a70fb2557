"""Where 2 GPUs exist, the cost model is checked against a real NCCL run of the same sweep: bus bandwidth and speed-ups
measured, the model's predictions beside them. Elsewhere the comparison says what it needs, and its table is read."""

from __future__ import annotations

import pytest

from gpulab.scaling.cost import Link
from gpulab.scaling.on_gpus import GpuComparison, compare_on_gpus, setup_for

POINTS = [(256, 64), (1024, 64), (1024, 512)]


@pytest.mark.multigpu
def test_a_real_nccl_run_lies_where_the_model_says():
    comparison = compare_on_gpus(POINTS)
    text = str(comparison)
    print(text)  # pytest -s shows the table: prediction and measurement side by side
    # NCCL's bus bandwidth between 2 GPUs: from about 3 GB/s (PCIe through the host) to a few hundred (NVLink)
    assert 1 < comparison.bus_bandwidth_gbps < 2000, text
    assert f"NCCL bus bandwidth {comparison.bus_bandwidth_gbps:.1f} GB/s" in text
    assert len(comparison.measured) == len(POINTS) and all(0 < m < 2.5 for m in comparison.measured), text
    # The model from measured inputs: a real run lies between no overlap and full overlap of the all-reduce (15 %
    # for what a step's timing moves from run to run)
    for (w, b), m, (low, high) in zip(POINTS, comparison.measured, comparison.model_bounds):
        assert low <= high and low * 0.85 <= m <= high * 1.15, (
            f"width {w}, batch {b}: measured {m:.2f}× outside the model's {low:.2f}–{high:.2f}×\n{text}"
        )
    if comparison.setup is not None:
        assert "prediction from published figures" in text
        # peak figures promise more than a real run gets: within 50 % at the heavy end, where the model's terms dominate
        assert abs(comparison.errors()[-1]) < 0.5, text
    else:
        assert "gpulab has no published figures for" in text and "—" in text


def test_without_2_gpus_the_comparison_says_what_it_needs():
    from gpulab.machine.cuda import cuda_gpu_count

    if cuda_gpu_count() >= 2:
        pytest.skip("2 CUDA GPUs are here: the comparison runs (test above)")
    with pytest.raises(RuntimeError, match="needs 2 CUDA GPUs, one per rank"):
        compare_on_gpus([(64, 8)])


def test_the_table_puts_measurement_and_both_predictions_side_by_side():
    link = Link(12e9, 5e-6, "NCCL on this machine's GPUs")
    setup = setup_for("Tesla T4")
    assert setup is not None and setup.n_gpus == 2 and "T4" in setup.name
    known = GpuComparison(
        "Tesla T4", setup, link, 0.02e-3, ((64, 8),), ((0.31, 0.34),), (1.82,), ((1.70, 1.95),), (1.84,)
    )
    text = str(known)
    assert (
        "2×Tesla T4, one GPU per rank: NCCL bus bandwidth 12.0 GB/s, latency 5 µs per message, ranks meeting: "
        "20.0 µs per step (measured)" in text
    )
    assert "1.82×" in text and "1.70–1.95×" in text and "1.84× (+1 %)" in text and "prediction from published" in text
    unknown = str(GpuComparison("NVIDIA L4", None, link, 0.0, ((64, 8),), ((0.3, 0.33),), (1.5,), ((1.4, 1.9),), ()))
    assert "gpulab has no published figures for NVIDIA L4" in unknown and "1.50×" in unknown and "—" in unknown
    assert setup_for("NVIDIA L4") is None
