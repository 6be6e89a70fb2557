"""Which collective each rank waits in, and which rank never arrived: the hang report, from every rank's stack.

Input is text: a rank's stack as ``faulthandler`` dumps it (most recent call first, ``File "x.py", line 3 in f``) or as
a Python traceback (most recent call last, ``File "x.py", line 3, in f``), the form a rank that raised leaves in its
error file. A rank is *in* a collective when a frame of ``torch/distributed/distributed_c10d.py`` is on its stack (the
outermost one names the call the learner made: ``all_reduce``, ``barrier``, ...); its *place* is its innermost frame of
the learner's own code, shown as ``cell [5], line 12`` when ``cells`` maps the file to a notebook cell.
Taught in ``notebooks/04_ddp.ipynb``.
"""

from __future__ import annotations

import html
import linecache
import re
from collections import Counter
from dataclasses import dataclass

from ..core.frames import code_place, is_library_file

__all__ = ["Frame", "RankStack", "HangReport", "parse_stack", "rank_stack", "RULE", "COLLECTIVES"]

RULE = "Every rank must call the same collectives in the same order."
_C10D = "torch/distributed/distributed_c10d.py"
_TRAMPOLINE = ("gpulab/ranks/worker.py", "run_rank")
# torch.distributed's calls in which a rank waits for the others (distributed_c10d's public API)
COLLECTIVES = frozenset(
    {
        "all_reduce",
        "all_reduce_coalesced",
        "all_gather",
        "all_gather_object",
        "all_gather_into_tensor",
        "all_gather_coalesced",
        "reduce",
        "reduce_scatter",
        "reduce_scatter_tensor",
        "broadcast",
        "broadcast_object_list",
        "gather",
        "gather_object",
        "scatter",
        "scatter_object_list",
        "all_to_all",
        "all_to_all_single",
        "barrier",
        "monitored_barrier",
        "send",
        "recv",
        "send_object_list",
        "recv_object_list",
        "batch_isend_irecv",
        "new_group",
    }
)
_LINE = re.compile(r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+),? in (?P<func>\S+)')


@dataclass(frozen=True)
class Frame:
    """One frame of a stack: file, line and function."""

    filename: str
    lineno: int
    function: str


def parse_stack(text: str) -> list[list[Frame]]:
    """Each thread's frames in ``text``, outermost first (faulthandler's blocks are reversed; a traceback's are not)."""
    threads: list[list[Frame]] = []
    current: list[Frame] = []
    newest_first = False
    for line in text.splitlines():
        if line.startswith(("Current thread", "Thread 0x", "Stack (most recent call first)")):
            if current:
                threads.append(current[::-1] if newest_first else current)
            current, newest_first = [], True
            continue
        if line.startswith("Traceback (most recent call last)"):
            if current:
                threads.append(current[::-1] if newest_first else current)
            current, newest_first = [], False
            continue
        m = _LINE.match(line)
        if m:
            current.append(Frame(m["file"], int(m["line"]), m["func"]))
    if current:
        threads.append(current[::-1] if newest_first else current)
    return threads


@dataclass(frozen=True)
class RankStack:
    """One rank at the moment it was looked at: its frames (outermost first) and what they mean."""

    rank: int
    frames: tuple[Frame, ...]
    how: str  # "stack" (faulthandler, while it ran), "traceback" (it raised), "gone" (ended, nothing to read)

    @property
    def in_function(self) -> bool:
        """Still inside the launched function (the launcher's trampoline is on the stack), or a script's code."""
        return (
            any(
                f.filename.replace("\\", "/").endswith(_TRAMPOLINE[0]) and f.function == _TRAMPOLINE[1]
                for f in self.frames
            )
            or self.learner is not None
        )

    @property
    def collective(self) -> str | None:
        """The collective the rank waits in (the outermost ``distributed_c10d`` frame that is one)."""
        for f in self.frames:
            if f.filename.replace("\\", "/").endswith(_C10D) and f.function in COLLECTIVES:
                return f.function
        return None

    @property
    def learner(self) -> Frame | None:
        """The innermost frame of code the learner wrote (before any collective's insides), inside the function the
        launcher called: frames outside it (the fork server's ``python -c``) are not the learner's."""
        mine = None
        starts = [i for i, f in enumerate(self.frames) if f.function in ("_wrap", _TRAMPOLINE[1])]
        for f in self.frames[starts[-1] + 1 if starts else 0 :]:
            if f.filename.replace("\\", "/").endswith(_C10D):
                break
            if not is_library_file(f.filename):
                mine = f
        return mine


def rank_stack(rank: int, text: str, how: str) -> RankStack:
    """The thread that runs the rank's code: the one with the trampoline or the learner's frames, else the first."""
    threads = parse_stack(text)
    pick = (
        next((t for t in threads if any(f.function == _TRAMPOLINE[1] for f in t)), None)
        or next((t for t in threads if any(not is_library_file(f.filename) for f in t)), None)
        or (threads[0] if threads else [])
    )
    return RankStack(rank, tuple(pick), how if pick else "gone")


@dataclass(frozen=True, repr=False)
class HangReport:
    """Every rank's place when the run was stopped, the collective each waits in, and who never arrived."""

    ranks: tuple[RankStack, ...]
    why: str  # "the collective timeout (5 s) ran out", "you stopped the cell"
    cells: dict[str, int]  # notebook cell file -> execution count, for "cell [5], line 12"

    def _place(self, f: Frame) -> str:
        where = code_place(f.filename, f.lineno, self.cells.get(f.filename))
        code = linecache.getline(f.filename, f.lineno).strip()
        return f"{where} (`{code}`)" if code else where

    @property
    def awaited(self) -> str | None:
        """The collective most ranks wait in (ties: the lowest rank's)."""
        calls = [r.collective for r in self.ranks if r.collective]
        if not calls:
            return None
        counts = Counter(calls)
        return max(calls, key=lambda c: (counts[c], -calls.index(c)))

    def line_for(self, r: RankStack) -> str:
        """Where rank ``r`` was, in one line: the collective it waited in, or where it was instead, and what it never
        called."""
        awaited = self.awaited
        mine = r.learner
        at = f" at {self._place(mine)}" if mine else ""
        if r.collective:
            verb = "was waiting" if r.how == "traceback" else "waits"
            other = f" — not {awaited}" if awaited and r.collective != awaited else ""
            return f"rank {r.rank} {verb} in {r.collective}{at}{other}"
        never = f" and never called {awaited}" if awaited else ""
        if r.how == "traceback":
            return f"rank {r.rank} raised{at}{never}"
        if r.how == "gone":
            return f"rank {r.rank} had already ended{never}"
        if not r.in_function:
            return f"rank {r.rank} had returned from the function{never}"
        func = f"`{mine.function}()`" if mine and mine.function != "<module>" else "your code"
        return f"rank {r.rank} is in {func}{at}{never}"

    @property
    def missing(self) -> tuple[int, ...]:
        """Ranks that are not in the awaited collective."""
        return tuple(r.rank for r in self.ranks if self.awaited and r.collective != self.awaited)

    def __str__(self) -> str:
        lines = [f"Watchdog: {self.why}; where each rank was:"]
        lines += [f"  {self.line_for(r)}." for r in self.ranks]
        if self.awaited and self.missing:
            lines.append(f"{RULE} Rank(s) {', '.join(map(str, self.missing))} never reached this {self.awaited}.")
        elif self.awaited:
            lines.append(
                f"Every rank is in {self.awaited}: they wait for each other (a rank that is slow, or a peer that died)."
            )
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        return f"<pre>{html.escape(str(self))}</pre>"
