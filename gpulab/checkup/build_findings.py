"""Does this torch build fit this machine: a CUDA build where NVML lists GPUs, and a CUDA the driver can run.

The classroom's first failure: a torch built for CUDA 13 on a driver for CUDA 12.4 finds no GPU
(``torch.cuda.is_available()`` is False, "The NVIDIA driver on your system is too old"); within one major version
CUDA's minor-version compatibility lets it run. The fix names the wheel index of the newest build the driver runs.
"""

from __future__ import annotations

from .facts import Facts, Finding

__all__ = ["build_findings", "wheel_index_url", "major_minor", "CUDA_BUILDS", "MIN_DRIVER"]

WHEEL_INDEX = "https://download.pytorch.org/whl/"
# CUDA versions PyTorch has published wheels for (download.pytorch.org/whl/cuXYZ); not every torch release has each.
CUDA_BUILDS = ((11, 8), (12, 1), (12, 4), (12, 6), (12, 8), (12, 9), (13, 0))
# The oldest Linux driver that runs any program built with CUDA <major>.x (CUDA's minor-version compatibility).
MIN_DRIVER = {11: "450.80.02", 12: "525.60.13", 13: "580.65.06"}


def major_minor(text: object) -> tuple[int, int] | None:
    """``"12.4"`` → (12, 4); anything unreadable (N/A, None) → None."""
    try:
        major, minor = str(text).split(".")[:2]
        return int(major), int(minor)
    except (ValueError, TypeError):
        return None


def wheel_index_url(driver_cuda: tuple[int, int]) -> str:
    """The PyTorch wheel index of the newest CUDA build that a driver for CUDA ``driver_cuda`` runs as it is."""
    fits = [v for v in CUDA_BUILDS if v <= driver_cuda] or [CUDA_BUILDS[0]]
    major, minor = fits[-1]
    return f"{WHEEL_INDEX}cu{major}{minor}"


def build_findings(f: Facts) -> list[Finding]:
    """Is torch built with CUDA, and does its CUDA fit the driver (CUDA's minor-version compatibility)?"""
    t, out = f.torch, []
    driver = major_minor(f.cuda_driver_version)
    if t.built_with_cuda is None:
        if f.gpus:
            where = (
                f"; for this driver (CUDA ≤ {f.cuda_driver_version}): pip install torch --index-url "
                f"{wheel_index_url(driver)}"
                if driver
                else ""
            )
            out.append(
                Finding(
                    False,
                    "PyTorch built with CUDA",
                    f"torch {t.version} is a CPU-only build: it can never use the {len(f.gpus)} GPU(s) NVML lists.",
                    "install a CUDA build of torch" + where + ", then restart the kernel.",
                    True,
                )
            )
        else:
            out.append(
                Finding(
                    True,
                    "PyTorch built with CUDA",
                    f"no: torch {t.version} is a CPU-only build, which is all a machine without an NVIDIA GPU needs",
                )
            )
        return out
    out.append(Finding(True, "PyTorch built with CUDA", f"CUDA {t.built_with_cuda} build (torch {t.version})"))
    build = major_minor(t.built_with_cuda)
    if build is None or driver is None or not f.gpus:
        return out
    if build[0] > driver[0]:
        need = MIN_DRIVER.get(build[0])
        out.append(
            Finding(
                False,
                "torch's CUDA fits the driver",
                f"torch {t.version} was built with CUDA {t.built_with_cuda}, but this driver ({f.driver_version}) "
                f"supports CUDA up to {f.cuda_driver_version}: PyTorch will find no GPU (torch.cuda.is_available() is "
                "False, with the warning 'The NVIDIA driver on your system is too old').",
                f"install a torch built for CUDA {driver[0]}: pip install torch --index-url {wheel_index_url(driver)} "
                "(download.pytorch.org/whl/torch lists which torch versions have that build), then restart the "
                "kernel; or have the driver upgraded"
                + (f" to ≥ {need} (Linux) for CUDA {build[0]}.x builds." if need else "."),
                True,
            )
        )
    elif build > driver:
        out.append(
            Finding(
                True,
                "torch's CUDA fits the driver",
                f"CUDA {t.built_with_cuda} build on a driver for CUDA ≤ {f.cuda_driver_version}: it runs "
                f"through CUDA's minor-version compatibility (any {build[0]}.x build on a driver ≥ "
                f"{MIN_DRIVER.get(build[0], '?')}); only kernels compiled at run time (torch.compile) may "
                f"need a driver for CUDA {t.built_with_cuda}",
            )
        )
    else:
        out.append(
            Finding(
                True,
                "torch's CUDA fits the driver",
                f"CUDA {t.built_with_cuda} build on a driver for CUDA ≤ {f.cuda_driver_version}",
            )
        )
    return out
