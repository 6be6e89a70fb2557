"""A tiny stand-in for the few ``pynvml`` calls gpulab makes, to check NvmlReader's translation without a driver.

It mimics pynvml's shapes: exceptions subclassing ``NVMLError`` with pynvml's class names, structs with the same
attribute names, MIG handles, refusals per field.
"""

from __future__ import annotations

import ctypes
from types import SimpleNamespace

MiB = 1024**2


class NVMLError(Exception):
    pass


class NVMLLibraryMismatchError(Exception):
    """pynvml raises this (not an NVMLError) when the driver lacks the versioned function a call needs."""


def _error(name: str) -> type[NVMLError]:
    return type(name, (NVMLError,), {})


NVMLError_LibraryNotFound = _error("NVMLError_LibraryNotFound")
NVMLError_DriverNotLoaded = _error("NVMLError_DriverNotLoaded")
NVMLError_LibRmVersionMismatch = _error("NVMLError_LibRmVersionMismatch")
NVMLError_NotSupported = _error("NVMLError_NotSupported")
NVMLError_NotFound = _error("NVMLError_NotFound")
NVMLError_NoPermission = _error("NVMLError_NoPermission")
NVMLError_GpuIsLost = _error("NVMLError_GpuIsLost")
NVMLError_FunctionNotFound = _error("NVMLError_FunctionNotFound")
NVML_TEMPERATURE_GPU = 0


class Stub:
    """Two GPUs: 0 is an A100 in MIG mode (two slices, one empty slot, no utilisation); 1 refuses power readings."""

    NVMLError = NVMLError
    NVMLLibraryMismatchError = NVMLLibraryMismatchError
    NVML_TEMPERATURE_GPU = NVML_TEMPERATURE_GPU

    def __init__(self, init_error: type[NVMLError] | None = None) -> None:
        self.init_error = init_error
        self.calls: list[str] = []
        self.gpus = [
            dict(
                name=b"NVIDIA A100 80GB PCIe",
                uuid="GPU-aaaaaaaa-0000",
                bus="00000000:17:00.0",
                total=81920 * MiB,
                used=500 * MiB,
                util=None,
                power=None,
                mig=True,
                procs=[],
            ),
            dict(
                name="NVIDIA GeForce RTX 3090",
                uuid="GPU-bbbbbbbb-1111",
                bus="00000000:65:00.0",
                total=24576 * MiB,
                used=1210 * MiB,
                util=(37, 12),
                power="unsupported",
                mig=None,
                procs=[
                    SimpleNamespace(pid=999_999_999, usedGpuMemory=1190 * MiB),
                    SimpleNamespace(pid=1, usedGpuMemory=None),
                ],
            ),
        ]
        self.migs = {
            0: [
                # NVML names a slice "MIG 3g.40gb"; CUDA puts the card's name before it, and both are read
                SimpleNamespace(uuid="MIG-1111", total=40192 * MiB, used=0, name="MIG 3g.40gb"),
                None,
                SimpleNamespace(
                    uuid="MIG-2222", total=40192 * MiB, used=8 * MiB, name="NVIDIA A100 80GB PCIe MIG 3g.40gb"
                ),
            ]
        }

    def __getattr__(self, name: str):  # any other pynvml call this stub lacks
        raise AttributeError(f"the pynvml stub has no {name}: gpulab called an NVML function the tests do not cover")

    def _call(self, name: str) -> None:
        self.calls.append(name)

    def nvmlInit(self) -> None:
        self._call("nvmlInit")
        if self.init_error:
            raise self.init_error("stub")

    def nvmlShutdown(self) -> None:
        self._call("nvmlShutdown")

    def nvmlSystemGetDriverVersion(self) -> str:
        return "550.54.15"

    def nvmlSystemGetCudaDriverVersion_v2(self) -> int:
        return 12040

    def nvmlDeviceGetCount(self) -> int:
        self._call("nvmlDeviceGetCount")
        return len(self.gpus)

    def nvmlDeviceGetHandleByIndex(self, i: int):
        refusal = self.gpus[i].get("handle_error")
        if refusal:  # e.g. a GPU the job's cgroup hides (Slurm), or one that fell off the bus
            raise refusal("stub")
        return ("gpu", i)

    def _g(self, h):
        if not isinstance(h, tuple):  # real pynvml hands the handle to ctypes, which refuses anything else
            raise ctypes.ArgumentError(f"argument 1: TypeError: Don't know how to convert parameter 1 ({h!r})")
        if h[0] == "mig":
            return None
        return self.gpus[h[1]]

    def nvmlDeviceGetName(self, h):
        return self.migs[h[1]][h[2]].name if h[0] == "mig" else self._g(h)["name"]

    def nvmlDeviceGetUUID(self, h):
        return self.migs[h[1]][h[2]].uuid if h[0] == "mig" else self._g(h)["uuid"]

    def nvmlDeviceGetPciInfo(self, h):
        return SimpleNamespace(busId=self._g(h)["bus"].encode())

    def nvmlDeviceGetMemoryInfo(self, h):
        if h[0] == "mig":
            m = self.migs[h[1]][h[2]]
            return SimpleNamespace(total=m.total, used=m.used, free=m.total - m.used)
        g = self._g(h)
        return SimpleNamespace(total=g["total"], used=g["used"], free=g["total"] - g["used"])

    def nvmlDeviceGetUtilizationRates(self, h):
        g = self._g(h)
        if g["util"] is None:
            raise NVMLError_NotSupported("stub")
        return SimpleNamespace(gpu=g["util"][0], memory=g["util"][1])

    def nvmlDeviceGetTemperature(self, h, sensor):
        return 41

    def nvmlDeviceGetPowerUsage(self, h):
        if self._g(h)["power"] == "unsupported":
            raise NVMLError_NotSupported("stub")
        return 61_500

    def nvmlDeviceGetMigMode(self, h):
        mig = self._g(h)["mig"]
        if mig is None:
            raise NVMLError_NotSupported("stub")
        return (1, 1) if mig else (0, 0)

    def nvmlDeviceGetMaxMigDeviceCount(self, h):
        return len(self.migs[h[1]])

    def nvmlDeviceGetMigDeviceHandleByIndex(self, h, k):
        if self.migs[h[1]][k] is None:
            raise NVMLError_NotFound("stub")
        return ("mig", h[1], k)

    def nvmlDeviceGetComputeRunningProcesses(self, h):
        self._call("nvmlDeviceGetComputeRunningProcesses")
        procs = self._g(h)["procs"]
        if procs == "old driver":  # pynvml 12+ calls the _v3 function, which drivers before R510 lack
            raise NVMLLibraryMismatchError(
                "Unversioned function called and the pyNVML version does not match the "
                "NVML lib version. Either use matching pyNVML and NVML lib versions or use "
                "a versioned function such as nvmlDeviceGetComputeRunningProcesses_v2"
            )
        return procs
