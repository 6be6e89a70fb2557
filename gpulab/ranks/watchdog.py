"""The hang watchdog: every rank's Python stack, taken before the ranks are stopped, turned into a hang report.

Each rank registers ``faulthandler`` on ``SIGUSR1`` (``arm``), writing into a file of its own. faulthandler, not a
Python signal handler, because a rank that hangs is blocked inside a collective's C++ wait: a Python handler would run
only once that wait returns (after the timeout, with the stack already unwound), while faulthandler's handler is C
code that reads the frames at once, without the GIL. Arming costs one ``signal()`` call; nothing runs until a signal.

``gpulab.launch`` collects (``collect``) when the first rank fails — a collective's timeout raises in the rank that
waited — and when the learner stops the cell, before the other ranks are stopped (``LaunchWatch``). Taught in
``notebooks/04_ddp.ipynb``.
"""

from __future__ import annotations

import faulthandler
import os
import signal
import sys
import time
from pathlib import Path
from types import CodeType
from typing import Any

from ..machine.compat import ipython_cell_number, rank_processes
from .stacks import Frame, HangReport, RankStack, rank_stack

__all__ = ["arm", "collect", "report", "LaunchWatch", "READY"]

READY = "gpulab watchdog armed"
_SETTLE_S = 0.05
_files: list[Any] = []  # kept open for faulthandler (it writes to the file descriptor)


def arm(path: str) -> None:
    """In a rank: dump every thread's stack into ``path`` on ``SIGUSR1`` (its first line says it is armed)."""
    f = open(path, "w", encoding="utf-8")  # noqa: SIM115 - faulthandler keeps writing to it until the rank ends
    _files.append(f)
    faulthandler.register(signal.SIGUSR1, file=f, all_threads=True, chain=False)
    f.write(f"{READY} pid {os.getpid()}\n")  # only now may a signal come: before, SIGUSR1 would kill the rank
    f.flush()


def collect(paths: dict[int, str], pids: dict[int, int], wait_s: float = 1.0) -> dict[int, str]:
    """Signal each armed rank still running and read back its stack (what came within ``wait_s``), by rank.

    A rank that has not armed yet is not signalled: ``SIGUSR1``'s default action would kill it."""
    sizes: dict[int, int] = {}
    for rank, pid in pids.items():
        path = paths.get(rank)
        try:
            text = Path(path).read_text(encoding="utf-8", errors="replace") if path else ""
        except OSError:
            continue
        if not text.startswith(READY):
            continue
        try:
            os.kill(pid, signal.SIGUSR1)
        except (ProcessLookupError, PermissionError):
            continue
        sizes[rank] = len(text.encode())
    deadline = time.monotonic() + wait_s
    out: dict[int, str] = {}
    last: dict[int, int] = {}
    while sizes and time.monotonic() < deadline:
        time.sleep(_SETTLE_S)
        for rank in list(sizes):
            size = os.path.getsize(paths[rank])
            if size > sizes[rank] and last.get(rank) == size:  # written, and no longer growing
                out[rank] = Path(paths[rank]).read_text(encoding="utf-8", errors="replace")[sizes[rank] :]
                del sizes[rank]
            last[rank] = size
    for rank in sizes:  # slow to answer: what it has written so far
        out[rank] = Path(paths[rank]).read_text(encoding="utf-8", errors="replace")[sizes[rank] :]
    return out


def _main_code() -> dict[str, list[tuple[str, int, int]]]:
    """Where the notebook's functions were written: name -> (cell file, first line, last line), for every function
    and method in ``__main__`` and the functions defined inside them. cloudpickle sends a notebook's functions to the
    ranks by value and names their file ``<dynamic-code>``; this puts the cell back."""
    out: dict[str, list[tuple[str, int, int]]] = {}

    def visit(code: CodeType) -> None:
        lines = [n for *_, n in code.co_lines() if n]
        if lines:
            out.setdefault(code.co_name, []).append((code.co_filename, min(lines), max(lines)))
        for const in code.co_consts:
            if isinstance(const, CodeType):
                visit(const)

    main = vars(sys.modules["__main__"]) if "__main__" in sys.modules else {}
    for value in list(main.values()):
        members = list(vars(value).values()) if isinstance(value, type) else [value]
        for member in members:
            code = getattr(getattr(member, "__func__", member), "__code__", None)
            if isinstance(code, CodeType):
                visit(code)
    return out


def _placed(stack: RankStack, code: dict[str, list[tuple[str, int, int]]]) -> RankStack:
    frames = []
    for f in stack.frames:
        if f.filename == "<dynamic-code>":
            found = [name for name, first, last in code.get(f.function, ()) if first <= f.lineno <= last]
            if found:
                f = Frame(found[-1], f.lineno, f.function)  # the latest definition: the one the launch sent
        frames.append(f)
    return RankStack(stack.rank, tuple(frames), stack.how)


def report(
    world_size: int,
    stacks: dict[int, str],
    tracebacks: dict[int, str],
    why: str,
    cells: dict[str, int],
    code: dict[str, list[tuple[str, int, int]]] | None = None,
) -> HangReport:
    """The report from what was collected: a rank that raised is read from its traceback, the others from their
    dumped stacks; a rank with neither had ended. ``code`` places ``<dynamic-code>`` frames (``_main_code``)."""
    ranks: list[RankStack] = []
    for r in range(world_size):
        if tracebacks.get(r):
            ranks.append(rank_stack(r, tracebacks[r], "traceback"))
        elif stacks.get(r):
            ranks.append(rank_stack(r, stacks[r], "stack"))
        else:
            ranks.append(RankStack(r, (), "gone"))
    return HangReport(tuple(_placed(r, code or {}) for r in ranks), why, cells)


class LaunchWatch:
    """The watchdog of one ``gpulab.launch``: where each rank dumps its stack, taking the stacks once (at the first
    failure or the stop button, before the ranks are stopped), and the report made of them."""

    def __init__(self, root: str, world_size: int, sources: dict[str, list[str]], *, enabled: bool = True) -> None:
        self.enabled, self.world_size = enabled, world_size
        self.paths = {r: os.path.join(root, f"stack-{r}.txt") for r in range(world_size)} if enabled else {}
        self.cells = {name: n for name in sources if (n := ipython_cell_number(name)) is not None}
        self.stacks: dict[int, str] | None = None
        self.code = _main_code() if enabled else {}

    def path(self, rank: int) -> str:
        """The file rank ``rank`` dumps its stack into (empty when the watchdog is off)."""
        return self.paths.get(rank, "")

    def take(self, ctx: Any) -> bool:
        """Collect every running rank's stack (once); True when the watchdog is on."""
        if self.enabled and self.stacks is None and ctx is not None:
            self.stacks = collect(self.paths, ctx.pids())
        return self.enabled

    def before_poll(self, ctx: Any) -> None:
        """Take the stacks once a rank process has ended with a non-zero exit code (a collective's timeout raised
        in it, or it failed): elastic's next poll stops the others."""
        procs = rank_processes(ctx) if self.enabled and self.stacks is None else None
        if procs and any(p.exitcode not in (None, 0) for p in procs):
            self.take(ctx)

    def report(self, tracebacks: dict[int, str], why: str) -> HangReport:
        """The hang report from the stacks taken and the ranks' ``tracebacks``; ``why`` says what stopped the launch."""
        return report(self.world_size, self.stacks or {}, tracebacks, why, self.cells, self.code)

    def hint(self, root: Any, others: list[Any], hint: str, timeout_s: float) -> str:
        """The report in place of the launcher's hint when a collective was involved (else the hint as it was)."""
        if self.stacks is None:
            return hint
        timed_out = hint.startswith("Hint: a collective waited")
        why = (
            f"the collective timeout ({timeout_s:g} s) ran out in rank {root.rank}"
            if timed_out
            else f"rank {root.rank} failed"
        )
        hang = self.report({f.rank: f.traceback for f in (root, *others)}, why)
        if hang.awaited is None:  # no collective: still worth saying where the ranks that did not fail were
            running = any(r.how == "stack" and r.in_function for r in hang.ranks)
            return "\n\n".join(p for p in (hint, str(hang) if running else "") if p)
        return str(hang) + (
            "\nHint: look for a collective inside `if rank == 0:`, or a loop that runs a different "
            "number of times per rank (uneven data). launch(..., timeout_s=...) sets the wait (here "
            f"{timeout_s:g} s)."
            if timed_out
            else ""
        )
