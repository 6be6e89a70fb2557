"""The launch plan: what ``launch`` will do, read without starting a process, for 0, 1, 2 and 8 GPUs; and each rank
running on the device the plan gave it (``own_device``)."""

from __future__ import annotations

import dataclasses
import threading

import pytest
import torch

import gpulab.ranks.launcher
from gpulab.ranks.fork_server import choose_start_method
from gpulab.ranks.launch_plan import LaunchPlan, plan_launch
from gpulab.ranks.launcher import launch
from gpulab.ranks.own_device import on_own_device, rank_device


def _pretend_gpus(monkeypatch, count: int, nccl: bool | None = None) -> None:
    """Our own seams: the GPU count the plan reads (NVML on a GPU machine) and, where given, whether NCCL is built in.
    Only plans that keep the ranks on the CPU can run here."""
    import gpulab.machine.cuda
    import gpulab.ranks.plan

    monkeypatch.setattr(gpulab.machine.cuda, "cuda_gpu_count", lambda: count)
    if nccl is not None:
        monkeypatch.setattr(gpulab.ranks.plan, "nccl_available", lambda: nccl)


def _work(device: str = "cpu") -> str:
    return device


@pytest.mark.parametrize(
    "gpus, world_size, backend, devices",
    [
        (0, 1, "gloo", ("cpu",)),
        (0, 2, "gloo", ("cpu", "cpu")),
        (1, 1, "nccl", ("cuda:0",)),
        (1, 2, "gloo", ("cpu", "cpu")),
        (2, 2, "nccl", ("cuda:0", "cuda:1")),
        (2, 3, "gloo", ("cpu",) * 3),
        (8, 2, "nccl", ("cuda:0", "cuda:1")),
        (8, 8, "nccl", tuple(f"cuda:{k}" for k in range(8))),
    ],
)
@pytest.mark.parametrize("nccl", [True, False])
def test_the_plan_gives_each_rank_a_device_from_the_gpu_count_without_starting_a_process(
    monkeypatch, gpus, world_size, backend, devices, nccl
):
    _pretend_gpus(monkeypatch, gpus, nccl)
    plan = plan_launch(_work, world_size, threads_per_rank=1)
    assert isinstance(plan, LaunchPlan)
    assert (plan.backend, plan.devices) == ((backend, devices) if nccl else ("gloo", ("cpu",) * world_size))
    assert f"{world_size} rank" in plan.why and ("no NCCL" in plan.why) == (not nccl)
    assert plan_launch(_work, world_size, backend="gloo").devices == ("cpu",) * world_size  # gloo: the CPU, GPUs or not
    with pytest.raises(dataclasses.FrozenInstanceError):
        plan.world_size = 3  # type: ignore[misc]


@pytest.mark.parametrize("gpus", [0, 1, 2, 8])
def test_the_plan_holds_each_ranks_torchrun_environment_threads_start_method_and_ports(monkeypatch, gpus):
    _pretend_gpus(monkeypatch, gpus)
    monkeypatch.setenv("GPULAB_MASTER_PORTS", "29510-29512")
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    plan = plan_launch(_work, 2, threads_per_rank=3, timeout_s=9)
    assert (plan.world_size, plan.threads_per_rank, plan.start_method, plan.timeout_s) == (
        2,
        3,
        choose_start_method(),
        9,
    )
    assert plan.ports == (29510, 29511, 29512)
    env = plan.environment(1, 29511)
    assert {
        k: env[k]
        for k in (
            "RANK",
            "LOCAL_RANK",
            "WORLD_SIZE",
            "LOCAL_WORLD_SIZE",
            "MASTER_ADDR",
            "MASTER_PORT",
            "OMP_NUM_THREADS",
        )
    } == {
        "RANK": "1",
        "LOCAL_RANK": "1",
        "WORLD_SIZE": "2",
        "LOCAL_WORLD_SIZE": "2",
        "MASTER_ADDR": "127.0.0.1",
        "MASTER_PORT": "29511",
        "OMP_NUM_THREADS": "3",
    }
    assert "MASTER_PORT" not in plan.environments[0]  # known once the store listens
    assert plan.environments[0]["TORCHELASTIC_RUN_ID"] == plan.environments[1]["TORCHELASTIC_RUN_ID"]
    monkeypatch.delenv("GPULAB_MASTER_PORTS")
    assert plan_launch(_work, 2).ports == (0,)  # the system picks


def test_without_a_process_group_the_plan_starts_no_backend_yet_still_places_each_rank(monkeypatch):
    _pretend_gpus(monkeypatch, 1, nccl=True)
    plan = plan_launch(_work, 1, init_process_group=False)
    assert (plan.backend, plan.why, plan.devices) == (None, "", ("cuda:0",))
    assert plan_launch(_work, 1, init_process_group=False, backend="gloo").devices == ("cpu",)


@pytest.mark.parametrize(
    "call, error, words",
    [
        (lambda: plan_launch(torch.get_num_threads(), 2), TypeError, "Pass the function itself, without calling it"),
        (
            lambda: plan_launch(_work, 0),
            ValueError,
            r"world_size=0: world_size \(how many processes \(ranks\) to start\) must be",
        ),
        (lambda: plan_launch(_work, True), TypeError, "world_size=True is a bool"),
        (lambda: plan_launch(_work, 2, args=5), TypeError, "note the comma for one argument"),
        (lambda: plan_launch(_work, 2, kwargs=[1]), TypeError, "kwargs is a dict"),
        (lambda: plan_launch(_work, 2, timeout_s=-1), ValueError, "timeout_s must be a positive number of seconds"),
        (lambda: plan_launch(_work, 2, threads_per_rank=1.5), TypeError, "threads_per_rank=1.5 is a float"),
        (lambda: plan_launch(_work, 2, backend="carrier-pigeon"), ValueError, "is not available in this PyTorch"),
        (lambda: plan_launch(_work, 2, args=(threading.Lock(),)), TypeError, "cannot be copied into the ranks"),
    ],
)
def test_a_wrong_argument_is_refused_by_the_plan(call, error, words):
    with pytest.raises(error, match=words):
        call()


def test_a_wrong_argument_never_reaches_the_runner(monkeypatch):
    def run_plan(plan):
        raise AssertionError("the runner was asked to start processes for a plan that should have been refused")

    monkeypatch.setattr(gpulab.ranks.launcher, "run_plan", run_plan)
    with pytest.raises(
        ValueError,
        match=r"threads_per_rank=0: threads_per_rank \(or None for cores ÷ ranks\) must "
        r"be a whole number ≥ 1",
    ):
        launch(_work, 2, threads_per_rank=0)
    monkeypatch.setenv("GPULAB_MASTER_PORTS", "29510")
    with pytest.raises(ValueError, match="expected a range of ports written first-last"):
        launch(_work, 2)


@pytest.mark.parametrize(
    "gpus, nccl, why",
    [
        (1, True, r"2 ranks but only 1 GPU\(s\), so rank 1 would have none"),
        (0, True, "no rank has a CUDA GPU"),
        (2, False, "this PyTorch has no NCCL"),
    ],
)
def test_nccl_where_a_rank_would_have_no_gpu_is_refused_by_the_plan(monkeypatch, gpus, nccl, why):
    _pretend_gpus(monkeypatch, gpus, nccl)  # 1 GPU: the H100's case, 2 ranks asked for NCCL on one GPU
    with pytest.raises(ValueError, match=r"backend='nccl' cannot work here: " + why):
        plan_launch(_work, 2, backend="nccl")


def test_rank_device_outside_a_launched_rank_says_where_it_is_known():
    with pytest.raises(RuntimeError, match=r"known only inside a rank that gpulab.launch started"):
        rank_device()
    with pytest.raises(TypeError, match=r"on_own_device wraps a function that takes device="):
        on_own_device("cuda:0")


def _where(device: str = "?") -> tuple[str, bool]:
    return device, torch.cuda.is_initialized()


@pytest.mark.parametrize("gpus", [0, 1])
def test_on_own_device_puts_every_rank_where_the_plan_did_and_a_cpu_rank_never_touches_cuda(
    monkeypatch, gpus, no_process_left
):
    """On one GPU, 2 ranks get gloo and the CPU: rank 1 must not pick ``cuda:1`` ("invalid device ordinal" on the
    H100, evidence/2026-11-26-h100-80gb-hbm3.json), nor rank 0 start CUDA beside a CPU group."""
    _pretend_gpus(monkeypatch, gpus, nccl=True)  # as on a CUDA build: NCCL is there, a GPU per rank is not
    assert launch(on_own_device(_where), 2, all_ranks=True) == [("cpu", False), ("cpu", False)]


def _fails() -> None:
    raise ValueError("this rank fails")


def test_a_failed_rank_is_raised_from_launch_itself_as_before_the_split(no_process_left):
    """The learner's traceback shows their cell, then ``launch``: not the runner's frames behind it (the chapters'
    recorded tracebacks show the same ``launch`` frame as before plan and runner were split)."""
    from gpulab.ranks.failures import RankFailed

    with pytest.raises(RankFailed, match="rank . of 2 raised ValueError: this rank fails") as caught:
        launch(_fails, 2)
    tb = caught.value.__traceback__
    while tb.tb_next is not None:
        tb = tb.tb_next
    assert tb.tb_frame.f_code.co_name == "launch"
