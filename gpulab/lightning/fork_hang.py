"""Reproduce, safely, the hang that waits for learners who train with ``ddp_notebook`` on CPU cores.

GNU OpenMP (torch's CPU thread pool on Linux) does not survive ``fork``: once a process has run a parallel region on
two or more threads, a forked child that opens a parallel region with two or more threads waits forever for helper
threads that were not copied. A notebook always has (loading data, building a model), and Lightning's fork launcher
gives each rank cores ÷ ranks threads unless ``OMP_NUM_THREADS`` is set — 1 on a 2-core machine, which is why it
survives there, 4 on an 8-core laptop, where it hangs.

``fork_experiment()`` runs each variant in a fresh interpreter (``python -c``, its own session) that prepares data,
does CPU work and fits the digits model with ``strategy="ddp_fork"`` on 2 CPU processes; a run that prints nothing for
``stall_s`` seconds is hung and killed with its whole process group, so the lesson itself never hangs. Taught in
``notebooks/06_lightning.ipynb``.
"""

from __future__ import annotations

import html
import os
import select
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from ..core.arguments import whole_number
from ..core.tables import html_table, text_table

__all__ = [
    "ForkVariant",
    "ForkRun",
    "ForkExperiment",
    "fork_experiment",
    "FAST_PLAN",
    "FULL_PLAN",
    "CAUSE",
    "FIX",
    "TWO_THREADS",
    "LIGHTNING_DEFAULT",
    "ENV_ONLY",
]

_ROOT = Path(__file__).resolve().parents[2]  # the folder that holds the gpulab package


@dataclass(frozen=True)
class ForkVariant:
    """One way to start the fit: the notebook's CPU work just before (on how many threads), then OMP_NUM_THREADS and
    torch's thread count at the fork. Variants run in order in one interpreter, so once one has worked on two or more
    threads, OpenMP's pool has started for every later one (each run reports it)."""

    label: str
    omp_num_threads: int | None  # None: unset, so Lightning gives each rank cores ÷ ranks threads
    fit_threads: int  # torch.set_num_threads(...) in the notebook just before the fit
    work_threads: int = 2  # threads of the notebook's CPU work before the fit; 1 does not start OpenMP's pool

    def __post_init__(self) -> None:
        for name in ("fit_threads", "work_threads"):
            value = getattr(self, name)
            whole_number(value, name, minimum=1, what="a number of threads", example=f"ForkVariant('…', 2, {name}=1)")
        if self.omp_num_threads is not None:
            whole_number(
                self.omp_num_threads,
                "omp_num_threads",
                minimum=1,
                what="a number of threads, or None for unset",
                example="ForkVariant('…', omp_num_threads=2, fit_threads=2)",
            )


CAUSE = ForkVariant("2 threads per rank, the notebook's work on 1 thread (no OpenMP pool)", 2, 2, work_threads=1)
FIX = ForkVariant("fix: OMP_NUM_THREADS=1 and torch.set_num_threads(1) before the fit", 1, 1)
TWO_THREADS = ForkVariant("OMP_NUM_THREADS=2: 2 threads per rank, what Lightning picks on 4 cores", 2, 2)
LIGHTNING_DEFAULT = ForkVariant("OMP_NUM_THREADS unset: Lightning picks cores ÷ ranks", None, 2)
ENV_ONLY = ForkVariant("OMP_NUM_THREADS=1 set, torch still on 2 threads: the ranks inherit 2", 1, 2)
FAST_PLAN: tuple[ForkVariant, ...] = (CAUSE, FIX, TWO_THREADS)
FULL_PLAN: tuple[ForkVariant, ...] = (CAUSE, LIGHTNING_DEFAULT, FIX, ENV_ONLY, TWO_THREADS)


@dataclass(frozen=True)
class ForkRun:
    """What one variant did: ``finished`` (with the fit's seconds) or ``hung`` (the last line it printed)."""

    variant: ForkVariant
    outcome: str  # "finished" | "hung" | "failed"
    seconds: float  # the fit's own time when finished; the time until it was killed when hung
    lines: tuple[str, ...]

    @property
    def pool_started(self) -> str:
        """Whether the notebook had run OpenMP's pool before this fork, as the run reported it: yes, no or ?."""
        found = [line.rsplit(": ", 1)[1] for line in self.lines if line.startswith("parent: OpenMP pool started")]
        return found[-1] if found else "?"

    @property
    def rank_threads(self) -> tuple[int, ...]:
        """Threads each rank reported when it started (``rank r: started, n thread(s)``)."""
        return tuple(int(line.split("started, ")[1].split()[0]) for line in self.lines if ": started, " in line)

    def row(self) -> tuple[str, str, str, str]:
        """The variant, whether OpenMP ran before the fork, the ranks' threads and what happened."""
        threads = ", ".join(map(str, self.rank_threads)) or "?"
        if self.outcome == "finished":
            what = f"finished in {self.seconds:.1f} s"
        elif self.outcome == "hung":
            last = self.lines[-1] if self.lines else "(nothing)"
            what = f"HUNG after '{last}': killed"
        else:
            what = "failed: " + (self.lines[-1] if self.lines else "no output")
        return self.variant.label, self.pool_started, threads, what


HEADERS = ("variant", "OpenMP ran before the fork", "threads per rank", "outcome")


@dataclass(frozen=True)
class ForkExperiment:
    """Every variant's run, with the machine's cores and the silence that counted as a hang."""

    runs: tuple[ForkRun, ...]
    cores: int
    stall_s: float

    def _notes(self) -> list[str]:
        return [
            f"One fresh interpreter runs the variants in order, each a ddp_fork fit on 2 CPU processes. This "
            f"machine has {self.cores} usable core(s), so Lightning's own choice is {max(1, self.cores // 2)} "
            f"thread(s) per rank. A run silent for {self.stall_s:g} s was killed with its process group (a "
            "healthy rank here prints its first step within a second or two)."
        ]

    def __str__(self) -> str:
        table = text_table(HEADERS, [r.row() for r in self.runs])
        return "\n".join(["Forking after OpenMP: ddp_fork on CPU", table, *self._notes()])

    def _repr_pretty_(self, p, cycle: bool) -> None:
        p.text(str(self))

    def _repr_html_(self) -> str:
        notes = "".join(f"<p>{html.escape(n)}</p>" for n in self._notes())
        return (
            html_table(HEADERS, [r.row() for r in self.runs], caption="Forking after OpenMP: ddp_fork on CPU") + notes
        )


def _usable_cores() -> int:
    """Cores as Lightning counts them (the affinity mask), which is what its thread choice divides."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


_KEEP = ("parent:", "rank ", "variant ", "All distributed processes registered", "Error", "error")


def _session(variants: list[ForkVariant], stall_s: float, start_s: float) -> list[ForkRun]:
    """Run ``variants`` in order in one interpreter until one hangs; the rest are left to the caller."""
    plan = [(v.work_threads, v.omp_num_threads, v.fit_threads) for v in variants]
    # parent_pid: a kernel killed while a variant hangs (kill -9, a crash, the culler) takes the session with it
    code = (
        "from gpulab.lightning.fork_fit import fork_fit_variants; "
        f"fork_fit_variants({plan!r}, parent_pid={os.getpid()})"
    )
    env = {k: v for k, v in os.environ.items() if k != "OMP_NUM_THREADS"}
    env["PYTHONPATH"] = os.pathsep.join([str(_ROOT), *filter(None, [env.get("PYTHONPATH")])])
    # A hung session is killed, so nothing it made in the temporary folder is cleaned up by itself: give it its own.
    scratch = tempfile.TemporaryDirectory(prefix="gpulab-fork-experiment-")
    env["TMPDIR"] = scratch.name
    proc = subprocess.Popen(
        [sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, start_new_session=True
    )
    runs: list[ForkRun] = []
    lines: list[str] = []
    buffer, deadline, begun, ready_seen = b"", time.monotonic() + start_s, time.monotonic(), False
    try:
        while len(runs) < len(variants):
            ready, _, _ = select.select([proc.stdout], [], [], max(0.0, deadline - time.monotonic()))
            chunk = os.read(proc.stdout.fileno(), 65536) if ready else b""  # type: ignore[union-attr]
            if not ready or not chunk:
                variant = variants[len(runs)]
                if ready or proc.poll() is not None:  # the interpreter ended: a failure, not a hang
                    runs.append(ForkRun(variant, "failed", 0.0, tuple(lines[-8:])))
                else:
                    runs.append(ForkRun(variant, "hung", time.monotonic() - begun, tuple(lines)))
                break
            buffer += chunk
            *complete, buffer = buffer.split(b"\n")
            for raw in complete:
                line = raw.decode(errors="replace").strip()
                ready_seen = ready_seen or line.startswith("parent: ready")
                if line.startswith("variant ") and line.endswith(": begin"):
                    lines, begun = [], time.monotonic()
                elif line.startswith("variant ") and ": finished in " in line:
                    seconds = float(line.split(": finished in ")[1].split()[0])
                    runs.append(ForkRun(variants[len(runs)], "finished", seconds, tuple(lines)))
                elif line.startswith(_KEEP):
                    lines.append(line)
            deadline = time.monotonic() + (stall_s if ready_seen else start_s)  # importing is slow, not hung
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)  # the interpreter and every rank it forked
        proc.wait()
        proc.stdout.close()  # type: ignore[union-attr]
        scratch.cleanup()
    return runs


def fork_experiment(
    plan: tuple[ForkVariant, ...] = FAST_PLAN, *, stall_s: float = 8.0, start_s: float = 180.0
) -> ForkExperiment:
    """Run each variant of ``plan`` (``FAST_PLAN``: no pool, the fix, the hang; ``FULL_PLAN``: also Lightning's own
    choice and the trap of setting only the variable) and report which finished and which hung. ``start_s`` bounds the
    interpreter's start (importing torch and Lightning); ``stall_s`` is the silence taken for a hang."""
    if not plan:
        raise ValueError("plan is empty: pass variants to run, e.g. gpulab.lightning.FAST_PLAN.")
    if stall_s <= 0 or start_s <= 0:
        raise ValueError(f"stall_s={stall_s} and start_s={start_s} must be positive seconds.")
    runs: list[ForkRun] = []
    while len(runs) < len(plan):  # after a hang, a fresh interpreter runs the rest
        done = _session(list(plan[len(runs) :]), stall_s, start_s)
        runs += done
        if not done or done[-1].outcome == "failed":
            break
    return ForkExperiment(tuple(runs), _usable_cores(), stall_s)
