"""The 1-versus-2-ranks measurement runs for real (tiny sizes: what is checked is the bookkeeping, not the speed)."""

from __future__ import annotations

import pytest

from gpulab.machine.host import host_info
from gpulab.ranks.speed import RankSpeedup, SpeedRow, rank_speedup, train_rate


def test_every_setup_is_measured_and_the_ratio_is_ddp_2_over_1(no_process_left):
    result = rank_speedup((64,), epochs=1, images=256)
    cores = host_info().usable_cores
    assert [(r.setup, r.world_size, r.threads_per_rank, r.batch_per_rank) for r in result.rows] == [
        ("1 process", 1, cores, 64),
        ("DDP", 1, 1, 64),
        ("DDP", 2, 1, 64),
    ]
    assert all(r.samples_per_s > 0 for r in result.rows)
    assert result.ratio(64) == result.rows[2].samples_per_s / result.rows[1].samples_per_s
    text = str(result)
    assert f"digits MLP, cpu, {cores} usable cores" in text and "batch 64 per rank: 2 DDP ranks ÷ 1 = " in text
    assert "<table" in result._repr_html_()


def test_one_process_counts_every_sample_of_the_timed_epochs():
    samples, seconds = train_rate(100, 2, ddp=False)
    assert samples == 2 * 1437 and seconds > 0
    assert train_rate(100, 1, ddp=False, images=300)[0] == 300


def test_the_table_leaves_out_a_ratio_it_cannot_form():
    only_one = RankSpeedup((SpeedRow("DDP", 1, 1, 32, 100.0),), 2, "cpu")
    assert "÷" not in str(only_one)


@pytest.mark.parametrize(
    "kwargs, error, words",
    [
        ({"device": "tpu"}, ValueError, "device is 'cpu' or 'cuda'"),
        ({"batch_sizes": (0,)}, ValueError, r"batch_sizes holds 0: images per rank and step are ≥ 1"),
        ({"batch_sizes": ()}, ValueError, r"batch_sizes=tuple \(\) is empty"),
        ({"epochs": 0}, ValueError, r"epochs=0: epochs \(timed passes over the data, after one untimed\) must be"),
        ({"epochs": 1.0}, TypeError, "epochs=1.0 is a float"),
        (
            {"images": 100},
            ValueError,
            r"images=100: images \(digits to train on: images must leave each of 2 ranks at "
            r"least one full batch of 128\) must be a whole number ≥ 256",
        ),
    ],
)
def test_wrong_settings_are_refused(kwargs, error, words):
    with pytest.raises(error, match=words):
        rank_speedup(**kwargs)


def test_ranks_whose_model_stays_on_the_cpu_use_gloo_even_where_a_gpu_is_seen(monkeypatch, no_process_left):
    """On one H100 ``backend="auto"`` gave the 1-rank DDP row NCCL while its model stayed on the CPU: "No backend
    type associated with device type cpu" (``evidence/``, 2026-11-26). The GPU count is our seam (NVML there); the
    ranks run for real here, so NCCL chosen would fail here too."""
    import gpulab.machine.cuda
    from gpulab.ranks.launcher import last_launch

    monkeypatch.setattr(gpulab.machine.cuda, "cuda_gpu_count", lambda: 1)
    result = rank_speedup((32,), epochs=1, images=64)
    assert [(r.setup, r.world_size) for r in result.rows] == [("1 process", 1), ("DDP", 1), ("DDP", 2)]
    assert last_launch().backend == "gloo"


@pytest.mark.parametrize("gpus", [0, 1])
def test_ranks_on_gpus_are_refused_with_the_decisions_reason_below_two_gpus(monkeypatch, gpus):
    import gpulab.machine.cuda

    monkeypatch.setattr(gpulab.machine.cuda, "cuda_gpu_count", lambda: gpus)
    with pytest.raises(
        ValueError,
        match=r"device='cuda' gives each of 2 DDP ranks a GPU of its own, which this "
        r"machine cannot: gloo on the CPU for 2 ranks: .* Use device='cpu'",
    ):
        rank_speedup((32,), epochs=1, images=64, device="cuda")
