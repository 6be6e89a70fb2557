"""How many CUDA GPUs this process can use, asked without creating a CUDA context (a probe).

``torch.cuda.device_count()`` asks NVML when the driver is there: it neither creates a CUDA context nor starts the
CUDA driver, so a notebook can ask it, then still change ``CUDA_VISIBLE_DEVICES`` or fork workers. The usual
``torch.cuda.is_available()`` is different: unless ``PYTORCH_NVML_BASED_CUDA_CHECK=1`` it calls ``cudaGetDeviceCount``,
which starts the driver (``cuInit``) — from then on this process ignores changes to ``CUDA_VISIBLE_DEVICES``, and
forked children may fail to use CUDA. gpulab therefore never calls ``is_available()``. One exception PyTorch makes:
when ``CUDA_VISIBLE_DEVICES`` names MIG slices (``MIG-…``), or NVML cannot be loaded, ``device_count()`` falls back to
``cudaGetDeviceCount`` and does start the driver (``torch.cuda._device_count_nvml`` returns -1 there).
Taught in ``notebooks/00_setup.ipynb``.

``cuda_state()`` answers whether CUDA has read ``CUDA_VISIBLE_DEVICES`` here from evidence only (``CudaState``): on a
GPU machine ``import torch`` loads the driver library without initialising it, so a loaded libcuda is asked, never
counted as proof. Taught in ``notebooks/02_choosing_gpus.ipynb``.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path

from .cuda_evidence import DriverAnswer, driver_in_maps, mapped_drivers
from .cuda_start import CudaStart, cuda_started_by

__all__ = [
    "cuda_gpu_count",
    "too_few_gpus",
    "CudaState",
    "cuda_state",
    "ask_driver",
    "loaded_driver",
    "driver_in_maps",
]


def cuda_gpu_count() -> int:
    """GPUs torch can use in this process (after ``CUDA_VISIBLE_DEVICES``); 0 on a CPU-only build or machine."""
    import torch

    return torch.cuda.device_count()  # 0 on a CPU-only build; never torch.cuda.is_available(), see above


def too_few_gpus(needed: int = 1) -> str | None:
    """Why this process has fewer than ``needed`` CUDA GPUs, in one sentence; ``None`` when it has enough.

    ``if reason := too_few_gpus(2): ...`` reads as it means. The ``%%gpu`` cells' skip line says it
    (``notebook.magics``)."""
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
    from ..core.visible_text import parse_visible_devices

    raw = os.environ.get("CUDA_VISIBLE_DEVICES")
    return raw is not None and not parse_visible_devices(raw).entries


@dataclass(frozen=True)
class CudaState:
    """Has CUDA read ``CUDA_VISIBLE_DEVICES`` in this process? Answered only from evidence, in this order:

    1. torch's own flag, ``torch.cuda.is_initialized()``;
    2. the first CUDA call gpulab recorded (``started_by``): one that succeeded started the driver; one that failed
       reached the driver's ``cuInit`` when this torch is a CUDA build and libcuda is loaded (on a machine without a
       driver nothing was read, and it does not matter), and PyTorch keeps the answer it got either way;
    3. the driver itself (``driver``): a libcuda already loaded here, asked ``cuDeviceGetCount`` (``ask_driver``).

    A loaded libcuda alone proves nothing: ``import torch`` loads it on a GPU machine without starting CUDA.
    ``variable_read`` is ``True`` or ``False`` where the evidence says so, ``None`` where it cannot tell.
    """

    torch_imported: bool
    initialized: bool  # torch.cuda.is_initialized(): a CUDA context exists in this process
    driver: DriverAnswer = DriverAnswer.not_loaded()  # what the libcuda loaded here says (Linux)
    started_by: CudaStart | None = None  # the first call that started CUDA here, or tried to (gpulab imported first)
    torch_has_cuda: bool = True  # this torch is a CUDA build: its CUDA calls reach the driver

    @property
    def variable_read(self) -> bool | None:
        """``True`` once CUDA has read the variable here (changing it then has no effect in this process),
        ``False`` while the evidence says it has not, ``None`` where gpulab cannot tell."""
        return self._verdict()[0]

    @property
    def evidence(self) -> str:
        """What the answer rests on, in a few words (``libcuda.so.1 answers CUDA_ERROR_NOT_INITIALIZED (3) …``)."""
        return self._verdict()[1]

    def _record_reached_driver(self) -> bool:
        rec = self.started_by
        return rec is not None and rec.error is not None and self.torch_has_cuda and self.driver.loaded is True

    def _verdict(self) -> tuple[bool | None, str]:
        rec = self.started_by
        if self.initialized:
            return True, "torch.cuda.is_initialized() is True"
        if rec is not None and rec.error is None:
            return True, f"the first CUDA call gpulab saw, {rec.call}, started the driver"
        if self.driver.initialised is True:
            return True, self.driver.said
        if self._record_reached_driver():
            return True, f"{rec.call} reached the loaded driver and failed"  # type: ignore[union-attr]
        if self.driver.initialised is False:
            return False, f"the CUDA driver (libcuda) is loaded but not initialised ({self.driver.said})"
        if self.driver.loaded is False:
            return False, "the CUDA driver (libcuda) is not loaded in this process"
        return None, self.driver.said

    def __str__(self) -> str:
        return self._state() + (f" {self.started_by}" if self.started_by is not None else "")

    def _state(self) -> str:
        read, evidence = self._verdict()
        if self.initialized:
            return (
                "CUDA is initialised in this process (torch.cuda.is_initialized() is True): CUDA_VISIBLE_DEVICES "
                "was read when it started, and changing it now has no effect here."
            )
        if read and self.started_by is not None and self.started_by.error is None:
            return (
                "CUDA's driver has started in this process (the first CUDA call gpulab saw succeeded): "
                "CUDA_VISIBLE_DEVICES was read then, and changing it now has no effect here."
            )
        if read and self.driver.initialised is True:
            return (
                f"The CUDA driver in this process says it has started ({evidence}): something started CUDA, and "
                "CUDA_VISIBLE_DEVICES was read then; changing it now has no effect here."
            )
        if read:
            return (
                "A CUDA call has already reached the CUDA driver in this process and failed: the driver read "
                "CUDA_VISIBLE_DEVICES then, and PyTorch keeps the answer it got, so changing it now has no effect "
                "here."
            )
        if read is False and self.driver.loaded:
            return (
                "CUDA has not started in this process: its driver (libcuda) is loaded, as importing torch does "
                f"on a GPU machine, but not initialised ({self.driver.said}): CUDA_VISIBLE_DEVICES can still "
                "be changed, and the first CUDA call will read it."
            )
        if read is False:
            return (
                "CUDA has not started in this process"
                + ("" if self.torch_imported else " (torch is not even imported)")
                + ": CUDA_VISIBLE_DEVICES can still be changed, and the first CUDA call will read it."
            )
        saw = (
            "gpulab saw no CUDA call since it was imported"
            if self.started_by is None
            else "the first CUDA call gpulab saw failed (below)"
        )
        flag = "torch.cuda.is_initialized() is False" if self.torch_imported else "torch is not imported"
        driver = (
            "it cannot ask the CUDA driver itself" if self.driver.loaded is None else "the driver gave no clear answer"
        )
        return (
            f"gpulab cannot tell whether CUDA has read CUDA_VISIBLE_DEVICES in this process: {flag} and {saw}, "
            f"but {driver} ({evidence}). If nothing here has called torch.cuda.is_available() or put a tensor on "
            "a GPU, the variable still takes effect."
        )

    def _repr_html_(self) -> str:
        import html

        return f"<p>{html.escape(str(self))}</p>"


def ask_driver(path: str) -> DriverAnswer:
    """Ask the libcuda at ``path``, which must already be loaded in this process, whether ``cuInit`` has run.

    It is opened with ``RTLD_NOLOAD``: the dynamic loader returns the copy already loaded (matched by file) or
    nothing, and never loads a library. ``cuDeviceGetCount`` needs no context and starts nothing: it answers
    ``CUDA_ERROR_NOT_INITIALIZED`` (3) before ``cuInit`` and ``CUDA_SUCCESS`` (0) after. Any other answer, a missing
    symbol or a failed open is "cannot tell".
    """
    import ctypes

    try:
        lib = ctypes.CDLL(path, mode=os.RTLD_NOLOAD | os.RTLD_LAZY)
        count_fn = lib.cuDeviceGetCount
    except (OSError, AttributeError) as exc:  # not loaded after all (replaced on disk), or not a CUDA driver
        return DriverAnswer.unanswered(path, f"{type(exc).__name__}: {exc}")
    count_fn.restype = ctypes.c_int
    count_fn.argtypes = [ctypes.POINTER(ctypes.c_int)]
    n = ctypes.c_int(-1)
    code = count_fn(ctypes.byref(n))
    return DriverAnswer.answered(path, code, n.value if code == 0 else None)


def loaded_driver() -> DriverAnswer:
    """What the CUDA driver loaded in this process says about its start (Linux: ``/proc/self/maps``).

    Elsewhere gpulab does not ask: on Windows the driver is ``nvcuda.dll`` and could be found with
    ``GetModuleHandle``, but no Windows machine tests that path here, so the guard there rests on torch's flag and
    gpulab's record of the first CUDA call, and says it cannot tell beyond them.
    """
    if not hasattr(os, "RTLD_NOLOAD"):
        return DriverAnswer.unlisted(sys.platform)
    try:
        maps = Path("/proc/self/maps").read_text()
    except OSError:  # not Linux (macOS has RTLD_NOLOAD but no /proc)
        return DriverAnswer.unlisted(sys.platform)
    return DriverAnswer.combined(tuple(ask_driver(path) for path in mapped_drivers(maps)))


def cuda_state() -> CudaState:
    """Ask, without starting anything, whether CUDA has read ``CUDA_VISIBLE_DEVICES`` in this process (the guard's
    only probe): torch's flag, gpulab's record of the first CUDA call, and the loaded driver's own answer."""
    torch = sys.modules.get("torch")
    initialized = bool(torch is not None and torch.cuda.is_initialized())
    has_cuda = torch is None or getattr(getattr(torch, "version", None), "cuda", None) is not None
    return CudaState(torch is not None, initialized, loaded_driver(), cuda_started_by(), has_cuda)
