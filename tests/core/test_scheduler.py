"""core.scheduler: what SLURM and Kubernetes gave a process, read from the variables they really set, and what the
placement helpers decide from it (``reserve_gpus`` takes no GPU the scheduler did not give).

The SLURM environments are those SLURM 22.05 set in ``make test-cluster`` (no confinement there: the job's step saw
``CUDA_VISIBLE_DEVICES=0,1`` and ``SLURM_STEP_GPUS=0,1``; a job without GPUs saw neither), plus the two a cgroup node
gives (``ConstrainDevices=yes``: ``CUDA_VISIBLE_DEVICES`` renumbered from 0, ``SLURM_JOB_GPUS`` the node's indices).
"""

from __future__ import annotations

import pytest

from gpulab import NoFreeGpu, reserve_gpus
from gpulab.core.scheduler import KUBERNETES, SLURM, allocation

JOB = {"SLURM_JOB_ID": "42", "SLURM_JOB_NAME": "digits", "SLURM_NTASKS": "1"}


@pytest.mark.parametrize(
    ("env", "gpus", "confined"),
    [
        ({**JOB, "CUDA_VISIBLE_DEVICES": "0,1", "SLURM_STEP_GPUS": "0,1"}, ("0", "1"), None),  # can't tell: same
        ({**JOB, "CUDA_VISIBLE_DEVICES": "2,3", "SLURM_JOB_GPUS": "2,3"}, ("2", "3"), False),  # node indices as is
        ({**JOB, "CUDA_VISIBLE_DEVICES": "0,1", "SLURM_JOB_GPUS": "2,3"}, ("2", "3"), True),  # renumbered: cgroups
        ({**JOB, "CUDA_VISIBLE_DEVICES": "0", "SLURM_STEP_GPUS": "3", "SLURM_JOB_GPUS": "2,3"}, ("3",), True),
        (dict(JOB), (), None),  # asked for no GPU: SLURM removed CUDA_VISIBLE_DEVICES
    ],
)
def test_a_slurm_jobs_gpus_with_and_without_confinement(env, gpus, confined):
    got = allocation(env)
    assert got.scheduler == SLURM and got.job == "job 42"
    assert got.gpus == gpus and got.confined is confined
    assert ("no GPU" in str(got)) is (gpus == ())


@pytest.mark.parametrize(
    ("value", "gpus"),
    [
        ("GPU-8c1f2a3e-aaaa-bbbb-cccc-000000000001", ("GPU-8c1f2a3e-aaaa-bbbb-cccc-000000000001",)),  # device plugin
        ("GPU-a,GPU-b", ("GPU-a", "GPU-b")),
        ("MIG-5e0c7a8b-1111-2222-3333-444444444444", ("MIG-5e0c7a8b-1111-2222-3333-444444444444",)),
        ("void", ()),  # the CPU profile
        ("none", ()),
        (None, None),  # no limit and no variable: every GPU the container sees
    ],
)
def test_a_kubernetes_pods_gpus(value, gpus):
    env = {"KUBERNETES_SERVICE_HOST": "10.96.0.1", "KUBERNETES_SERVICE_PORT": "443", "HOSTNAME": "jupyter-ada"}
    if value is not None:
        env["NVIDIA_VISIBLE_DEVICES"] = value
    got = allocation(env)
    assert got.scheduler == KUBERNETES and got.job == "pod jupyter-ada" and got.gpus == gpus


def test_outside_any_scheduler_there_is_no_allocation():
    assert allocation({"CUDA_VISIBLE_DEVICES": "0", "HOSTNAME": "laptop"}) is None


def test_the_next_step_names_the_schedulers_own_options():
    slurm = allocation(dict(JOB))
    assert "--gpus=2" in slurm.how_to_ask(2) and "--gres=gpu:2" in slurm.how_to_ask(2)
    pod = allocation({"KUBERNETES_SERVICE_HOST": "10.0.0.1", "NVIDIA_VISIBLE_DEVICES": "void"})
    assert "nvidia.com/gpu" in pod.how_to_ask(1) and "profile" in pod.how_to_ask(1)
    assert "JupyterHub's GPU hooks" in slurm.course_tools()


@pytest.mark.parametrize(
    ("env", "n", "match"),
    [
        (dict(JOB), 1, r"SLURM job 42, which was given no GPU.*salloc --gpus=1"),
        ({**JOB, "CUDA_VISIBLE_DEVICES": "3", "SLURM_JOB_GPUS": "3"}, 2, r"given 1 GPU\(s\) \(3\).*--gres=gpu:2"),
        ({"KUBERNETES_SERVICE_HOST": "10.0.0.1", "NVIDIA_VISIBLE_DEVICES": "void"}, 1, r"Kubernetes pod.*profile"),
    ],
)
def test_reserve_gpus_takes_nothing_the_scheduler_did_not_give(env, n, match, monkeypatch, tmp_path):
    """On a described 8-GPU node with free GPUs: a job without GPUs (or with too few) gets none of them."""
    for name in list(JOB) + ["CUDA_VISIBLE_DEVICES", "SLURM_JOB_GPUS", "NVIDIA_VISIBLE_DEVICES"]:
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("GPULAB_SIMULATE_GPUS", "workshop-8")
    with pytest.raises(NoFreeGpu, match=match):
        reserve_gpus(n, reservations=tmp_path)


def test_inside_a_job_with_gpus_reserve_gpus_chooses_only_among_them(monkeypatch, tmp_path):
    monkeypatch.setenv("GPULAB_SIMULATE_GPUS", "workshop-8")
    for name, value in {**JOB, "CUDA_VISIBLE_DEVICES": "6,7", "SLURM_JOB_GPUS": "6,7"}.items():
        monkeypatch.setenv(name, value)
    try:
        with reserve_gpus(1, reservations=tmp_path) as r:
            assert set(r.physical_indices) <= {6, 7}
    except NoFreeGpu as exc:  # both of the job's GPUs busy on the described node: never another job's GPU
        assert "GPU(s) [6, 7] may be used" in str(exc)
