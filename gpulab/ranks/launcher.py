"""Run a function defined in a notebook cell on N ranks with one call: ``gpulab.launch(train, world_size=2)``.

Built on ``torch.distributed.elastic`` — the engine behind torchrun — which owns the rank processes, stops the others
when one fails and records each rank's traceback. What this package adds is what a notebook needs:

- the function travels by value (cloudpickle) to a trampoline (``worker.run_rank``), so a cell's function works;
- ranks are forked by a fork server that imported torch but never ran CPU work (``fork_server``), so they neither
  hang after the notebook's own matmuls nor pay for importing torch each time, and work after the notebook used CUDA;
- each rank sees exactly the variables torchrun would set (RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE,
  MASTER_ADDR, MASTER_PORT, ...) and its process group is started (gloo on CPU, NCCL with a GPU per rank), so the
  same function body runs under torchrun unchanged;
- a new port every launch: this process hosts the rendezvous store on a port the system picks (as torchrun's agent
  hosts it), so re-running the cell never meets "address already in use";
- output streams live into the cell, labelled ``[rank k]`` (``rank_output``); failures name the rank with its
  traceback (``failures``); the stop button stops every rank.

``launch`` first decides everything and validates it (``launch_plan.plan_launch``: a ``LaunchPlan`` that tests read
without starting a process), then carries the plan out (``runner.run_plan``). Taught in ``notebooks/04_ddp.ipynb``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .failures import RankFailed
from .launch_plan import LaunchPlan, default_threads_per_rank, plan_launch
from .plan import choose_backend, plan_ranks
from .runner import LaunchStats, last_launch, run_plan

__all__ = [
    "launch",
    "LaunchStats",
    "last_launch",
    "plan_ranks",
    "choose_backend",
    "default_threads_per_rank",
    "plan_launch",
    "LaunchPlan",
]


def launch(
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
) -> Any:
    """Run ``fn(*args, **kwargs)`` in ``world_size`` processes (ranks) and return rank 0's result (every rank's, in rank
    order, with ``all_ranks=True``).

    Each rank has torchrun's variables and, unless ``init_process_group=False``, its process group already started:
    ``backend="auto"`` is NCCL when every rank can have a GPU of its own (rank k on ``cuda:k``, its current
    device), else gloo with every rank on the CPU; ``last_launch()`` says why (``plan_ranks``). A collective that
    waits longer than ``timeout_s`` for the other ranks fails. Threads per rank: ``OMP_NUM_THREADS`` if set, else
    usable cores ÷ ranks. Raises ``RankFailed`` (elastic's ``ChildFailedError``) naming the first failing rank with
    its traceback; the other ranks are stopped. Interrupting the cell stops every rank. ``watchdog``: take every
    rank's stack before stopping them, and say which collective each waited in and which rank never arrived
    (``watchdog``). Every argument is validated before any process starts (``plan_launch``).
    """
    __tracebackhide__ = True  # IPython: the learner's cell, then the message; not the launcher's insides
    plan = plan_launch(
        fn,
        world_size,
        args,
        kwargs,
        all_ranks=all_ranks,
        backend=backend,
        init_process_group=init_process_group,
        timeout_s=timeout_s,
        threads_per_rank=threads_per_rank,
        watchdog=watchdog,
    )
    try:
        return run_plan(plan)
    except RankFailed as failure:  # shown from here, as raised by launch: the runner's frames are no lesson
        raise failure.with_traceback(None) from None
