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

__all__ = ["cuda_gpu_count", "gpu_requirement", "best_device"]


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


def gpu_requirement(needed: int = 1) -> str | None:
    """``None`` when this process has ``needed`` CUDA GPUs; otherwise the reason in one sentence."""
    import torch

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
    from .visible import parse_visible_devices

    raw = os.environ.get("CUDA_VISIBLE_DEVICES")
    return raw is not None and not parse_visible_devices(raw).entries
