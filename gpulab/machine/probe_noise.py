"""Keeps two messages that a machine without a CUDA driver prints for nothing out of a notebook's outputs (a probe).

On a CUDA build of torch run where no CUDA driver exists (a laptop, a CPU-only container):

- importing ``torch.utils.benchmark`` imports ``torch.utils.cpp_extension``, which logs "No CUDA runtime is found,
  using CUDA_HOME=…" whenever an ``nvcc`` or ``/usr/local/cuda`` is installed;
- every ``torch.profiler`` run makes kineto, the profiler's C++ library, write its start and stop markers
  (``USDT: … profiler_start``) and "gpuGetDeviceCount failed with code 35" (CUDA's "insufficient driver") to the
  process's stderr, which Jupyter shows under the cell.

Neither says anything about the learner's code. ``quiet_cuda_probes()`` drops exactly the first message with a
logging filter on its logger, and raises kineto's log threshold (``KINETO_LOG_LEVEL``, read when the profiler first
starts) above its markers. It does both only where no CUDA driver exists, and leaves ``KINETO_LOG_LEVEL`` alone when
it is already set. Python warnings and exceptions from torch are untouched, and on a machine with a driver nothing
changes. ``%load_ext gpulab`` calls it. Taught in ``notebooks/01_cpu_gpu_transfer.ipynb`` and ``05_live_monitor``.
"""

from __future__ import annotations

import ctypes.util
import logging
import os
from collections.abc import MutableMapping

__all__ = ["NO_RUNTIME", "KINETO_QUIET", "cuda_driver_present", "quiet_cuda_probes"]

NO_RUNTIME = "No CUDA runtime is found"  # the start of cpp_extension's message (torch 2.1 … 2.14)
KINETO_QUIET = "6"  # kineto's levels: 0 verbose, 1 info, 2 warning, 3 stage, 4 error, 5 its USDT markers
_LOGGER = "torch.utils.cpp_extension"


class _NoRuntimeFilter(logging.Filter):
    """Drops cpp_extension's "No CUDA runtime is found" record and nothing else."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith(NO_RUNTIME)


def cuda_driver_present() -> bool:
    """Whether this machine has a CUDA driver: its device node, or a libcuda the loader can find. Loads nothing."""
    return os.path.exists("/dev/nvidiactl") or ctypes.util.find_library("cuda") is not None


def quiet_cuda_probes(
    *, driver_present: bool | None = None, environ: MutableMapping[str, str] | None = None
) -> list[str]:
    """Silence the two driver probes described above where no CUDA driver exists; returns what it did, in words.

    ``driver_present`` defaults to ``cuda_driver_present()``; ``environ`` to ``os.environ`` (tests pass their own).
    Calling it again adds nothing.
    """
    env = os.environ if environ is None else environ
    if cuda_driver_present() if driver_present is None else driver_present:
        return []
    done = []
    logger = logging.getLogger(_LOGGER)
    if not any(isinstance(f, _NoRuntimeFilter) for f in logger.filters):
        logger.addFilter(_NoRuntimeFilter())
        done.append(f"{_LOGGER}: its '{NO_RUNTIME}' message is dropped")
    if "KINETO_LOG_LEVEL" not in env:
        env["KINETO_LOG_LEVEL"] = KINETO_QUIET
        done.append(f"KINETO_LOG_LEVEL={KINETO_QUIET}: the profiler's C++ log is quiet")
    return done
