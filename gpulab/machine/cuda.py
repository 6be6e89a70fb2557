"""How many CUDA GPUs this process can use, asked without creating a CUDA context (a probe).

``torch.cuda.device_count()`` asks NVML when the driver is there: it neither creates a CUDA context nor starts the
CUDA driver, so a notebook can ask it, then still change ``CUDA_VISIBLE_DEVICES`` or fork workers. The usual
``torch.cuda.is_available()`` is different: unless ``PYTORCH_NVML_BASED_CUDA_CHECK=1`` it calls ``cudaGetDeviceCount``,
which starts the driver (``cuInit``) — from then on this process ignores changes to ``CUDA_VISIBLE_DEVICES``, and
forked children may fail to use CUDA. gpulab therefore never calls ``is_available()``. One exception PyTorch makes:
when ``CUDA_VISIBLE_DEVICES`` names MIG slices (``MIG-…``), or NVML cannot be loaded, ``device_count()`` falls back to
``cudaGetDeviceCount`` and does start the driver (``torch.cuda._device_count_nvml`` returns -1 there).
Taught in ``notebooks/00_setup.ipynb``.
"""
from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path

from ..core.cuda_start import CudaStart, cuda_started_by

__all__ = ["cuda_gpu_count", "too_few_gpus", "best_device", "CudaState", "cuda_state", "driver_in_maps"]


def cuda_gpu_count() -> int:
    """GPUs torch can use in this process (after ``CUDA_VISIBLE_DEVICES``); 0 on a CPU-only build or machine."""
    import torch

    return torch.cuda.device_count()  # 0 on a CPU-only build; never torch.cuda.is_available(), see above


def best_device():
    """``torch.device('cuda')`` when this process can use a GPU, else ``torch.device('cpu')`` — without starting CUDA.

    The course's replacement for ``torch.device("cuda" if torch.cuda.is_available() else "cpu")``.
    """
    import torch

    return torch.device("cuda" if cuda_gpu_count() > 0 else "cpu")


def too_few_gpus(needed: int = 1) -> str | None:
    """Why this process has fewer than ``needed`` CUDA GPUs, in one sentence; ``None`` when it has enough.

    ``if reason := too_few_gpus(2): ...`` reads as it means. Taught in ``notebooks/01_cpu_gpu_transfer.ipynb``."""
    import torch

    from ..core.arguments import whole_number

    needed = whole_number(needed, "needed", minimum=1, example="too_few_gpus(2) for two GPUs")

    have = cuda_gpu_count()
    if have >= needed:
        return None
    if torch.version.cuda is None:
        why = f"this PyTorch ({torch.__version__}) was built without CUDA"
    elif have == 0 and _hides_every_gpu():
        why = f"CUDA_VISIBLE_DEVICES={os.environ['CUDA_VISIBLE_DEVICES']!r} lets this process see no GPU"
    elif have == 0:
        why = "PyTorch found no usable CUDA GPU on this machine"
    else:
        why = f"this process sees only {have} CUDA GPU(s)"
    return f"needs {needed} CUDA GPU(s), but {why}"


def _hides_every_gpu() -> bool:
    """True when ``CUDA_VISIBLE_DEVICES`` is set to a value under which CUDA uses no GPU at all (``""``, ``-1``, …)."""
    from ..core.visible import parse_visible_devices

    raw = os.environ.get("CUDA_VISIBLE_DEVICES")
    return raw is not None and not parse_visible_devices(raw).entries


@dataclass(frozen=True)
class CudaState:
    """Has CUDA started in this process, and has it therefore already read ``CUDA_VISIBLE_DEVICES``?"""

    torch_imported: bool
    initialized: bool  # torch.cuda.is_initialized(): a CUDA context exists in this process
    driver_loaded: bool  # libcuda is mapped: something (is_available, device_count, a library) started the driver
    started_by: CudaStart | None = None  # the first call that started CUDA here, or tried to (gpulab imported first)

    @property
    def variable_read(self) -> bool:
        """True once CUDA has read the variable here; from then on changing it has no effect in this process."""
        return self.initialized or self.driver_loaded

    def __str__(self) -> str:
        return self._state() + (f" {self.started_by}" if self.started_by is not None else "")

    def _state(self) -> str:
        if self.initialized:
            return ("CUDA is initialised in this process (torch.cuda.is_initialized() is True): CUDA_VISIBLE_DEVICES "
                    "was read when it started, and changing it now has no effect here.")
        if self.driver_loaded:
            return ("The CUDA driver (libcuda) is loaded in this process, so CUDA has already read "
                    "CUDA_VISIBLE_DEVICES (torch.cuda.is_available() is enough to do that); changing it now has no "
                    "effect here.")
        return ("CUDA has not started in this process" + ("" if self.torch_imported else " (torch is not even imported)")
                + ": CUDA_VISIBLE_DEVICES can still be changed, and the first CUDA call will read it.")

    def _repr_html_(self) -> str:
        import html

        return f"<p>{html.escape(str(self))}</p>"


def driver_in_maps(maps_text: str) -> bool:
    """True if a ``/proc/<pid>/maps`` listing shows the CUDA driver library (``libcuda.so``) mapped in (pure)."""
    return any(line.rstrip().rsplit("/", 1)[-1].startswith("libcuda.so") for line in maps_text.splitlines())


def cuda_state() -> CudaState:
    """Ask, without starting anything, whether CUDA has started in this process (the guard's only probe)."""
    torch = sys.modules.get("torch")
    initialized = bool(torch is not None and torch.cuda.is_initialized())
    try:
        maps = Path("/proc/self/maps").read_text()
    except OSError:  # not Linux: only torch's own flag can tell
        maps = ""
    return CudaState(torch is not None, initialized, driver_in_maps(maps), cuda_started_by())
