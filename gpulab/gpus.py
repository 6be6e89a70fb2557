"""How many CUDA GPUs this process can use, asked without creating a CUDA context (a probe).

``torch.cuda.device_count()`` does not create a context (``torch.cuda.is_initialized()`` stays False), so a
notebook can ask it and still fork workers later.
"""
from __future__ import annotations

__all__ = ["cuda_gpu_count", "gpu_requirement"]


def cuda_gpu_count() -> int:
    """GPUs torch can use in this process (after ``CUDA_VISIBLE_DEVICES``); 0 on a CPU-only build or machine."""
    import torch

    return torch.cuda.device_count() if torch.cuda.is_available() else 0


def gpu_requirement(needed: int = 1) -> str | None:
    """``None`` when this process has ``needed`` CUDA GPUs; otherwise the reason in one sentence."""
    import torch

    have = cuda_gpu_count()
    if have >= needed:
        return None
    if torch.version.cuda is None:
        why = f"this PyTorch ({torch.__version__}) was built without CUDA"
    elif have == 0:
        why = "PyTorch found no usable CUDA GPU on this machine"
    else:
        why = f"this process sees only {have} CUDA GPU(s)"
    return f"needs {needed} CUDA GPU(s), but {why}"
