"""A tripwire for "never starts CUDA" checks that must also fail on a machine without a GPU.

``torch.cuda.is_initialized()`` and a mapped ``libcuda.so`` stay False on a machine without a driver whatever the code
does, so a check built on them alone cannot fail here (and on a GPU machine a mapped libcuda proves nothing: ``import
torch`` maps it without starting CUDA; ``tests/machine/test_cuda_driver_probe.py`` tries the driver's answers).
Installed in a fresh interpreter before the code under test runs, the tripwire records every call that would start CUDA
on a GPU machine, whether or not it succeeds here:

* ``torch.cuda._lazy_init``: every CUDA context starts here (a tensor on ``cuda``, ``current_device()``,
  ``set_device``, ``mem_get_info``, ``get_device_properties``, …; PyTorch's C++ side calls it too);
* ``torch._C._cuda_getDeviceCount`` (``cudaGetDeviceCount``, which starts the driver with ``cuInit``), except from
  ``torch.cuda.device_count()``, which calls it only where NVML cannot answer (see ``gpulab/machine/cuda.py``).
  ``torch.cuda.is_available()`` calls it: that is the call the package must never make.

Use it from a test's child script: ``sys.path.insert(0, "<tests dir>"); import cuda_tripwire; cuda_tripwire.install()``
first, ``print(cuda_tripwire.STARTS)`` last (``PRELUDE`` and ``REPORT`` below do exactly that).
"""

from __future__ import annotations

import sys
import traceback
from pathlib import Path
from typing import Any

__all__ = ["STARTS", "install", "PRELUDE", "REPORT"]

STARTS: list[str] = []  # one line per call that would start CUDA: what, and the first caller outside torch

PRELUDE = (
    f"import sys; sys.path.insert(0, {str(Path(__file__).resolve().parent)!r}); "
    "import cuda_tripwire; cuda_tripwire.install()\n"
)
REPORT = "\nprint('CUDA starts:', cuda_tripwire.STARTS)\n"


def _first_caller_outside_torch() -> str:
    """The innermost caller outside torch, this file and gpulab's own recorder of the first start (which wraps)."""
    for frame in reversed(traceback.extract_stack()[:-2]):
        name = frame.filename.replace("\\", "/")
        if "/torch/" not in name and frame.filename != __file__ and not name.endswith("gpulab/machine/cuda_start.py"):
            return f"{Path(frame.filename).name}:{frame.lineno} {frame.name}"
    return "?"


def _watch(owner: Any, name: str, what: str, allowed_caller: str | None = None) -> None:
    original = getattr(owner, name)

    def watched(*args: Any, **kwargs: Any) -> Any:
        if sys._getframe(1).f_code.co_name != allowed_caller:
            STARTS.append(f"{what} from {_first_caller_outside_torch()}")
        return original(*args, **kwargs)

    setattr(owner, name, watched)


def install() -> None:
    """Wrap the calls that start CUDA (idempotent per interpreter: call it once, before the code under test)."""
    import torch
    import torch.cuda

    _watch(torch.cuda, "_lazy_init", "a CUDA context (torch.cuda._lazy_init)")
    _watch(torch._C, "_cuda_getDeviceCount", "the CUDA driver (cudaGetDeviceCount)", allowed_caller="device_count")
