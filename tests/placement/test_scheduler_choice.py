"""choose_gpus, reserve_gpus and the picker inside a SLURM job or a Kubernetes pod choose only among the GPUs the
scheduler gave, decided by one rule (``placement.allowed``), with the variables SLURM and Kubernetes really set.

This machine is played by a described one (``GPULAB_SIMULATE_GPUS``). ``workshop-8`` is a node that NVML sees whole,
as in a job without device confinement: its free GPUs are 1, 3 and 5. A confined job's NVML lists only the job's
GPUs, renumbered from 0: that node is described by a file holding workshop-8's GPUs 3 and 5 alone.
"""

from __future__ import annotations

import copy
import json

import pytest

import gpulab
from gpulab import GpuPicker, NoFreeGpu, SimulatedGpuReader, choose_gpus, reserve_gpus
from gpulab.machine.simulated import PRESETS
from gpulab.placement.allowed import usable_gpus

JOB = {"SLURM_JOB_ID": "42", "SLURM_JOB_NAME": "interactive", "SLURM_NTASKS": "1"}
POD = {"KUBERNETES_SERVICE_HOST": "10.96.0.1", "KUBERNETES_SERVICE_PORT": "443", "HOSTNAME": "jupyter-ada"}
SCHEDULER_VARIABLES = [
    *JOB,
    *POD,
    "SLURM_JOB_GPUS",
    "SLURM_STEP_GPUS",
    "CUDA_VISIBLE_DEVICES",
    "NVIDIA_VISIBLE_DEVICES",
]
W8 = SimulatedGpuReader("workshop-8")
UUID = [W8.info(i).uuid for i in range(8)]


@pytest.fixture
def inside(monkeypatch, tmp_path):
    """``inside(env, machine)``: this process now runs with ``env`` on ``machine`` (a preset, or "confined": the
    job's own two GPUs, 3 and 5 of workshop-8, as NVML lists them under ConstrainDevices=yes)."""

    def enter(env: dict[str, str], machine: str = "workshop-8") -> None:
        for name in SCHEDULER_VARIABLES:
            monkeypatch.delenv(name, raising=False)
        for name, value in env.items():
            monkeypatch.setenv(name, value)
        if machine == "confined":
            node = copy.deepcopy(PRESETS["workshop-8"])
            node["gpus"] = [node["gpus"][3], node["gpus"][5]]
            (tmp_path / "confined.json").write_text(json.dumps(node))
            machine = str(tmp_path / "confined.json")
        monkeypatch.setenv("GPULAB_SIMULATE_GPUS", machine)

    return enter


def _hidden(picker: GpuPicker) -> list[int]:
    return [k for k, box in picker._boxes.items() if box.disabled]


def test_without_confinement_a_jobs_node_indices_are_nvmls_and_only_they_are_chosen(inside, tmp_path):
    inside({**JOB, "CUDA_VISIBLE_DEVICES": "3,5", "SLURM_JOB_GPUS": "3,5"})
    assert choose_gpus(1, gpulab.devices()).physical_indices == (3,)  # GPU 1 is free too, but another job's
    assert set(choose_gpus(2, gpulab.devices()).physical_indices) == {3, 5}
    with reserve_gpus(2, reservations=tmp_path) as r:
        assert set(r.physical_indices) == {3, 5}
    picker = GpuPicker(selected="free:2", reservations=str(tmp_path))
    assert set(picker.selected) == {3, 5} and _hidden(picker) == [0, 1, 2, 4, 6, 7]
    assert picker.state(1) == "hidden" and "not given to this SLURM job 42" in str(picker)
    assert picker.status.value == ""


def test_with_confinement_nvml_lists_only_the_jobs_gpus_and_all_of_them_are_the_jobs(inside, tmp_path):
    """ConstrainDevices=yes: CUDA_VISIBLE_DEVICES renumbered 0,1, SLURM_JOB_GPUS the node's 3,5, NVML two GPUs."""
    inside({**JOB, "CUDA_VISIBLE_DEVICES": "0,1", "SLURM_JOB_GPUS": "3,5"}, "confined")
    assert gpulab.devices().gpu_count == 2
    assert set(choose_gpus(2, gpulab.devices()).physical_indices) == {0, 1}
    with reserve_gpus(2, reservations=tmp_path) as r:
        assert r.choice.chosen[0].uuid in (UUID[3], UUID[5])
    picker = GpuPicker(selected="free:2", reservations=str(tmp_path))
    assert set(picker.selected) == {0, 1} and _hidden(picker) == []


def test_a_renumbered_cuda_visible_devices_is_not_read_as_nvmls_indices_where_nvml_sees_the_whole_node(inside):
    """Confined variables, but an NVML that lists the node's 8 GPUs: the node's indices decide, not "0,1" (GPU 0 of
    the node is another job's, and busy)."""
    inside({**JOB, "CUDA_VISIBLE_DEVICES": "0,1", "SLURM_JOB_GPUS": "3,5"})
    assert set(choose_gpus(2, gpulab.devices()).physical_indices) == {3, 5}
    inside({**JOB, "CUDA_VISIBLE_DEVICES": "0", "SLURM_STEP_GPUS": "5", "SLURM_JOB_GPUS": "3,5"})  # a step's GPU
    assert choose_gpus(1, gpulab.devices()).physical_indices == (5,)


def test_a_job_without_a_gpu_chooses_and_reserves_none_and_says_how_to_ask_slurm(inside, tmp_path):
    """SLURM removed CUDA_VISIBLE_DEVICES: NVML lists every GPU of the unconfined node, free ones included."""
    inside(dict(JOB))
    ask = r"SLURM job 42, which was given no GPU.*other jobs may be using them.*salloc --gpus=1.*--gres=gpu:1"
    with pytest.raises(NoFreeGpu, match=ask):
        choose_gpus(1, gpulab.devices())
    with pytest.raises(NoFreeGpu, match=ask):
        reserve_gpus(1, reservations=tmp_path)
    picker = GpuPicker(selected="free:1", reservations=str(tmp_path))  # no traceback: a line in the widget
    assert picker.selected == () and _hidden(picker) == list(range(8))
    assert "No GPU to choose: this runs in SLURM job 42, which was given no GPU" in picker.status.value
    assert "To get one, ask SLURM for GPUs" in picker.status.value and "salloc --gpus=1" in picker.status.value
    assert "color:#b00" in picker.status.value and picker.free_button.disabled and picker.apply_button.disabled
    assert "salloc --gpus=1" in str(picker)
    picker.refresh()
    assert "which was given no GPU" in picker.status.value


def test_a_job_with_fewer_gpus_than_asked_takes_what_it_has_in_the_picker_and_says_how_to_ask(inside, tmp_path):
    inside({**JOB, "CUDA_VISIBLE_DEVICES": "3", "SLURM_JOB_GPUS": "3"})
    with pytest.raises(NoFreeGpu, match=r"given 1 GPU\(s\) \(3\).*--gpus=2.*--gres=gpu:2"):
        choose_gpus(2, gpulab.devices())
    picker = GpuPicker(selected="free:2", reservations=str(tmp_path))
    assert picker.selected == (3,)
    assert "only 1 is free" in picker.status.value and "--gpus=2" in picker.status.value


def test_where_the_jobs_gpus_are_busy_the_error_says_they_are_all_it_may_use(inside):
    inside({**JOB, "CUDA_VISIBLE_DEVICES": "0,2", "SLURM_JOB_GPUS": "0,2"})  # both busy; 1, 3 and 5 are free
    with pytest.raises(
        NoFreeGpu, match=r"(?s)GPU 0: .* used.*\(only GPU\(s\) \[0, 2\] may be used by this process: SLURM gave"
    ):
        choose_gpus(1, gpulab.devices())


def test_a_jobs_gpu_that_nvml_does_not_list_is_named(inside):
    inside({**JOB, "CUDA_VISIBLE_DEVICES": "9", "SLURM_JOB_GPUS": "9"})
    with pytest.raises(NoFreeGpu, match=r"SLURM's GPU\(s\) 9 match no GPU NVML lists here"):
        choose_gpus(1, gpulab.devices())


def test_a_kubernetes_pod_chooses_its_own_gpu_by_uuid_and_a_cpu_pod_none(inside, tmp_path):
    inside({**POD, "NVIDIA_VISIBLE_DEVICES": UUID[5]})
    assert choose_gpus(1, gpulab.devices()).physical_indices == (5,)
    assert GpuPicker(selected="free:1", reservations=str(tmp_path)).selected == (5,)
    inside({**POD, "NVIDIA_VISIBLE_DEVICES": "void"})  # the course's CPU profile
    with pytest.raises(NoFreeGpu, match=r"Kubernetes pod jupyter-ada, which was given no GPU.*server profile"):
        choose_gpus(1, gpulab.devices())
    picker = GpuPicker(reservations=str(tmp_path))
    assert "choose a server profile with 1 GPU" in picker.status.value and picker.selected == ()
    inside(dict(POD))  # no variable: every GPU the container sees is the pod's
    assert choose_gpus(1, gpulab.devices()).physical_indices == (1,)


@pytest.mark.parametrize("here", ["workshop-8", None])
def test_a_described_machine_is_not_the_jobs_node_and_is_chosen_from_whole(here, inside, monkeypatch, tmp_path):
    """Chapter 02's calls on workshop-8 in a job without a GPU, with this machine described as the same preset (the
    readings alike: gpulab.devices() says which is this machine's), or not described at all."""
    inside(dict(JOB))
    if here is None:
        monkeypatch.delenv("GPULAB_SIMULATE_GPUS")
    else:
        with pytest.raises(NoFreeGpu, match="which was given no GPU"):
            choose_gpus(1, gpulab.devices())
    assert choose_gpus(2, gpulab.devices("workshop-8")).physical_indices == (1, 3)
    assert choose_gpus(2, gpulab.devices("workshop-8").gpus).physical_indices == (1, 3)
    with reserve_gpus(1, "workshop-8", reservations=tmp_path) as r:
        assert r.physical_indices == (1,)
    picker = GpuPicker("workshop-8", selected="free:1", reservations=str(tmp_path))
    assert picker.selected == (1,) and picker.status.value == ""


def test_outside_a_scheduler_only_cuda_visible_devices_limits_the_choice():
    gpus = gpulab.devices("workshop-8").gpus
    assert usable_gpus(gpus, {}, {}).physical_indices is None
    limited = usable_gpus(gpus, {"CUDA_VISIBLE_DEVICES": "4,5"}, {"CUDA_VISIBLE_DEVICES": "4,5"})
    assert limited.physical_indices == {4, 5} and limited.shortfall(8) == ""
    assert "CUDA_VISIBLE_DEVICES hides the others" in limited.note()
