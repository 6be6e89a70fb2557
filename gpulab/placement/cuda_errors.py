"""What PyTorch raises when CUDA cannot give a statement the GPU it names, as ``explain()`` predicts it (pure).

The class of a failed CUDA runtime call follows the torch release (``machine.compat.cuda_error_class``: AcceleratorError
from 2.8 on); what torch checks itself is a RuntimeError in every release. Each message was seen on a real GPU
(one H100, torch 2.11, driver 580: ``evidence/2026-11-26-h100-80gb-hbm3.json``) or, without one, on this machine.
"""

from __future__ import annotations

from ..core.visible import VisibleMap

__all__ = ["NO_DRIVER", "NO_GPUS", "REPEATED", "invalid_ordinal", "no_gpu_error"]

NO_DRIVER = "RuntimeError: Found no NVIDIA driver on your system. (This machine has no GPU.)"
NO_GPUS = "RuntimeError: No CUDA GPUs are available"
# CUDA_VISIBLE_DEVICES names a GPU twice: torch.cuda.device_count() reads 0 through NVML, then the first CUDA call asks
# the driver, whose count fails with error 101.
REPEATED = (
    "RuntimeError: Unexpected error from cudaGetDeviceCount(). Did you run some cuda functions before calling "
    "NumCudaDevices() that might have already set an error? Error 101: invalid device ordinal"
)


def invalid_ordinal(error_class: str) -> str:
    """``cuda:k`` past the visible GPUs, raised as ``error_class`` (``cuda_error_class`` of the torch that runs it)."""
    return f"{error_class}: CUDA error: invalid device ordinal"


def no_gpu_error(vmap: VisibleMap, has_gpus: bool) -> str | None:
    """What the first CUDA call raises when this process sees no GPU at all; None when it sees one."""
    if not has_gpus:
        return NO_DRIVER
    if vmap.repeated:
        return REPEATED
    return None if vmap.devices else NO_GPUS
