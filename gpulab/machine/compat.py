"""The one door to private and version-dependent APIs of torch and of Python's multiprocessing (imports them lazily).

gpulab otherwise uses public APIs only. What it needs beyond them is named here, with the versions it was read in
and tested on (``KNOWN_TORCH``; ``tests/machine/test_compat.py`` runs on each): elastic's process contexts (which rank
processes and return values can be waited on), elastic's classes the launcher builds on, PyTorch's own device-index
parser, the queue of calls made as CUDA starts, the bundled cuDNN's version, torch.compile's wrapper class, and the
fork server's state (Python 3.14 makes ``forkserver`` the default start method on Linux; its state has no public
API). Every function degrades to ``None`` (or does nothing) where an attribute is missing, so a torch this module
does not know still runs, a little slower or with less said. Nothing is imported until a name is used: ``import
gpulab`` stays light.
"""

from __future__ import annotations

import importlib
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # loaded on first use by __getattr__ below, so that importing compat never imports torch
    from torch.distributed.elastic.multiprocessing import LogsDest, LogsSpecs, RunProcsResult, Std, start_processes
    from torch.distributed.elastic.multiprocessing.errors import ChildFailedError, ProcessFailure

__all__ = [
    "KNOWN_TORCH",
    "rank_waitables",
    "ranks_running",
    "rank_processes",
    "rank_error_files",
    "release_rank_queues",
    "cuda_device_index",
    "cuda_error_class",
    "ACCELERATOR_ERROR_SINCE",
    "cudnn_version_int",
    "compiled_module_type",
    "forkserver_pid",
    "forkserver_preload",
    "stop_forkserver",
    "stop_resource_tracker",
    "start_processes",
    "RunProcsResult",
    "LogsSpecs",
    "LogsDest",
    "Std",
    "ChildFailedError",
    "ProcessFailure",
    "cuda_lazy_init",
    "at_cuda_start",
    "ipython_cell_number",
]

# torch releases (major, minor) whose private attributes below were read and tested: 2.14 is the course's,
# 2.11 the oldest supported (make test-compat).
KNOWN_TORCH = ((2, 11), (2, 14))

# elastic's names the launcher builds on: public in torch.distributed.elastic, but they moved between releases
# (LogsSpecs arrived in 2.3), so they are reached through here.
_ELASTIC = "torch.distributed.elastic.multiprocessing"
_HOMES = {
    "start_processes": _ELASTIC,
    "RunProcsResult": _ELASTIC,
    "LogsSpecs": _ELASTIC,
    "LogsDest": _ELASTIC,
    "Std": _ELASTIC,
    "ChildFailedError": f"{_ELASTIC}.errors",
    "ProcessFailure": f"{_ELASTIC}.errors",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value


def rank_waitables(ctx: Any) -> list[Any] | None:
    """What a launcher can block on until elastic's ``MultiprocessContext`` has news: the sentinel of every rank
    process still running, and the return-value pipe of every rank whose value has not been collected yet.

    ``None`` when the context does not have the attributes read in 2.11-2.14 (``_pc.sentinels``, ``_ret_vals``,
    ``_return_values``): the caller then polls on a timer.
    """
    pc = getattr(ctx, "_pc", None)
    sentinels = getattr(pc, "sentinels", None)
    queues = getattr(ctx, "_ret_vals", None)
    collected = getattr(ctx, "_return_values", None)
    if not isinstance(sentinels, dict) or not isinstance(queues, dict) or not isinstance(collected, dict):
        return None
    readers = [getattr(q, "_reader", None) for r, q in queues.items() if r not in collected]
    if any(r is None or not hasattr(r, "fileno") for r in readers):
        return None
    return [*sentinels, *readers]


def ranks_running(ctx: Any) -> int | None:
    """How many rank processes of elastic's context have not been joined yet (``None`` where unknown)."""
    sentinels = getattr(getattr(ctx, "_pc", None), "sentinels", None)
    return len(sentinels) if isinstance(sentinels, dict) else None


def rank_processes(ctx: Any) -> list[Any] | None:
    """elastic's rank processes (``multiprocessing.Process``, rank order; ``_pc.processes`` in 2.11-2.14), or
    ``None``."""
    procs = getattr(getattr(ctx, "_pc", None), "processes", None)
    return list(procs) if isinstance(procs, list) else None


def rank_error_files(ctx: Any) -> list[str]:
    """The ``pytorch-errorfile-*.pickle`` files torch.multiprocessing gave each rank (empty where unknown)."""
    return [p for p in getattr(getattr(ctx, "_pc", None), "error_files", None) or [] if p]


def release_rank_queues(ctx: Any) -> None:
    """Let go of elastic's per-rank result queues (``_ret_vals``) and its "finished" event
    (``_worker_finished_event``, 2.11-2.14) once the ranks are done: each holds a semaphore. Missing: nothing done.

    Multiprocessing registers those semaphores with its resource tracker when the start method is not fork, and
    unlinks them when the objects are freed. After a failed launch the learner's traceback keeps the context alive
    (IPython keeps the last one), so at kernel shutdown the tracker, stopped first, reported "There appear to be 9
    leaked semaphore objects to clean up at shutdown", and the late finalizers then failed with FileNotFoundError.
    """
    import threading

    if ctx is None:
        return
    if hasattr(ctx, "_ret_vals"):
        ctx._ret_vals = {}
    if hasattr(ctx, "_worker_finished_event"):
        ctx._worker_finished_event = threading.Event()  # same interface, no semaphore


def cuda_device_index(device: Any) -> int:
    """PyTorch's own parser of a CUDA device argument (``torch.cuda._utils._get_device_index``), with its messages."""
    from torch.cuda._utils import _get_device_index

    return _get_device_index(device)


# torch.AcceleratorError, a RuntimeError subclass that carries the CUDA error code, came with torch 2.8.0
# (pytorch/pytorch#152023). From then on a failed CUDA runtime call ("CUDA error: invalid device ordinal") raises it
# (seen with 2.11 on an H100, evidence/2026-11-26-h100-80gb-hbm3.json); before, a plain RuntimeError. Errors that torch
# checks itself ("No CUDA GPUs are available", "Unexpected error from cudaGetDeviceCount()") stay RuntimeError.
ACCELERATOR_ERROR_SINCE = (2, 8)


def _release(version: str) -> tuple[int, int] | None:
    try:
        major, minor = (int(p) for p in version.split("+")[0].split(".")[:2])
    except ValueError:
        return None
    return major, minor


def cuda_error_class(version: str | None = None) -> str:
    """The class PyTorch raises for a failed CUDA runtime call: ``"AcceleratorError"`` from torch 2.8 on, else
    ``"RuntimeError"``. ``version`` is a torch release such as ``"2.11.0+cu130"``; default: the installed torch, asked
    whether it has ``torch.AcceleratorError`` (a CPU build has the class too, though it never reaches CUDA)."""
    if version is None:
        import torch

        return "AcceleratorError" if isinstance(getattr(torch, "AcceleratorError", None), type) else "RuntimeError"
    release = _release(version) if isinstance(version, str) else None
    if release is None:
        raise ValueError(
            f"torch_version={version!r} is not a torch release: give it as torch.__version__ prints it, "
            "e.g. '2.11.0' or '2.11.0+cu130'."
        )
    return "AcceleratorError" if release >= ACCELERATOR_ERROR_SINCE else "RuntimeError"


def cudnn_version_int() -> int | None:
    """The bundled cuDNN's version number, asked of the library without the check that starts CUDA (``None`` if
    unknown). ``torch.backends.cudnn.version()`` would call ``torch.cuda.is_available()`` first."""
    try:
        from torch._C import _cudnn

        return int(_cudnn.getVersionInt()) or None
    except (ImportError, AttributeError, RuntimeError):
        return None


def compiled_module_type() -> type | None:
    """torch.compile's wrapper class, if torch.compile has been imported in this process (else nothing is one)."""
    eval_frame = sys.modules.get("torch._dynamo.eval_frame")
    return getattr(eval_frame, "OptimizedModule", None)


def _forkserver() -> Any:
    import multiprocessing.forkserver

    return multiprocessing.forkserver._forkserver


def forkserver_pid() -> int | None:
    """The pid of this process's fork server, ``None`` before it starts."""
    return getattr(_forkserver(), "_forkserver_pid", None)


def forkserver_preload() -> tuple[str, ...]:
    """The modules the fork server imports before forking (``set_forkserver_preload``)."""
    return tuple(getattr(_forkserver(), "_preload_modules", None) or ())


def stop_forkserver() -> None:
    """multiprocessing's own stop of the fork server (used by its tests; there is no public API)."""
    if forkserver_pid() is not None:
        _forkserver()._stop()


def stop_resource_tracker() -> None:
    """Stop multiprocessing's resource tracker: closes its pipe, so it exits, and waits for it."""
    from multiprocessing import resource_tracker

    stop = getattr(resource_tracker._resource_tracker, "_stop", None)
    if stop is not None:
        stop()


def cuda_lazy_init(torch_cuda: Any) -> Any:
    """``torch.cuda._lazy_init``, where every CUDA context starts (read in 2.11-2.14; ``None`` if missing).

    PyTorch's C++ side reaches it by name on the module (``torch::utils::device_lazy_init``), so a replacement set
    on ``torch.cuda`` sees ``.cuda()`` and ``torch.ones(..., device="cuda")`` too (``cuda_start``)."""
    found = getattr(torch_cuda, "_lazy_init", None)
    return found if callable(found) else None


def at_cuda_start(torch_cuda: Any, call: Any) -> bool:
    """Have ``call()`` run as CUDA starts in this process, inside ``torch.cuda._lazy_init`` before any tensor is made
    (now, if CUDA has started): ``torch.cuda._lazy_call``, which PyTorch's own lazy seeding uses (read in 2.11-2.14).
    An exception from ``call`` fails that CUDA start, and every later one, as ``DeferredCudaCallError`` quoting it.
    False where the function is missing (nothing is queued)."""
    lazy_call = getattr(torch_cuda, "_lazy_call", None)
    if not callable(lazy_call):
        return False
    lazy_call(call)
    return True


def ipython_cell_number(filename: str) -> int | None:
    """The execution count of the IPython cell compiled under ``filename`` (``/tmp/ipykernel_…/123.py``), ``None``
    for a file or outside IPython. IPython's compiler keeps the map (``format_code_name``, IPython ≥ 8, which its
    tracebacks use to print "Cell In[7]")."""
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None and hasattr(ipython, "get_ipython") else None
    name = getattr(getattr(shell, "compile", None), "format_code_name", None)
    label = name(filename) if callable(name) else None
    if not label or len(label) != 2 or not str(label[1]).startswith("In["):
        return None
    try:
        return int(str(label[1])[3:-1])
    except ValueError:
        return None
