"""Run a function defined in a notebook cell on N ranks with one call: ``gpulab.launch(train, nprocs=2)``.

Built on ``torch.distributed.elastic`` — the engine behind torchrun — which owns the rank processes, stops the others
when one fails and records each rank's traceback. What this module adds is what a notebook needs:

- the function travels by value (cloudpickle) to a trampoline (``worker.run_rank``), so a cell's function works;
- ranks are forked by a fork server that imported torch but never ran CPU work (``server``), so they neither hang
  after the notebook's own matmuls nor pay for importing torch each time, and work after the notebook used CUDA;
- each rank sees exactly the variables torchrun would set (RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE,
  MASTER_ADDR, MASTER_PORT, ...) and its process group is started (gloo on CPU, NCCL with a GPU per rank), so the
  same function body runs under torchrun unchanged;
- a new port every launch: this process hosts the rendezvous store on a port the system picks (as torchrun's agent
  hosts it), so re-running the cell never meets "address already in use";
- output streams live into the cell, labelled ``[rank k]`` (``rank_output``); failures name the rank with its traceback
  (``failures``); the stop button stops every rank.
Taught in ``notebooks/04_ddp.ipynb``.
"""
from __future__ import annotations

import logging
import multiprocessing.connection
import os
import shutil
import signal
import sys
import tempfile
import threading
import time
import uuid
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Callable, Iterator

import psutil
import torch.distributed as dist

from ..core.arguments import seconds, whole_number
from ..core.compat import RunProcsResult, rank_error_files, rank_waitables, ranks_running, start_processes
from .failures import RankFailed, hint_for, read_failures
from .plan import choose_backend, plan_ranks
from .ports import open_store
from .rank_output import OutputRelay, RankLogs
from .server import _ensure_server, choose_start_method, server_state
from .watchdog import LaunchWatch
from .worker import RankPlan, pack, run_rank, unpack

__all__ = ["launch", "LaunchStats", "last_launch", "plan_ranks", "choose_backend", "default_threads_per_rank"]

_PUMP_S = 0.1  # while the ranks run, their output reaches the cell at least this often
_POLL_S = 0.05  # how often the wait loop looks where it cannot block (an unknown torch, ranks already gone)
_STOP_GRACE_S = 5  # after SIGTERM, how long a rank gets before SIGKILL
_EXIT_CODES_GRACE_S = 1.0  # once every rank has ended, how long elastic gets to collect their exit codes
_QUIET_LOGGERS = ("torch.distributed.elastic.multiprocessing.api", "torch.distributed.elastic.multiprocessing.errors", "torch.multiprocessing.spawn")
_last: LaunchStats | None = None


@dataclass(frozen=True)
class LaunchStats:
    """What the last launch did and how long it took (``gpulab.ranks.launcher.last_launch()``)."""

    nprocs: int
    backend: str | None
    start_method: str
    threads_per_rank: int
    master_port: int
    started_server: bool  # this launch started the fork server (its torch import is in ready_s)
    ready_s: float | None  # call -> every rank inside the function, process group up (None if a rank failed first)
    total_s: float  # call -> results back (or failure reported)
    why: str = ""  # why this backend and these devices (``plan_ranks``), in one sentence

    def __str__(self) -> str:
        ready = "n/a" if self.ready_s is None else f"{self.ready_s:.3f} s"
        server = ", fork server started by this launch" if self.started_server else ""
        return (f"{self.nprocs} ranks ({self.backend or 'no process group'}, {self.start_method}{server}, "
                f"{self.threads_per_rank} thread(s) each, port {self.master_port}): all ready after {ready}, "
                f"done after {self.total_s:.3f} s" + (f"\n{self.why}" if self.why else ""))

    def _repr_html_(self) -> str:
        from html import escape

        return f"<code>{escape(str(self))}</code>"


def last_launch() -> LaunchStats | None:
    """Timings and settings of this kernel's most recent ``launch`` (None before the first)."""
    return _last


def launch(fn: Callable[..., Any], nprocs: int = 2, args: tuple = (), kwargs: dict[str, Any] | None = None, *,
           all_ranks: bool = False, backend: str = "auto", init_process_group: bool = True, timeout_s: float = 60.0,
           threads_per_rank: int | None = None, start_method: str | None = None, watchdog: bool = True) -> Any:
    """Run ``fn(*args, **kwargs)`` in ``nprocs`` processes (ranks) and return rank 0's result (every rank's, in rank
    order, with ``all_ranks=True``).

    Each rank has torchrun's variables and, unless ``init_process_group=False``, its process group already started:
    ``backend="auto"`` is NCCL when every rank can have a GPU of its own (rank k on ``cuda:k``, its current
    device), else gloo with every rank on the CPU; ``last_launch()`` says why (``plan_ranks``). A collective that
    waits longer than ``timeout_s`` for the other ranks fails. Threads per rank: ``OMP_NUM_THREADS`` if set, else
    usable cores ÷ ranks. Raises ``RankFailed`` (elastic's ``ChildFailedError``) naming the first failing rank with
    its traceback; the other ranks are stopped. Interrupting the cell stops every rank. ``watchdog``: take every rank's stack
    before stopping them, and say which collective each waited in and which rank never arrived (``watchdog``).
    """
    global _last
    __tracebackhide__ = True  # IPython: the learner's cell, then the message; not the launcher's insides
    nprocs, timeout_s, threads_per_rank = _check(fn, nprocs, args, kwargs, timeout_s, threads_per_rank)
    method = choose_start_method(start_method)
    plan = plan_ranks(backend, nprocs) if init_process_group else None
    chosen_backend = plan.backend if plan else None
    threads = threads_per_rank or default_threads_per_rank(nprocs)
    payload = _pack_call(fn, tuple(args), dict(kwargs or {}))
    t0, wall0 = time.perf_counter(), time.time()
    started_server = method == "forkserver" and server_state().pid is None
    if method == "forkserver":
        _ensure_server()
    store = open_store(nprocs, timeout_s)
    root = tempfile.mkdtemp(prefix="gpulab-launch-")
    logs = RankLogs(root)
    files = logs.files(nprocs)
    run_id = uuid.uuid4().hex[:12]
    envs = {r: _torchrun_env(r, nprocs, store.port, threads, run_id) for r in range(nprocs)}
    sources = _notebook_sources()
    watch = LaunchWatch(root, nprocs, sources, enabled=watchdog)
    plans = {r: (payload, RankPlan({**os.environ, **envs[r]}, threads, chosen_backend, timeout_s, *files[r],
                                   redirect_in_python=sys.platform in ("darwin", "win32"), sources=sources,
                                   stack_path=watch.path(r), device=plan.devices[r] if plan else "cpu"))
             for r in range(nprocs)}
    relay = OutputRelay(files)
    ready_s, ctx = None, None
    try:
        with _quiet_elastic():
            with _signal_handlers_kept():
                ctx = start_processes(name="launch", entrypoint=run_rank, args=plans, envs=envs, logs_specs=logs,
                                      start_method=method)
            try:
                result = _wait(ctx, relay, watch)
            except BaseException as exc:  # KeyboardInterrupt (the stop button) or anything else: no rank outlives the cell
                stopped = isinstance(exc, KeyboardInterrupt) and watch.take(ctx)  # the stacks, before stopping them
                ctx.close(death_sig=signal.SIGTERM, timeout=_STOP_GRACE_S)
                relay.finish()
                if stopped:
                    print(watch.report({}, "you stopped the cell"), file=sys.stderr)
                print(f"[launch] stopped all {nprocs} ranks.", file=sys.stderr)
                raise
        relay.finish()
        if result.is_failed():
            root_cause, others = read_failures(result.failures, {r: os.path.join(root, str(r), "error.json")
                                                                  for r in range(nprocs)})
            hint = hint_for(root_cause.error + root_cause.traceback, timeout_s=timeout_s, backend=chosen_backend)
            hint = watch.hint(root_cause, others, hint, timeout_s)
            if not root_cause.error and root_cause.exitcode == 1:
                hint = hint or _unguarded_script_hint()
            raise RankFailed(root_cause, others, nprocs, hint, relay.recent_lines(root_cause.rank)) from None
        values = [result.return_values[r] for r in range(nprocs)]
        missing = [r for r, v in enumerate(values) if v is None]
        if missing:  # SystemExit(0) in the function: elastic's @record turns it into "returned None"
            raise RuntimeError(f"rank(s) {missing} ended with sys.exit() before the function returned, so there is "
                               f"no result to bring back. Return from the function instead of exiting.")
        unpacked = [unpack(v) for v in values]
        ready_s = max(ready for ready, _ in unpacked) - wall0
        results = [value for _, value in unpacked]
        return results if all_ranks else results[0]
    finally:
        del store
        shutil.rmtree(root, ignore_errors=True)
        _remove_error_files(ctx)
        _release_semaphores(ctx)
        ctx = None  # a failed launch's traceback keeps this frame, and so the context, alive
        _last = LaunchStats(nprocs, chosen_backend, method, threads, int(envs[0]["MASTER_PORT"]), started_server,
                            ready_s, time.perf_counter() - t0, plan.reason if plan else "")


def _release_semaphores(ctx: object) -> None:
    """Let go of elastic's per-rank result queues and its "finished" event now that the ranks are done.

    Each holds a semaphore that multiprocessing registers with its resource tracker when the start method is not
    fork, and unlinks when the object is freed. After a failed launch the learner's traceback keeps the context alive
    (IPython keeps the last one), so at kernel shutdown the tracker, stopped first, reported "There appear to be 9
    leaked semaphore objects to clean up at shutdown", and the late finalizers then failed with FileNotFoundError.
    """
    if ctx is None:
        return
    if hasattr(ctx, "_ret_vals"):
        ctx._ret_vals = {}
    if hasattr(ctx, "_worker_finished_event"):
        ctx._worker_finished_event = threading.Event()  # same interface, no semaphore


def _remove_error_files(ctx: object) -> None:
    """torch.multiprocessing gives each rank a ``pytorch-errorfile-*.pickle`` in the temporary folder, where a failing
    rank writes its traceback, and leaves the files of failed ranks there; their content has been read by now."""
    for path in rank_error_files(ctx):
        try:
            os.unlink(path)
        except OSError:
            pass  # never written: the rank did not fail


def default_threads_per_rank(nprocs: int) -> int:
    """``OMP_NUM_THREADS`` if set (torchrun honours it too), else usable cores ÷ ranks, at least 1."""
    raw = os.environ.get("OMP_NUM_THREADS", "").strip()
    if raw:
        if not raw.isdigit() or int(raw) < 1:
            raise ValueError(f"OMP_NUM_THREADS={raw!r} is not a whole number of threads ≥ 1; fix or unset it.")
        return int(raw)
    from ..machine.host import host_info

    return max(1, host_info().usable_cores // nprocs)


def _check(fn: Any, nprocs: Any, args: Any, kwargs: Any, timeout_s: Any, threads: Any) -> tuple[int, float, int | None]:
    """The arguments refused at the door, or ``nprocs``, ``timeout_s`` and ``threads`` as plain numbers."""
    if not callable(fn):
        raise TypeError(f"launch() runs a function in every rank; got {type(fn).__name__} {fn!r}. Pass the function "
                        f"itself, without calling it: launch(train, ...), not launch(train(), ...).")
    nprocs = whole_number(nprocs, "nprocs", minimum=1, what="how many processes (ranks) to start",
                          example="launch(train, nprocs=2)")
    if not isinstance(args, (tuple, list)):
        raise TypeError(f"args is the tuple of positional arguments for the function, like args=(data,) — note the "
                        f"comma for one argument; got {type(args).__name__} {args!r}.")
    if kwargs is not None and not isinstance(kwargs, dict):
        raise TypeError(f"kwargs is a dict of keyword arguments, like kwargs={{'epochs': 2}}; got {kwargs!r}.")
    timeout_s = seconds(timeout_s, "timeout_s", allow_zero=False, example="60 (how long a collective waits for the "
                        "other ranks)")
    if threads is not None:
        threads = whole_number(threads, "threads_per_rank", minimum=1, what="or None for cores ÷ ranks",
                               example="launch(train, 2, threads_per_rank=1)")
    return nprocs, timeout_s, threads


def _unguarded_script_hint() -> str:
    """Ranks re-import the main script before running anything (multiprocessing's rule for spawn and forkserver)."""
    main = sys.modules.get("__main__")
    path = getattr(main, "__file__", None)
    if not path:
        return ""
    return (f"Hint: each rank first re-imports your script {os.path.basename(path)!r}, so a launch at its top level "
            f"runs again inside every rank and fails there (the rank's message went to the terminal). Put the code "
            f"that launches under `if __name__ == \"__main__\":`.")


def _pack_call(fn: Callable[..., Any], args: tuple, kwargs: dict[str, Any]) -> bytes:
    try:
        return pack((fn, args, kwargs))
    except Exception as e:
        raise TypeError(f"the function or its arguments cannot be copied into the ranks: {type(e).__name__}: {e}. "
                        f"Each rank gets a copy of everything it is given; open files, locks, threads, generators "
                        f"and live connections cannot be copied — create them inside the function instead.") from e


def _torchrun_env(rank: int, nprocs: int, port: int, threads: int, run_id: str) -> dict[str, str]:
    """The variables torchrun's agent sets for a worker on one node (``LocalElasticAgent._start_workers``)."""
    return {"RANK": str(rank), "LOCAL_RANK": str(rank), "GROUP_RANK": "0", "ROLE_RANK": str(rank),
            "ROLE_NAME": "default", "LOCAL_WORLD_SIZE": str(nprocs), "WORLD_SIZE": str(nprocs),
            "GROUP_WORLD_SIZE": "1", "ROLE_WORLD_SIZE": str(nprocs), "MASTER_ADDR": "127.0.0.1",
            "MASTER_PORT": str(port), "TORCHELASTIC_RESTART_COUNT": "0", "TORCHELASTIC_MAX_RESTARTS": "0",
            "TORCHELASTIC_RUN_ID": run_id, "TORCHELASTIC_USE_AGENT_STORE": "True",
            "TORCH_NCCL_ASYNC_ERROR_HANDLING": os.environ.get("TORCH_NCCL_ASYNC_ERROR_HANDLING", "1"),
            "OMP_NUM_THREADS": str(threads)}


def _notebook_sources(limit_bytes: int = 1 << 20) -> dict[str, list[str]]:
    """Source lines of the notebook's cells (IPython keeps them in ``linecache`` with no file behind them).

    Sent to the ranks so that a traceback from a rank shows the lines of your cell, not only their numbers.
    """
    import linecache

    out, size = {}, 0
    for name, entry in list(linecache.cache.items()):
        if len(entry) == 4 and entry[1] is None and not name.startswith("<frozen"):
            size += entry[0]
            if size > limit_bytes:
                break
            out[name] = entry[2]
    return out


def _wait(ctx: Any, relay: OutputRelay, watch: LaunchWatch | None = None) -> RunProcsResult:
    """Block until elastic has news — a rank process ended, or a rank's return value arrived — and copy the ranks'
    output into the cell every ``_PUMP_S`` meanwhile. Between those the parent sleeps in ``select``: while the ranks
    work it spends well under 1 % of a core (``benchmarks/bench_launch.py`` measures it)."""
    pids = list(ctx.pids().values())
    all_gone_at = None
    while True:
        if watch is not None:
            watch.before_poll(ctx)  # ctx.wait stops the other ranks as soon as it sees a failure: look first
        result = ctx.wait(0)
        relay.pump()
        if result is not None:
            return result
        waitables = rank_waitables(ctx)
        # Every rank ended, yet not all returned: a rank swallowed SIGINT or called os._exit(0). elastic would wait
        # for those return values forever; the exit codes reach elastic a moment after the processes are gone.
        running = ranks_running(ctx)
        if all_gone_at is None and (running == 0 or running is None and not any(_alive(p) for p in pids)):
            all_gone_at = time.monotonic()
        if all_gone_at is not None and time.monotonic() - all_gone_at > _EXIT_CODES_GRACE_S:
            raise RuntimeError("every rank ended without returning from the function (exit code 0): a rank was "
                               "interrupted (SIGINT) or called os._exit(0). Nothing to bring back.")
        if waitables and all_gone_at is None:
            multiprocessing.connection.wait(waitables, timeout=_PUMP_S)
        else:  # a torch whose context compat cannot read, or ranks gone: look again shortly
            time.sleep(_POLL_S)


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


@contextmanager
def _quiet_elastic() -> Iterator[None]:
    """elastic logs each failure and each stopped process; the launcher's own error says it all, once."""
    loggers = [logging.getLogger(n) for n in _QUIET_LOGGERS]
    saved = [lg.disabled for lg in loggers]
    for lg in loggers:
        lg.disabled = True
    try:
        yield
    finally:
        for lg, was in zip(loggers, saved):
            lg.disabled = was


@contextmanager
def _signal_handlers_kept() -> Iterator[None]:
    """elastic's ``start()`` replaces this process's SIGINT/SIGTERM/... handlers (right for torchrun, wrong for a
    notebook kernel, whose stop button must keep raising KeyboardInterrupt): put them back once ranks are started."""
    names = ("SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT")
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    saved = {getattr(signal, n): signal.getsignal(getattr(signal, n)) for n in names if hasattr(signal, n)}
    try:
        yield
    finally:
        for sig, handler in saved.items():
            if handler is not None:
                signal.signal(sig, handler)
