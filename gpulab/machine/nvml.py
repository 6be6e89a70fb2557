"""The one module that talks to NVML (the library behind ``nvidia-smi``).

``NvmlReader`` initialises NVML lazily, on the first question, never at import. Every NVML call goes through one
choke point, ``_query``, which turns a refusal into an ``Unavailable`` with the reason in words, so callers see
``N/A (not supported on this GPU)`` instead of an exception. If NVML cannot start at all (no driver, driver not loaded,
library/driver mismatch), ``reader.error`` says why and what to do, and the reader reports zero GPUs.

NVML numbers GPUs by PCI bus (as nvidia-smi does) and ignores ``CUDA_VISIBLE_DEVICES``: these are ``physical_index``es.
Taught in ``notebooks/00_setup.ipynb``.
"""

from __future__ import annotations

import os
import threading
from types import ModuleType
from typing import Any, Protocol, runtime_checkable

from ..core.readings import NOT_READ, GpuInfo, GpuProcess, GpuSample, MigInstance, Unavailable, mig_profile

__all__ = ["GpuReader", "NvmlReader", "default_reader", "explain_nvml_error"]


@runtime_checkable
class GpuReader(Protocol):
    """What gpulab needs from the GPU driver. ``NvmlReader`` is the real one;
    ``gpulab.machine.simulated.SimulatedGpuReader`` the described one (also the tests' fake)."""

    @property
    def error(self) -> str | None:
        """``None`` when GPUs can be read; otherwise why not, and what to do."""

    def driver_version(self) -> str | Unavailable:
        """The NVIDIA driver's version (nvidia-smi's ``Driver Version``), or why it is unknown."""

    def cuda_driver_version(self) -> str | Unavailable:
        """The newest CUDA the driver supports (nvidia-smi's ``CUDA Version``), or why it is unknown."""

    def count(self) -> int:
        """How many GPUs the driver lists (0 when it cannot be read)."""

    def info(self, physical_index: int, *, processes: bool = True) -> GpuInfo:
        """Everything about GPU ``physical_index`` (nvidia-smi's numbering); ``processes``: also who uses it."""

    def sample(self, physical_index: int) -> GpuSample:
        """GPU ``physical_index``'s memory and utilisation now: what the monitor reads several times a second."""


# Why NVML could not start, keyed by the pynvml exception class name, in a learner's words.
_INIT_REASONS = {
    "NVMLError_LibraryNotFound": (
        "no NVIDIA driver library (libnvidia-ml.so) was found: this machine has no NVIDIA GPU driver, or this "
        "container was started without GPU access. On a laptop without an NVIDIA GPU that is expected: the lessons "
        "run on the CPU. In a container, start it with GPU access (e.g. `docker run --gpus all`)."
    ),
    "NVMLError_DriverNotLoaded": (
        "the NVIDIA driver library is installed but the kernel driver is not loaded (nvidia-smi would say it "
        "couldn't communicate with the NVIDIA driver). A reboot, or `sudo modprobe nvidia`, usually fixes it."
    ),
    "NVMLError_LibRmVersionMismatch": (
        "the NVIDIA driver library and the loaded kernel driver have different versions, which happens after a "
        "driver upgrade without a reboot. Reboot the machine (or ask the administrator to)."
    ),
    "NVMLError_NoPermission": "this user may not query the NVIDIA driver; ask the administrator for access to "
    "/dev/nvidia*.",
    "NVMLError_Uninitialized": "NVML was used before it was initialised (a gpulab bug: please report it).",
}

_OLD_DRIVER = (
    "this NVIDIA driver is older than the nvidia-ml-py package and lacks this query; upgrade the driver, "
    "or install an nvidia-ml-py release from the driver's era"
)

# Why one field could not be read.
_FIELD_REASONS = {
    "NVMLError_NotSupported": "not supported on this GPU",
    "NVMLError_NoPermission": "no permission to read it",
    "NVMLError_GpuIsLost": "the GPU has fallen off the bus; the machine needs attention",
    "NVMLError_NotFound": "not found",
    "NVMLError_Unknown": "the driver gave no reason",
    "NVMLError_FunctionNotFound": _OLD_DRIVER,
    "NVMLLibraryMismatchError": _OLD_DRIVER,  # pynvml's name for a missing versioned call; not an NVMLError subclass
}


def explain_nvml_error(exc: BaseException, *, during_init: bool = False) -> str:
    """Turn a pynvml exception (or an ImportError of pynvml) into a sentence a learner can act on."""
    if isinstance(exc, ImportError):
        return (
            "the nvidia-ml-py package (imported as `pynvml`) is not installed, so GPUs cannot be listed. "
            "Install it with `pip install nvidia-ml-py` (not the deprecated `pynvml` package)."
        )
    name = type(exc).__name__
    table = _INIT_REASONS if during_init else _FIELD_REASONS
    return table.get(name) or f"{name}: {exc}"


class NvmlReader:
    """Reads GPUs through NVML. Thread-safe; initialises NVML on the first question, never at import.

    ``lib`` is the pynvml module; tests pass a small stand-in to check the translation.
    """

    simulated = False

    def __init__(self, lib: ModuleType | Any | None = None) -> None:
        self._lib = lib
        self._lock = threading.RLock()
        self._started = False
        self._error: str | None = None

    # -- the choke point ---------------------------------------------------------------------------------------------
    def _start(self) -> bool:
        with self._lock:
            if self._started:
                return self._error is None
            self._started = True
            try:
                if self._lib is None:
                    import pynvml  # the only import of pynvml in gpulab

                    self._lib = pynvml
                self._lib.nvmlInit()
            except ImportError as exc:
                self._error = explain_nvml_error(exc)
            except Exception as exc:  # any NVMLError subclass; anything else is reported the same way, never hidden
                self._error = explain_nvml_error(exc, during_init=True)
            return self._error is None

    def _query(self, fn: str, *args: Any) -> Any:
        """Call ``pynvml.<fn>(*args)``; a refusal becomes ``Unavailable(reason)``."""
        if not self._start():
            return Unavailable("NVML could not start")
        try:
            with self._lock:
                return getattr(self._lib, fn)(*args)
        except Exception as exc:
            refusals = tuple(
                c
                for c in (getattr(self._lib, "NVMLError", None), getattr(self._lib, "NVMLLibraryMismatchError", None))
                if isinstance(c, type)
            )
            if not isinstance(exc, refusals):
                raise
            return Unavailable(explain_nvml_error(exc))

    # -- the GpuReader protocol ---------------------------------------------------------------------------------------
    @property
    def error(self) -> str | None:
        """``None`` when NVML answers; otherwise why it cannot start, and what to do."""
        self._start()
        return self._error

    def close(self) -> None:
        """Shut NVML down (optional; the next question starts it again)."""
        with self._lock:
            if self._started and self._error is None:
                self._lib.nvmlShutdown()
            self._started = False
            self._error = None

    def driver_version(self) -> str | Unavailable:
        """The driver's version (``nvmlSystemGetDriverVersion``), or why it is unknown."""
        return _text(self._query("nvmlSystemGetDriverVersion"))

    def cuda_driver_version(self) -> str | Unavailable:
        """The newest CUDA version the driver supports (``CUDA Version`` in nvidia-smi's header)."""
        v = self._query("nvmlSystemGetCudaDriverVersion_v2")
        return v if isinstance(v, Unavailable) else f"{v // 1000}.{(v % 1000) // 10}"

    def count(self) -> int:
        """How many GPUs NVML lists (``nvmlDeviceGetCount``); 0 when NVML cannot start."""
        n = self._query("nvmlDeviceGetCount")
        return 0 if isinstance(n, Unavailable) else int(n)

    def _handle(self, physical_index: int) -> Any:
        """The GPU's NVML handle, or ``Unavailable`` when NVML refuses it (a GPU the job's cgroup hides, a lost GPU)."""
        n = self.count()
        if not 0 <= physical_index < n:
            raise IndexError(
                f"there is no GPU with physical index {physical_index}: NVML sees {n} GPU(s)"
                + (f" ({self.error})" if self.error else "")
                + ". Physical indices are nvidia-smi's numbers, starting at 0."
            )
        return self._query("nvmlDeviceGetHandleByIndex", physical_index)

    def sample(self, physical_index: int) -> GpuSample:
        """GPU ``physical_index``'s memory and utilisation now, each ``Unavailable`` where NVML refuses it."""
        h = self._handle(physical_index)
        if isinstance(h, Unavailable):
            return GpuSample(physical_index, h, h, h)
        mem = self._query("nvmlDeviceGetMemoryInfo", h)
        util = self._query("nvmlDeviceGetUtilizationRates", h)
        return GpuSample(
            physical_index,
            _field(mem, "used"),
            _field(mem, "total"),
            _field(util, "gpu"),
        )

    def info(self, physical_index: int, *, processes: bool = True) -> GpuInfo:
        """One GPU, like ``nvidia-smi -q -i <physical_index>``. ``processes=False`` skips the slow process list."""
        h = self._handle(physical_index)
        if isinstance(h, Unavailable):  # every field is refused for the same reason; the other GPUs are still read
            return GpuInfo(
                physical_index,
                str(h),
                str(h),
                str(h),
                h,
                h,
                h,
                h,
                h,
                h,
                h,
                mig_enabled=h,
                processes=h if processes else Unavailable(NOT_READ),
            )
        mem = self._query("nvmlDeviceGetMemoryInfo", h)
        util = self._query("nvmlDeviceGetUtilizationRates", h)
        pci = self._query("nvmlDeviceGetPciInfo", h)
        power_mw = self._query("nvmlDeviceGetPowerUsage", h)
        mig_mode = self._query("nvmlDeviceGetMigMode", h)
        mig_enabled: bool | Unavailable = mig_mode if isinstance(mig_mode, Unavailable) else bool(mig_mode[0])
        if isinstance(mig_enabled, Unavailable) and "not supported" in mig_enabled.reason:
            mig_enabled = False  # GPUs without MIG support are simply not in MIG mode
        return GpuInfo(
            physical_index=physical_index,
            uuid=str(_text(self._query("nvmlDeviceGetUUID", h))),
            name=str(_text(self._query("nvmlDeviceGetName", h))),
            pci_bus_id=str(_text(_field(pci, "busId"))),
            memory_total_bytes=_field(mem, "total"),
            memory_used_bytes=_field(mem, "used"),
            memory_free_bytes=_field(mem, "free"),
            utilization_gpu_percent=_field(util, "gpu"),
            utilization_memory_percent=_field(util, "memory"),
            temperature_c=self._query("nvmlDeviceGetTemperature", h, getattr(self._lib, "NVML_TEMPERATURE_GPU", 0)),
            power_w=power_mw if isinstance(power_mw, Unavailable) else power_mw / 1000.0,
            mig_enabled=mig_enabled,
            mig_devices=self._mig_devices(h) if mig_enabled is True else (),
            processes=self._processes(h) if processes else Unavailable(NOT_READ),
        )

    def _mig_devices(self, h: Any) -> tuple[MigInstance, ...]:
        n = self._query("nvmlDeviceGetMaxMigDeviceCount", h)
        out = []
        for i in range(0 if isinstance(n, Unavailable) else n):
            mh = self._query("nvmlDeviceGetMigDeviceHandleByIndex", h, i)
            if isinstance(mh, Unavailable):  # an empty slot
                continue
            mem = self._query("nvmlDeviceGetMemoryInfo", mh)
            name = self._query("nvmlDeviceGetName", mh)  # "MIG 3g.40gb" (or with the card's name before it)
            out.append(
                MigInstance(
                    i,
                    str(_text(self._query("nvmlDeviceGetUUID", mh))),
                    _field(mem, "total"),
                    _field(mem, "used"),
                    "" if isinstance(name, Unavailable) else mig_profile(str(_text(name))),
                )
            )
        return tuple(out)

    def _processes(self, h: Any) -> tuple[GpuProcess, ...] | Unavailable:
        procs = self._query("nvmlDeviceGetComputeRunningProcesses", h)
        if isinstance(procs, Unavailable):
            return procs
        out = []
        for p in procs:
            used = p.usedGpuMemory
            out.append(
                GpuProcess(
                    int(p.pid), Unavailable("hidden by the driver") if used is None else int(used), _process_name(p.pid)
                )
            )
        return tuple(out)


def _process_name(pid: int) -> str:
    """The command name of a PID, or why it is unknown (NVML reports host PIDs, which a container cannot see)."""
    import psutil

    try:
        return psutil.Process(pid).name()
    except psutil.NoSuchProcess:
        return "(not visible here: another container or the host)"
    except psutil.AccessDenied:
        return "(another user's process)"


def _text(v: Any) -> Any:
    return v.decode() if isinstance(v, bytes) else v


def _field(struct: Any, name: str) -> Any:
    return struct if isinstance(struct, Unavailable) else getattr(struct, name)


_default: tuple[str | None, GpuReader] | None = None
_default_lock = threading.Lock()


def default_reader() -> GpuReader:
    """The process-wide GPU reader: NVML (started on the first question, not here).

    If ``GPULAB_SIMULATE_GPUS`` names a preset or a JSON file, described GPUs are read instead; everything built on
    them says SIMULATED (see ``gpulab.machine.simulated``).
    """
    global _default
    with _default_lock:
        simulate = os.environ.get("GPULAB_SIMULATE_GPUS", "").strip()
        key = simulate or None
        if _default is None or _default[0] != key:
            if simulate:
                from .simulated import SimulatedGpuReader

                _default = (key, SimulatedGpuReader(simulate))
            else:
                _default = (key, NvmlReader())
        return _default[1]
