"""Where 2 GPUs exist, the prediction from published figures is compared with a real NCCL run of the same sweep."""
from __future__ import annotations

import pytest

from gpulab.scaling.on_gpus import compare_on_gpus


@pytest.mark.multigpu
def test_the_published_prediction_is_near_a_real_nccl_run():
    comparison = compare_on_gpus([(256, 64), (1024, 64), (1024, 512)])
    assert all(m > 0 for m in comparison.measured)
    if comparison.setup is None:
        pytest.skip(f"no published figures for {comparison.gpu_name} (measured: {comparison.measured})")
    # peak figures promise more than a real run gets: within 50 % at the heavy end, where the model's terms dominate
    assert abs(comparison.errors()[-1]) < 0.5, str(comparison)
    assert "prediction from published figures" in str(comparison)


def test_without_2_gpus_the_comparison_says_what_it_needs():
    from gpulab.machine.cuda import cuda_gpu_count

    if cuda_gpu_count() >= 2:
        pytest.skip("2 CUDA GPUs are here: the comparison runs (test above)")
    with pytest.raises(RuntimeError, match="needs 2 CUDA GPUs, one per rank"):
        compare_on_gpus([(64, 8)])


def test_a_card_without_published_figures_shows_the_measurement_alone():
    from gpulab.scaling.on_gpus import GpuComparison

    table = str(GpuComparison("NVIDIA L4", None, ((64, 8),), (), (1.5,)))
    assert "measured only; gpulab has no published figures" in table and "1.50×" in table and "—" in table
