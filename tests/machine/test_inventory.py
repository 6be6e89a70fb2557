"""The inventory and described machines: what gpulab.devices() lists, through the fake reader and from a JSON file."""

from __future__ import annotations

import json

import pytest

import gpulab
from gpulab.machine.host import host_info
from gpulab.machine.simulated import SimulatedGpuReader
from tests.seams import set_usage


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
    # and its line says so: under a described machine's table, a bare "CPU: ..." reads as that machine's
    host_line = next(line for line in text.splitlines() if "logical cores" in line)
    assert host_line.startswith("this computer (the GPUs above are described, not these): CPU: "), host_line


def test_inventory_without_driver_says_why():
    inv = gpulab.devices(SimulatedGpuReader(None, error="no NVIDIA driver library (libnvidia-ml.so) was found"))
    assert inv.gpu_count == 0
    assert str(inv).startswith(
        "SIMULATED machine (described GPUs, not this computer's): No NVIDIA GPU found: no NVIDIA driver library"
    )


def test_simulated_description_from_a_json_file(tmp_path):
    path = tmp_path / "lab.json"
    path.write_text(json.dumps({"gpus": [gpulab.machine.simulated.simulated_gpu(0, "Tesla V100-SXM2-16GB", 16384)]}))
    inv = gpulab.devices(SimulatedGpuReader(str(path)))
    assert inv.gpus[0].name == "Tesla V100-SXM2-16GB"
    assert "simulated" in str(inv.driver_version)


@pytest.mark.parametrize(
    "content, words",
    [
        ("{not json", "is not valid JSON"),
        ("[1, 2]", "needs a top-level object"),
        (
            '{"gpus": [{"name": "my GPU", "memory_total_bytes": 1024}]}',
            r"GPU 0 of the simulated-GPU description .* lacks 'uuid', .*simulated_gpu\(",
        ),
        ('{"gpus": ["A100"]}', r"GPU 0 of the simulated-GPU description .* is not an object"),
    ],
)
def test_simulated_description_errors(tmp_path, content, words):
    path = tmp_path / "bad.json"
    path.write_text(content)
    with pytest.raises(ValueError, match=words):
        SimulatedGpuReader(str(path))


def test_simulated_usage_can_change_while_read():
    r = SimulatedGpuReader("colab-T4")
    set_usage(r, 0, memory_used_bytes=2**30, utilization_gpu_percent=88)
    s = r.sample(0)
    assert (s.memory_used_bytes, s.utilization_gpu_percent) == (2**30, 88)
    with pytest.raises(IndexError, match="1 simulated GPU"):
        r.sample(1)
