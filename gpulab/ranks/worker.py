"""What runs inside each rank that ``gpulab.launch`` starts: the trampoline between elastic's process and your function.

The launcher cannot hand a rank your function by name (a function defined in a notebook cell lives in the kernel's
``__main__``, which a new process does not have: that is why ``mp.spawn`` fails on it). So the function and its
arguments travel *by value*, pickled with cloudpickle, and ``run_rank`` — a module-level function that any process
can import — unpacks them and calls the function. Before that it does what torchrun's agent and a training script's
first lines would do: the notebook's current environment, the thread count, line-buffered output, the process group.
Taught in ``notebooks/04_ddp.ipynb``.
"""

from __future__ import annotations

import linecache
import os
import sys
import time
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import cloudpickle
import torch
import torch.distributed as dist

from .own_device import take_rank_device

__all__ = ["RankPlan", "run_rank", "pack", "unpack"]

# Variables the rank keeps although the notebook does not have them: elastic writes them for each rank.
_RANK_OWN_PREFIXES = ("TORCHELASTIC_",)


@dataclass(frozen=True)
class RankPlan:
    """Everything one rank needs besides the function: sent with it, by the launcher, to each process."""

    environ: dict[str, str]  # the notebook's environment at launch, plus RANK, WORLD_SIZE, MASTER_* ...
    threads: int  # torch.set_num_threads in the rank (OpenMP threads for CPU ops)
    backend: str | None  # "gloo" / "nccl": init_process_group before the function; None: the function does it
    timeout_s: float  # how long a collective waits for the other ranks before it fails
    stdout_path: str  # where this rank's output goes (the launcher copies it into the cell)
    stderr_path: str
    redirect_in_python: bool = False  # True where elastic does not redirect file descriptors (macOS, Windows)
    sources: dict[str, list[str]] = field(default_factory=dict)  # notebook cells' source, for tracebacks
    stack_path: str = ""  # where the watchdog's faulthandler dumps this rank's stack on SIGUSR1 ("" = no watchdog)
    device: str = "cpu"  # this rank's device as the launch plan decided it (``plan_ranks``; ``own_device``)


def pack(obj: Any) -> bytes:
    """Serialise by value (functions and classes from a notebook included): what crosses into and out of a rank."""
    return cloudpickle.dumps(obj)


def unpack(data: bytes) -> Any:
    """The object ``pack`` serialised (a function, its arguments or a result)."""
    return cloudpickle.loads(data)


def run_rank(payload: bytes, plan: RankPlan) -> bytes:
    """Run ``fn(*args, **kwargs)`` from ``payload`` in this rank; return ``(ready_time, result)`` packed.

    ``ready_time`` is the wall-clock time when this rank had its process group (the launcher reports the slowest).
    """
    _take_environ(plan.environ)
    if plan.stack_path:
        from .watchdog import arm

        arm(plan.stack_path)
    if plan.redirect_in_python:
        sys.stdout = open(plan.stdout_path, "a", buffering=1, encoding="utf-8", errors="replace")  # noqa: SIM115
        sys.stderr = open(plan.stderr_path, "a", buffering=1, encoding="utf-8", errors="replace")  # noqa: SIM115
    else:  # elastic pointed file descriptors 1 and 2 at the files; make Python flush every line into them
        for stream in (sys.stdout, sys.stderr):
            stream.reconfigure(line_buffering=True)
    for filename, lines in plan.sources.items():
        linecache.cache[filename] = (sum(map(len, lines)), None, lines, filename)
    torch.set_num_threads(plan.threads)
    take_rank_device(plan.device)
    if plan.backend is not None:
        _start_process_group(plan.backend, plan.device, plan.timeout_s)
    ready = time.time()
    fn, args, kwargs = unpack(payload)
    result = fn(*args, **kwargs)
    try:
        return pack((ready, result))
    except Exception as e:
        raise TypeError(
            f"rank {os.environ['RANK']}'s return value ({type(result).__name__}) cannot be sent back to "
            f"the notebook: {e}. Return plain data (numbers, lists, dicts, tensors, state_dicts)."
        ) from e


def _take_environ(environ: dict[str, str]) -> None:
    """Make this process's environment exactly the notebook's at launch time.

    The forkserver that forked this rank froze the environment of the moment it started; variables the notebook
    set since are added here, and variables it removed since (``CUDA_VISIBLE_DEVICES`` popped, say) are removed.
    """
    for name in list(os.environ):
        if name not in environ and not name.startswith(_RANK_OWN_PREFIXES):
            del os.environ[name]
    os.environ.update(environ)


def _start_process_group(backend: str, device: str, timeout_s: float) -> None:
    """What a DDP script's first lines do: pick this rank's GPU, where the launcher gave it one (NCCL), before
    ``init_process_group``; a rank on the CPU never touches CUDA."""
    if device.startswith("cuda"):
        torch.cuda.set_device(torch.device(device))
    dist.init_process_group(backend, timeout=timedelta(seconds=timeout_s))
