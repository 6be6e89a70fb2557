"""gpulab: helpers for the notebook chapters that teach putting PyTorch work on GPUs.

The top level holds the verbs a learner types in the chapters, grouped by chapter; everything else is reached at its
subpackage, whose names read as the course's contents (floor by floor: each imports only from the floors above it
in this list, ``tests/test_layers.py``):

    gpulab.core          units, tables, settings, readings, verdicts, argument validation, CUDA_VISIBLE_DEVICES's
                         grammar (pure: the standard library only)
    gpulab.reservations  who holds which GPU: the lock files that placement, checkup and server share
    gpulab.machine       NVML reader, described (simulated) GPUs, which machine a learner meant, inventory, host,
                         software, CUDA state and the line that started it, the one door to private torch APIs (compat)
    gpulab.workload      the digits data, models and training loop the chapters share
    gpulab.measure       timing, transfers, memory sizing
    gpulab.placement     the guarded setter, explain, selection, reserve_gpus, the picker
    gpulab.monitoring    the live monitor
    gpulab.ranks         ranks from a notebook cell (the launcher, %%ranks), each rank's device, DDP speed
    gpulab.dataparallel  DataParallel by hand, its wrappers, throughput and GPU footprint
    gpulab.checkup       the environment report and its checklist, the GPU cells' recordings
    gpulab.server        the whole server's GPUs and who holds them (the watch view)
    gpulab.lightning     Lightning's old Trainer flags translated, the monitor callback, the fork/OpenMP experiment
    gpulab.scaling       when a second device pays: a DDP step predicted, measured and swept
    gpulab.notebook      the magics (%%gpu, %%ranks), short tracebacks, the shell demo
    gpulab.exercises     the checkers behind each chapter's exercises (gpulab.check)

Names are imported on first use (module ``__getattr__``), so ``import gpulab`` loads neither torch, ipywidgets,
IPython nor matplotlib — a worker process that imports it pays for nothing it does not use — and initialises neither
NVML nor CUDA. It costs ≤ 10 ms (``benchmarks/bench_import.py``): all it does is set a watch for ``torch.cuda``'s
import (``machine.cuda_watch``), so that the line that starts CUDA can be named.
"""

from __future__ import annotations

import importlib
import sys

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (2 ms); checkers read the name as True
if TYPE_CHECKING:
    from typing import Any

__version__ = "0.1.0"

# name -> module that defines it, in the order the chapters teach them
_EXPORTS: dict[str, str] = {
    # course settings and notebook set-up (every chapter)
    "fast_mode": "core.settings",
    "full_or_fast": "core.settings",
    "format_bytes": "core.units",
    "format_seconds": "core.units",
    "load_ipython_extension": "notebook.magics",
    # 00 setup: what hardware is here
    "environment_report": "checkup.report",
    "devices": "machine.inventory",
    "cuda_gpu_count": "machine.cuda",
    "cuda_state": "machine.cuda",
    "SimulatedGpuReader": "machine.simulated",
    # 01 CPU <-> GPU transfer
    "bandwidth_sweep": "measure.transfer",
    "module_size": "measure.sizing",
    "allocated_bytes": "measure.sizing",
    # 02 choosing GPUs
    "parse_visible_devices": "core.visible_text",
    "visible_map": "core.visible",
    "set_visible_devices": "placement.setter",
    "patched_environ": "placement.setter",
    "explain": "placement.device_rules",
    "choose_gpus": "placement.selection",
    "NoFreeGpu": "placement.selection",
    "reserve_gpus": "placement.reservation",
    "GpuPicker": "placement.picker",
    "run_shell": "notebook.shell",
    # 04 DDP: ranks from a notebook cell
    "launch": "ranks.launcher",
    "warm_up_launcher": "ranks.fork_server",
    "rank_speedup": "ranks.speed",
    # 05 live monitor
    "monitor": "monitoring.live_monitor",
    # 06 Lightning's device flags, then and now
    "translate_trainer": "lightning.flags",
    "trainer_kwargs": "lightning.trainer_args",
    "MonitorCallback": "lightning.callback",
    "fork_experiment": "lightning.fork_hang",
    "autotune_comparison": "measure.autotune",
    # the exercises at the end of every chapter
    "check": "exercises.check",
}

__all__ = list(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'gpulab' has no attribute {name!r}")
    try:
        value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    except ModuleNotFoundError as exc:  # a Python without gpulab's packages: say which Python to use
        from .core.dependencies import missing_dependency, missing_dependency_message

        missing = missing_dependency(exc)
        if missing is None:
            raise
        root = __import__("pathlib").Path(__file__).resolve().parents[1]
        raise ModuleNotFoundError(missing_dependency_message(missing, sys.executable, root), name=missing) from None

    globals()[name] = value  # later lookups skip __getattr__
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


def _watch_cuda_start() -> None:
    """Record the first call that starts CUDA in this process, as the learner's line (``machine.cuda_start``): a
    watch (``machine.cuda_watch``) that costs this import almost nothing waits for ``torch.cuda``'s."""
    from .machine.cuda_watch import install

    install()


_watch_cuda_start()
