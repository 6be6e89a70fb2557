"""The backend and device per rank, decided from facts: 0, 1, 2 and 8 GPUs, NCCL or not, 1, 2 and 8 ranks.

The real failures behind the rules were seen on one H100 (``evidence/``, run of 2026-11-26): NCCL chosen for a rank
whose model stayed on the CPU ("No backend type associated with device type cpu") and rank 1 told ``cuda:1`` on one
GPU.
"""

from __future__ import annotations

import pytest

from gpulab.ranks.rank_devices import decide_rank_devices

# (GPUs on the machine, world_size, NCCL built in) -> backend, devices
TABLE = [
    (0, 1, True, "gloo", ["cpu"]),
    (0, 2, True, "gloo", ["cpu"] * 2),
    (0, 8, False, "gloo", ["cpu"] * 8),
    (1, 1, True, "nccl", ["cuda:0"]),  # one rank, one GPU of its own: NCCL worked so on the H100
    (1, 1, False, "gloo", ["cpu"]),
    (1, 2, True, "gloo", ["cpu"] * 2),  # never cuda:1 on one GPU
    (1, 8, True, "gloo", ["cpu"] * 8),
    (2, 1, True, "nccl", ["cuda:0"]),
    (2, 2, True, "nccl", ["cuda:0", "cuda:1"]),
    (2, 2, False, "gloo", ["cpu"] * 2),
    (2, 8, True, "gloo", ["cpu"] * 8),
    (8, 2, True, "nccl", ["cuda:0", "cuda:1"]),
    (8, 8, True, "nccl", [f"cuda:{k}" for k in range(8)]),
    (8, 8, False, "gloo", ["cpu"] * 8),
]


@pytest.mark.parametrize("gpus, world_size, nccl, backend, devices", TABLE)
def test_auto_gives_nccl_only_when_every_rank_has_a_gpu_of_its_own(gpus, world_size, nccl, backend, devices):
    plan = decide_rank_devices(world_size, gpus, nccl_available=nccl)
    assert (plan.backend, list(plan.devices)) == (backend, devices)
    assert len(plan.devices) == world_size
    assert all(d == "cpu" or int(d.split(":")[1]) < gpus for d in plan.devices), "never cuda:k past the count"
    assert plan.reason.endswith(".") and plan.reason.startswith("NCCL" if backend == "nccl" else "gloo on the CPU")
    assert str(plan) == plan.reason


@pytest.mark.parametrize("gpus, world_size, nccl, backend, devices", TABLE)
def test_gloo_asked_is_always_the_cpu(gpus, world_size, nccl, backend, devices):
    plan = decide_rank_devices(world_size, gpus, nccl_available=nccl, requested="gloo")
    assert (plan.backend, plan.devices) == ("gloo", ("cpu",) * world_size)


@pytest.mark.parametrize("gpus, world_size, nccl, backend, devices", TABLE)
def test_nccl_asked_runs_where_auto_would_pick_it_and_is_refused_elsewhere(gpus, world_size, nccl, backend, devices):
    if backend == "nccl":
        assert decide_rank_devices(world_size, gpus, nccl_available=nccl, requested="nccl").devices == tuple(devices)
    else:
        with pytest.raises(ValueError, match=r"backend='nccl' cannot work here: .* Use backend='gloo'"):
            decide_rank_devices(world_size, gpus, nccl_available=nccl, requested="nccl")


@pytest.mark.parametrize(
    "gpus, world_size, nccl, why",
    [
        (0, 2, True, "no rank has a CUDA GPU"),
        (1, 2, True, "2 ranks but only 1 GPU(s), so rank 1 would have none"),
        (2, 8, True, "8 ranks but only 2 GPU(s), so ranks 2, 3, 4, 5, … would have none"),
        (8, 8, False, "this PyTorch has no NCCL"),
    ],
)
def test_the_reason_says_which_fact_ruled_nccl_out(gpus, world_size, nccl, why):
    assert why in decide_rank_devices(world_size, gpus, nccl_available=nccl).reason
    with pytest.raises(ValueError, match=why.replace("(", r"\(").replace(")", r"\)")):
        decide_rank_devices(world_size, gpus, nccl_available=nccl, requested="nccl")


def test_other_backends_pass_through_on_the_cpu_and_unknown_ones_are_refused():
    assert decide_rank_devices(2, 0, nccl_available=False, requested="mpi").devices == ("cpu", "cpu")
    with pytest.raises(ValueError, match="backend='carrier-pigeon' is not available in this PyTorch build"):
        decide_rank_devices(1, 0, nccl_available=True, requested="carrier-pigeon")
    with pytest.raises(ValueError, match="at least one rank"):
        decide_rank_devices(0, 1, nccl_available=True)


def test_a_backend_name_in_capitals_is_the_same_backend_and_a_wrong_kind_is_refused():
    # torch.distributed takes 'NCCL' and 'Gloo' as well; the decision must not call them unavailable
    assert decide_rank_devices(2, 2, nccl_available=True, requested="NCCL").backend == "nccl"
    assert decide_rank_devices(1, 0, nccl_available=True, requested="Gloo").backend == "gloo"
    with pytest.raises(TypeError, match="backend is a name such as 'auto'"):
        decide_rank_devices(1, 0, nccl_available=True, requested=None)
