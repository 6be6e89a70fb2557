"""What ``gpulab.launch`` will do, decided and validated before any process starts: a ``LaunchPlan``.

A launch mixes decisions (how many ranks, which backend, each rank's device, threads per rank, how ranks start, each
rank's environment, which ports the store may take) with actions (start the ranks, wait, stop them, clean up). The
decisions live here, as one frozen value built and validated once by ``plan_launch``, so that a wrong argument is
refused before anything starts and a test can read what a launch would do on 0, 1, 2 or 8 GPUs without starting a
process (the GPU count is a fact the plan reads: ``machine.cuda.cuda_gpu_count``). ``runner`` carries a plan out.
Taught in ``notebooks/04_ddp.ipynb``.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ..core.arguments import seconds, whole_number
from .fork_server import choose_start_method
from .plan import plan_ranks
from .ports import store_ports
from .worker import pack

__all__ = ["LaunchPlan", "plan_launch", "default_threads_per_rank"]


@dataclass(frozen=True)
class LaunchPlan:
    """One launch, decided: built by ``plan_launch``, carried out by ``runner.run_plan``.

    ``environments`` holds each rank's torchrun variables except ``MASTER_PORT``: the store's port is known only once
    the store listens on one of ``ports`` (``0``: the system picks), so ``environment(rank, port)`` adds it.
    """

    payload: bytes  # the function and its arguments, packed by value (cloudpickle)
    world_size: int  # how many ranks (torch.distributed's word: WORLD_SIZE)
    all_ranks: bool
    backend: str | None  # the process group each rank starts; None: init_process_group=False
    devices: tuple[str, ...]  # each rank's device: "cuda:k" only where every rank has a GPU of its own, else "cpu"
    why: str  # why this backend and these devices, one sentence ("" without a process group)
    threads_per_rank: int
    start_method: str  # "forkserver" (Linux) or "spawn"
    timeout_s: float
    watchdog: bool
    ports: tuple[int, ...]  # where the rendezvous store may listen, in order (``ports.store_ports``)
    run_id: str
    environments: tuple[Mapping[str, str], ...]  # per rank, torchrun's variables without MASTER_PORT

    def environment(self, rank: int, port: int) -> dict[str, str]:
        """Rank ``rank``'s torchrun variables with the store's ``port``."""
        return {**self.environments[rank], "MASTER_PORT": str(port)}


def plan_launch(
    fn: Callable[..., Any],
    world_size: int = 2,
    args: tuple = (),
    kwargs: dict[str, Any] | None = None,
    *,
    all_ranks: bool = False,
    backend: str = "auto",
    init_process_group: bool = True,
    timeout_s: float = 60.0,
    threads_per_rank: int | None = None,
    watchdog: bool = True,
) -> LaunchPlan:
    """Validate ``launch``'s arguments and decide everything it will do (same arguments, same messages); start nothing.

    Each rank's device is the launcher's decision (``plan_ranks`` for ``backend``) with or without a process group,
    so a function run through ``own_device.on_own_device`` computes where the plan put it: ``backend="gloo"`` keeps
    every rank on the CPU even where GPUs are.
    """
    world_size, timeout_s, threads_per_rank = _validated(fn, world_size, args, kwargs, timeout_s, threads_per_rank)
    method = choose_start_method()
    decision = plan_ranks(backend, world_size)
    threads = threads_per_rank or default_threads_per_rank(world_size)
    payload = _pack_call(fn, tuple(args), dict(kwargs or {}))
    ports = tuple(store_ports())
    run_id = uuid.uuid4().hex[:12]
    environments = tuple(_torchrun_env(r, world_size, threads, run_id) for r in range(world_size))
    return LaunchPlan(
        payload,
        world_size,
        all_ranks,
        decision.backend if init_process_group else None,
        decision.devices,
        decision.reason if init_process_group else "",
        threads,
        method,
        timeout_s,
        watchdog,
        ports,
        run_id,
        environments,
    )


def default_threads_per_rank(world_size: int) -> int:
    """``OMP_NUM_THREADS`` if set (torchrun honours it too), else usable cores ÷ ranks, at least 1."""
    raw = os.environ.get("OMP_NUM_THREADS", "").strip()
    if raw:
        if not raw.isdigit() or int(raw) < 1:
            raise ValueError(f"OMP_NUM_THREADS={raw!r} is not a whole number of threads ≥ 1; fix or unset it.")
        return int(raw)
    from ..machine.host import host_info

    return max(1, host_info().usable_cores // world_size)


def _validated(
    fn: Any, world_size: Any, args: Any, kwargs: Any, timeout_s: Any, threads: Any
) -> tuple[int, float, int | None]:
    """The arguments refused at the door, or ``world_size``, ``timeout_s`` and ``threads`` as plain numbers."""
    if not callable(fn):
        raise TypeError(
            f"launch() runs a function in every rank; got {type(fn).__name__} {fn!r}. Pass the function "
            f"itself, without calling it: launch(train, ...), not launch(train(), ...)."
        )
    world_size = whole_number(
        world_size,
        "world_size",
        minimum=1,
        what="how many processes (ranks) to start",
        example="launch(train, world_size=2)",
    )
    if not isinstance(args, (tuple, list)):
        raise TypeError(
            f"args is the tuple of positional arguments for the function, like args=(data,) — note the "
            f"comma for one argument; got {type(args).__name__} {args!r}."
        )
    if kwargs is not None and not isinstance(kwargs, dict):
        raise TypeError(f"kwargs is a dict of keyword arguments, like kwargs={{'epochs': 2}}; got {kwargs!r}.")
    timeout_s = seconds(
        timeout_s, "timeout_s", allow_zero=False, example="60 (how long a collective waits for the other ranks)"
    )
    if threads is not None:
        threads = whole_number(
            threads,
            "threads_per_rank",
            minimum=1,
            what="or None for cores ÷ ranks",
            example="launch(train, 2, threads_per_rank=1)",
        )
    return world_size, timeout_s, threads


def _pack_call(fn: Callable[..., Any], args: tuple, kwargs: dict[str, Any]) -> bytes:
    try:
        return pack((fn, args, kwargs))
    except Exception as e:
        raise TypeError(
            f"the function or its arguments cannot be copied into the ranks: {type(e).__name__}: {e}. "
            f"Each rank gets a copy of everything it is given; open files, locks, threads, generators "
            f"and live connections cannot be copied — create them inside the function instead."
        ) from e


def _torchrun_env(rank: int, world_size: int, threads: int, run_id: str) -> dict[str, str]:
    """The variables torchrun's agent sets for a worker on one node (``LocalElasticAgent._start_workers``), but
    ``MASTER_PORT``, which ``LaunchPlan.environment`` adds once the store listens."""
    return {
        "RANK": str(rank),
        "LOCAL_RANK": str(rank),
        "GROUP_RANK": "0",
        "ROLE_RANK": str(rank),
        "ROLE_NAME": "default",
        "LOCAL_WORLD_SIZE": str(world_size),
        "WORLD_SIZE": str(world_size),
        "GROUP_WORLD_SIZE": "1",
        "ROLE_WORLD_SIZE": str(world_size),
        "MASTER_ADDR": "127.0.0.1",
        "TORCHELASTIC_RESTART_COUNT": "0",
        "TORCHELASTIC_MAX_RESTARTS": "0",
        "TORCHELASTIC_RUN_ID": run_id,
        "TORCHELASTIC_USE_AGENT_STORE": "True",
        "TORCH_NCCL_ASYNC_ERROR_HANDLING": os.environ.get("TORCH_NCCL_ASYNC_ERROR_HANDLING", "1"),
        "OMP_NUM_THREADS": str(threads),
    }
