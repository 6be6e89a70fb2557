"""Which software and which kind of machine this is (a probe; reads versions without importing heavy packages).

Torch is imported (its version and build facts need it) but CUDA is never initialised: nothing here creates a
CUDA context. Taught in ``notebooks/00_setup.ipynb``.
"""

from __future__ import annotations

import os
import platform
import sys
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

__all__ = ["TorchFacts", "torch_facts", "package_version", "detect_platform", "PACKAGES"]

# distribution name -> why the course needs it
PACKAGES = {
    "torch": "every chapter",
    "torchvision": "image data sets and models (optional: the chapters use scikit-learn's digits)",
    "lightning": "Lightning's Trainer (optional extra: gpulab[lightning])",
    "jupyterlab": "running the chapters",
    "ipykernel": "running the chapters",
    "ipywidgets": "the GPU picker and the live monitor",
    "matplotlib": "every plot",
    "nvidia-ml-py": "reading GPUs through NVML (imported as pynvml)",
    "psutil": "CPU and RAM readings",
    "scikit-learn": "the offline handwritten-digits data set",
}


def package_version(dist: str) -> str | None:
    """Installed version of a distribution, or None; does not import it."""
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


@dataclass(frozen=True)
class TorchFacts:
    """What this PyTorch was built with and can do here, read without creating a CUDA context."""

    version: str
    built_with_cuda: str | None  # torch.version.cuda
    cudnn: str | None
    cuda_available: bool
    cuda_device_count: int
    cuda_initialized: bool
    gloo: bool
    nccl: str | None  # version, or None when unavailable
    mps: bool


def _cudnn_version(torch) -> str | None:
    """The bundled cuDNN's version, asked of the library itself.

    Not ``torch.backends.cudnn.version()``: its first call runs a compatibility check that calls
    ``torch.cuda.is_available()`` and ``get_device_capability()``, which start the driver and initialise CUDA here.
    """
    if not torch.backends.cudnn.is_available():
        return None
    from ..machine.compat import cudnn_version_int

    v = cudnn_version_int()
    if not v:
        return None
    return f"{v // 10000}.{(v % 10000) // 100}.{v % 100}" if v >= 90000 else str(v)


def torch_facts() -> TorchFacts:
    """What this torch was built with and sees (CUDA, cuDNN, NCCL, gloo, GPU count), read without starting CUDA."""
    import torch
    import torch.distributed as dist

    nccl = None
    if dist.is_available() and dist.is_nccl_available():
        v = torch.cuda.nccl.version()
        nccl = ".".join(map(str, v)) if isinstance(v, tuple) else str(v)
    count = torch.cuda.device_count()  # NVML-based: unlike is_available(), it does not start the CUDA driver
    return TorchFacts(
        version=torch.__version__,
        built_with_cuda=torch.version.cuda,
        cudnn=_cudnn_version(torch),
        cuda_available=count > 0,
        cuda_device_count=count,
        cuda_initialized=torch.cuda.is_initialized(),
        gloo=dist.is_available() and dist.is_gloo_available(),
        nccl=nccl,
        mps=bool(getattr(torch.backends, "mps", None) and torch.backends.mps.is_available()),
    )


def _in_container() -> bool:
    if Path("/.dockerenv").exists() or Path("/run/.containerenv").exists() or os.environ.get("KUBERNETES_SERVICE_HOST"):
        return True
    try:
        cgroup = Path("/proc/1/cgroup").read_text()
    except OSError:
        return False
    return any(word in cgroup for word in ("docker", "kubepods", "containerd", "lxc"))


def detect_platform(env: dict[str, str] | None = None) -> str:
    """``'Google Colab'``, ``'Kaggle'``, ``'JupyterHub (user …)'``, ``'container'`` or ``'plain machine'`` plus the
    OS."""
    env = dict(os.environ) if env is None else env
    where = []
    if "COLAB_RELEASE_TAG" in env or "COLAB_GPU" in env or "google.colab" in sys.modules:
        where.append("Google Colab")
    if "KAGGLE_KERNEL_RUN_TYPE" in env or "KAGGLE_URL_BASE" in env:
        where.append("Kaggle")
    if "JUPYTERHUB_USER" in env:
        where.append(f"JupyterHub (user {env['JUPYTERHUB_USER']})")
    if not where and _in_container():
        where.append("a container")
    base = ", ".join(where) if where else "a plain machine"
    return (
        f"{base}; {platform.system()} {platform.release()} ({platform.machine()}), Python {platform.python_version()}"
    )
