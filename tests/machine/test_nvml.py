"""NvmlReader's translation of NVML answers (through a pynvml stand-in), and the real no-driver path on this machine."""

from __future__ import annotations

import pytest

from gpulab.core.readings import Unavailable
from gpulab.machine.nvml import NvmlReader, explain_nvml_error

from . import nvml_stub
from .nvml_stub import Stub


def test_nothing_happens_until_the_first_question():
    stub = Stub()
    reader = NvmlReader(stub)
    assert stub.calls == []
    assert reader.count() == 2
    assert stub.calls[0] == "nvmlInit"


def test_translates_a_normal_gpu_with_one_refused_field():
    g = NvmlReader(Stub()).info(1)
    assert (g.name, g.uuid, g.pci_bus_id) == ("NVIDIA GeForce RTX 3090", "GPU-bbbbbbbb-1111", "00000000:65:00.0")
    assert g.memory_total_bytes == 24576 * nvml_stub.MiB
    assert g.memory_free_bytes == g.memory_total_bytes - g.memory_used_bytes
    assert (g.utilization_gpu_percent, g.utilization_memory_percent, g.temperature_c) == (37, 12, 41)
    assert isinstance(g.power_w, Unavailable)
    assert str(g.power_w) == "N/A (not supported on this GPU)"
    assert g.mig_enabled is False, "a GPU without MIG support is simply not in MIG mode"
    assert g.mig_devices == ()


def test_translates_a_mig_parent_skipping_empty_slots():
    g = NvmlReader(Stub()).info(0)
    assert g.name == "NVIDIA A100 80GB PCIe", "bytes from old pynvml versions are decoded"
    assert g.mig_enabled is True
    assert [m.uuid for m in g.mig_devices] == ["MIG-1111", "MIG-2222"]
    assert [m.mig_index for m in g.mig_devices] == [0, 2]
    assert g.mig_devices[1].memory_used_bytes == 8 * nvml_stub.MiB
    assert [m.profile for m in g.mig_devices] == ["3g.40gb", "3g.40gb"] and g.mig_devices[0].name == "MIG 3g.40gb"
    assert isinstance(g.utilization_gpu_percent, Unavailable)
    assert g.power_w == pytest.approx(61.5)


def test_processes_are_named_or_explained():
    procs = NvmlReader(Stub()).info(1).processes
    assert [p.pid for p in procs] == [999_999_999, 1]
    assert "not visible here" in procs[0].name, "NVML reports host PIDs that a container cannot see"
    assert isinstance(procs[1].used_memory_bytes, Unavailable)


def test_process_list_is_skipped_when_not_asked_for():
    stub = Stub()
    info = NvmlReader(stub).info(1, processes=False)
    assert isinstance(info.processes, Unavailable)
    assert "nvmlDeviceGetComputeRunningProcesses" not in stub.calls


def test_sample_reads_only_memory_and_utilisation():
    s = NvmlReader(Stub()).sample(1)
    assert (s.physical_index, s.utilization_gpu_percent) == (1, 37)
    assert s.memory_used_bytes == 1210 * nvml_stub.MiB


def test_versions():
    r = NvmlReader(Stub())
    assert r.driver_version() == "550.54.15"
    assert r.cuda_driver_version() == "12.4"


@pytest.mark.parametrize(
    "exc, words",
    [
        (nvml_stub.NVMLError_LibraryNotFound, "no NVIDIA driver library"),
        (nvml_stub.NVMLError_DriverNotLoaded, "kernel driver is not loaded"),
        (nvml_stub.NVMLError_LibRmVersionMismatch, "Reboot"),
    ],
)
def test_init_failures_become_zero_gpus_and_a_reason(exc, words):
    r = NvmlReader(Stub(init_error=exc))
    assert r.count() == 0
    assert words in r.error
    assert isinstance(r.driver_version(), Unavailable)


def test_bad_index_says_what_exists():
    with pytest.raises(IndexError, match=r"no GPU with physical index 5: NVML sees 2 GPU\(s\)"):
        NvmlReader(Stub()).info(5)


def test_a_non_nvml_error_is_not_swallowed():
    stub = Stub()
    stub.nvmlDeviceGetTemperature = lambda h, s: 1 / 0
    with pytest.raises(ZeroDivisionError):
        NvmlReader(stub).info(1)


def test_close_then_reuse():
    stub = Stub()
    r = NvmlReader(stub)
    r.count()
    r.close()
    assert "nvmlShutdown" in stub.calls
    assert r.count() == 2


def test_missing_pynvml_is_explained():
    assert "pip install nvidia-ml-py" in explain_nvml_error(ImportError("no module"))


def _real_nvml_works() -> bool:
    return NvmlReader().error is None


@pytest.mark.skipif(
    _real_nvml_works(), reason="this machine has a working NVIDIA driver; the no-driver path needs one without"
)
def test_real_no_driver_path_on_this_machine():
    r = NvmlReader()
    assert r.count() == 0
    assert "no NVIDIA driver library" in r.error
    with pytest.raises(IndexError, match="NVML sees 0 GPU"):
        r.sample(0)


@pytest.mark.gpu
def test_real_nvml_reads_every_gpu():
    r = NvmlReader()
    assert r.error is None and r.count() >= 1
    for i in range(r.count()):
        g = r.info(i)
        assert g.uuid.startswith("GPU-") and g.memory_total_bytes > 0


# -- refusals seen on real machines ----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "exc, words",
    [
        (nvml_stub.NVMLError_NoPermission, "no permission"),  # a GPU the job's cgroup hides (Slurm ConstrainDevices)
        (nvml_stub.NVMLError_GpuIsLost, "fallen off the bus"),
    ],
)
def test_a_gpu_whose_handle_nvml_refuses_is_listed_with_the_reason(exc, words):
    from gpulab.machine.inventory import devices

    stub = Stub()
    stub.gpus[0]["handle_error"] = exc
    reader = NvmlReader(stub)
    inv = devices(reader)  # no exception: the other GPU is still read
    lost, ok = inv.gpus
    assert ok.name == "NVIDIA GeForce RTX 3090"
    assert words in lost.name and words in str(lost.memory_total_bytes) and words in str(lost.processes)
    assert lost.mig_devices == () and lost.mig_enabled is not True
    assert words in str(reader.sample(0).memory_used_bytes)
    assert f"N/A ({explain_nvml_error(exc('x'))})" in str(inv)


def test_a_driver_older_than_pynvml_leaves_the_process_list_unavailable():
    stub = Stub()
    stub.gpus[1]["procs"] = "old driver"
    g = NvmlReader(stub).info(1)  # pynvml raises NVMLLibraryMismatchError, which is not an NVMLError
    assert isinstance(g.processes, Unavailable)
    assert "driver is older" in g.processes.reason
    assert g.name == "NVIDIA GeForce RTX 3090"


def test_a_call_the_driver_lacks_is_explained():
    assert "driver is older" in explain_nvml_error(nvml_stub.NVMLError_FunctionNotFound("x"))
