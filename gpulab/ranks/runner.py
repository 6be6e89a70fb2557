"""Carry out a ``LaunchPlan``: start the ranks, wait for them, stop them all on a failure or the stop button, clean up.

Everything the launch decides is in the plan (``launch_plan``); this module only acts on it, on
``torch.distributed.elastic``'s process context: the fork server (``fork_server``), the rendezvous store (``ports``),
each rank's log files and their relay into the cell (``rank_output``), the watchdog's stacks (``watchdog``), and the
failing rank's traceback (``failures``). ``last_launch()`` says what the last run did and how long it took.
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
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import psutil

from ..machine.compat import (
    RunProcsResult,
    rank_error_files,
    rank_waitables,
    ranks_running,
    release_rank_queues,
    start_processes,
)
from .failures import RankFailed, hint_for, read_failures
from .fork_server import _ensure_server, server_state
from .launch_plan import LaunchPlan
from .ports import open_store
from .rank_output import OutputRelay, RankLogs
from .watchdog import LaunchWatch
from .worker import RankPlan, run_rank, unpack

__all__ = ["run_plan", "LaunchStats", "last_launch"]

_PUMP_S = 0.1  # while the ranks run, their output reaches the cell at least this often
_POLL_S = 0.05  # how often the wait loop looks where it cannot block (an unknown torch, ranks already gone)
_STOP_GRACE_S = 5  # after SIGTERM, how long a rank gets before SIGKILL
_EXIT_CODES_GRACE_S = 1.0  # after every rank process ended, how long elastic gets to report their exit codes
_QUIET_LOGGERS = (
    "torch.distributed.elastic.multiprocessing.api",
    "torch.distributed.elastic.multiprocessing.errors",
    "torch.multiprocessing.spawn",
)
_last: LaunchStats | None = None


@dataclass(frozen=True)
class LaunchStats:
    """What the last launch did and how long it took (``gpulab.ranks.launcher.last_launch()``)."""

    world_size: int
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
        return (
            f"{self.world_size} ranks ({self.backend or 'no process group'}, {self.start_method}{server}, "
            f"{self.threads_per_rank} thread(s) each, port {self.master_port}): all ready after {ready}, "
            f"done after {self.total_s:.3f} s" + (f"\n{self.why}" if self.why else "")
        )

    def _repr_html_(self) -> str:
        from html import escape

        return f"<code>{escape(str(self))}</code>"


def last_launch() -> LaunchStats | None:
    """Timings and settings of this kernel's most recent ``launch`` (None before the first)."""
    return _last


def run_plan(plan: LaunchPlan) -> Any:
    """Start ``plan``'s ranks, wait for them and return rank 0's result (every rank's with ``plan.all_ranks``).

    Raises ``RankFailed`` naming the first failing rank; any exception, the stop button's included, stops every rank.
    """
    global _last
    __tracebackhide__ = True  # IPython: the learner's cell, then the message; not the launcher's insides
    t0, wall0 = time.perf_counter(), time.time()
    world_size, method = plan.world_size, plan.start_method
    started_server = method == "forkserver" and server_state().pid is None
    if method == "forkserver":
        _ensure_server()
    store = open_store(world_size, plan.timeout_s, plan.ports)
    root = tempfile.mkdtemp(prefix="gpulab-launch-")
    logs = RankLogs(root)
    files = logs.files(world_size)
    envs = {r: plan.environment(r, store.port) for r in range(world_size)}
    sources = _notebook_sources()
    watch = LaunchWatch(root, world_size, sources, enabled=plan.watchdog)
    args = {
        r: (
            plan.payload,
            RankPlan(
                {**os.environ, **envs[r]},
                plan.threads_per_rank,
                plan.backend,
                plan.timeout_s,
                *files[r],
                redirect_in_python=sys.platform in ("darwin", "win32"),
                sources=sources,
                stack_path=watch.path(r),
                device=plan.devices[r],
            ),
        )
        for r in range(world_size)
    }
    relay = OutputRelay(files)
    ready_s, ctx = None, None
    try:
        with _quiet_elastic():
            with _signal_handlers_kept():
                ctx = start_processes(
                    name="launch", entrypoint=run_rank, args=args, envs=envs, logs_specs=logs, start_method=method
                )
            try:
                result = _wait(ctx, relay, watch)
            except BaseException as exc:  # the stop button (KeyboardInterrupt) or anything else: no rank outlives it
                stopped = isinstance(exc, KeyboardInterrupt) and watch.take(ctx)  # the stacks, before stopping them
                ctx.close(death_sig=signal.SIGTERM, timeout=_STOP_GRACE_S)
                relay.finish()
                if stopped:
                    print(watch.report({}, "you stopped the cell"), file=sys.stderr)
                print(f"[launch] stopped all {world_size} ranks.", file=sys.stderr)
                raise
        relay.finish()
        if result.is_failed():
            raise _failure(plan, result, root, relay, watch) from None
        values = [result.return_values[r] for r in range(world_size)]
        missing = [r for r, v in enumerate(values) if v is None]
        if missing:  # SystemExit(0) in the function: elastic's @record turns it into "returned None"
            raise RuntimeError(
                f"rank(s) {missing} ended with sys.exit() before the function returned, so there is "
                f"no result to bring back. Return from the function instead of exiting."
            )
        unpacked = [unpack(v) for v in values]
        ready_s = max(ready for ready, _ in unpacked) - wall0
        results = [value for _, value in unpacked]
        return results if plan.all_ranks else results[0]
    finally:
        del store
        shutil.rmtree(root, ignore_errors=True)
        _remove_error_files(ctx)
        release_rank_queues(ctx)
        ctx = None  # a failed launch's traceback keeps this frame, and so the context, alive
        _last = LaunchStats(
            world_size,
            plan.backend,
            method,
            plan.threads_per_rank,
            int(envs[0]["MASTER_PORT"]),
            started_server,
            ready_s,
            time.perf_counter() - t0,
            plan.why,
        )


def _failure(plan: LaunchPlan, result: RunProcsResult, root: str, relay: OutputRelay, watch: LaunchWatch) -> RankFailed:
    """``RankFailed`` for the first failing rank: its traceback, the others', the hint that fits, its last lines."""
    root_cause, others = read_failures(
        result.failures, {r: os.path.join(root, str(r), "error.json") for r in range(plan.world_size)}
    )
    hint = hint_for(root_cause.error + root_cause.traceback, timeout_s=plan.timeout_s, backend=plan.backend)
    hint = watch.hint(root_cause, others, hint, plan.timeout_s)
    if not root_cause.error and root_cause.exitcode == 1:
        hint = hint or _unguarded_script_hint()
    return RankFailed(root_cause, others, plan.world_size, hint, relay.recent_lines(root_cause.rank))


def _remove_error_files(ctx: object) -> None:
    """torch.multiprocessing gives each rank a ``pytorch-errorfile-*.pickle`` in the temporary folder, where a failing
    rank writes its traceback, and leaves the files of failed ranks there; their content has been read by now."""
    for path in rank_error_files(ctx):
        try:
            os.unlink(path)
        except OSError:
            pass  # never written: the rank did not fail


def _unguarded_script_hint() -> str:
    """Ranks re-import the main script before running anything (multiprocessing's rule for spawn and forkserver)."""
    main = sys.modules.get("__main__")
    path = getattr(main, "__file__", None)
    if not path:
        return ""
    return (
        f"Hint: each rank first re-imports your script {os.path.basename(path)!r}, so a launch at its top level "
        f"runs again inside every rank and fails there (the rank's message went to the terminal). Put the code "
        f'that launches under `if __name__ == "__main__":`.'
    )


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
            raise RuntimeError(
                "every rank ended without returning from the function (exit code 0): a rank was "
                "interrupted (SIGINT) or called os._exit(0). Nothing to bring back."
            )
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
