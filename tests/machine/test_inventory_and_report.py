"""Inventory and environment report: content through the fake reader, and no CUDA context, checked for real."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

import gpulab
from gpulab.machine.host import host_info
from gpulab.machine.report import environment_report
from gpulab.machine.simulated import SimulatedGpuReader
from tests import process_group


def _python(code: str, **env: str) -> subprocess.CompletedProcess:
    return process_group.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                             env={**os.environ, **env})


def test_inventory_lists_fake_gpus_with_mig_and_refused_fields():
    inv = gpulab.devices(SimulatedGpuReader("two-gpus-mig"))
    assert inv.gpu_count == 2 and inv.nvml_error is None
    text = str(inv)
    assert "NVIDIA A100 80GB PCIe" in text and "0/mig1" in text
    assert "N/A (MIG mode: no utilisation per GPU)" in text
    assert "4242 python" in text
    assert "<table" in inv._repr_html_() and "RTX 3090" in inv._repr_html_()
    here = host_info()  # the host part is this machine's even when the GPUs are described
    assert (inv.host.usable_cores, inv.host.memory_total_bytes) == (here.usable_cores, here.memory_total_bytes)


def test_inventory_without_driver_says_why():
    inv = gpulab.devices(SimulatedGpuReader(None, error="no NVIDIA driver library (libnvidia-ml.so) was found"))
    assert inv.gpu_count == 0
    assert str(inv).startswith("SIMULATED machine (described GPUs, not this computer's): No NVIDIA GPU found: no "
                               "NVIDIA driver library")


def test_report_on_a_machine_without_gpus_says_so_plainly():
    r = environment_report(SimulatedGpuReader(None, error="no NVIDIA driver library (libnvidia-ml.so) was found: x"))
    text = str(r)
    assert "No GPU found (no NVIDIA driver library (libnvidia-ml.so) was found)" in text
    assert "CPU fallback mode" in text
    assert "✘ at least one CUDA GPU usable by PyTorch" in text
    assert "✔ gloo backend" in text
    assert "no GPU visible" in text
    html = r._repr_html_()
    assert "CPU fallback mode" in html and "<table" in html


def test_report_maps_visible_devices_on_a_described_machine(monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "5,1")
    r = environment_report(SimulatedGpuReader("workshop-8"))
    rows = r.visible.rows()
    assert [row[:2] for row in rows] == [["cuda:0", "5"], ["cuda:1", "1"]]
    assert "CUDA_VISIBLE_DEVICES='5,1'" in str(r)


def test_cli_env_runs_and_bad_simulation_is_explained():
    ok = process_group.run([sys.executable, "-m", "gpulab", "env"], capture_output=True, text=True, timeout=120,
                           env={**os.environ, "GPULAB_SIMULATE_GPUS": "kaggle-2xT4"})
    assert ok.returncode == 0, ok.stderr
    assert "[SIMULATED GPUs" in ok.stdout and "Tesla T4" in ok.stdout
    bad = process_group.run([sys.executable, "-m", "gpulab", "devices"], capture_output=True, text=True, timeout=120,
                            env={**os.environ, "GPULAB_SIMULATE_GPUS": "eight-h100s"})
    assert bad.returncode == 2
    assert "unknown simulated-GPU description 'eight-h100s'" in bad.stderr and "workshop-8" in bad.stderr


def test_cli_without_command_prints_help():
    out = process_group.run([sys.executable, "-m", "gpulab"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 2 and "env" in out.stdout


def test_simulated_description_from_a_json_file(tmp_path):
    path = tmp_path / "lab.json"
    path.write_text(json.dumps({"gpus": [gpulab.machine.simulated.simulated_gpu(0, "Tesla V100-SXM2-16GB", 16384)]}))
    inv = gpulab.devices(SimulatedGpuReader(str(path)))
    assert inv.gpus[0].name == "Tesla V100-SXM2-16GB"
    assert "simulated" in str(inv.driver_version)


@pytest.mark.parametrize("content, words", [
    ("{not json", "is not valid JSON"), ("[1, 2]", "needs a top-level object"),
    ('{"gpus": [{"name": "my GPU", "memory_total_bytes": 1024}]}',
     r"GPU 0 of the simulated-GPU description .* lacks 'uuid', .*simulated_gpu\("),
    ('{"gpus": ["A100"]}', r"GPU 0 of the simulated-GPU description .* is not an object"),
])
def test_simulated_description_errors(tmp_path, content, words):
    path = tmp_path / "bad.json"
    path.write_text(content)
    with pytest.raises(ValueError, match=words):
        SimulatedGpuReader(str(path))


def test_simulated_usage_can_change_while_read():
    r = SimulatedGpuReader("colab-T4")
    r.set_usage(0, memory_used_bytes=2**30, utilization_gpu_percent=88)
    s = r.sample(0)
    assert (s.memory_used_bytes, s.utilization_gpu_percent) == (2**30, 88)
    with pytest.raises(IndexError, match="1 simulated GPU"):
        r.sample(1)


# Calls that start the CUDA driver (is_available) or initialise CUDA in the process (get_device_capability and
# everything built on get_device_properties). On this machine they find no GPU, so the context check above cannot
# see them: record who calls them (each still runs for real).
STARTERS_SCRIPT = """
import torch, gpulab.machine.report
called = []
for name in ("is_available", "get_device_capability", "get_device_properties", "current_device", "mem_get_info",
             "init", "_lazy_init"):
    real = getattr(torch.cuda, name)
    setattr(torch.cuda, name, lambda *a, _real=real, _name=name, **k: called.append(_name) or _real(*a, **k))
r = gpulab.machine.report.environment_report()
str(r); r._repr_html_()
print(r.torch.cudnn)
print(sorted(set(called)))
"""


@pytest.mark.parametrize("simulate", ["", "workshop-8"])
def test_the_report_calls_nothing_that_starts_cuda(simulate):
    out = _python(STARTERS_SCRIPT, GPULAB_SIMULATE_GPUS=simulate)
    assert out.returncode == 0, out.stderr
    cudnn, called = out.stdout.strip().splitlines()[-2:]
    assert called == "[]", f"the report called torch.cuda.{called}, which start CUDA on a GPU machine"
    import torch

    if torch.backends.cudnn.is_available():
        assert cudnn[0].isdigit(), "the cuDNN version is still reported"


def test_report_says_cuda_has_started_once_the_driver_is_loaded(monkeypatch):
    """is_available() loads libcuda without creating a context: the checklist must not say the variable can change."""
    from gpulab.machine import cuda, report

    monkeypatch.setattr(report, "cuda_state", lambda: cuda.CudaState(True, False, True))
    text = str(environment_report(SimulatedGpuReader("colab-T4")))
    assert "✘ CUDA not yet started in this kernel — The CUDA driver (libcuda) is loaded" in text
    assert "fix: restart the kernel" in text
