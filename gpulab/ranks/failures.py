"""When a rank fails: which one started it, what it raised (or which signal killed it), and what to try next.

elastic reports the failures it *observed* and the error file (``error.json``) its ``@record`` wrapper wrote for
each rank that raised. When one rank ends, the others usually fail a moment later in a collective or while the
process group forms ("Connection closed by peer", "Gloo connectFullMesh failed"): those are consequences, and under
load a consequence's error file can be written before the cause has been seen to end. So the root cause is chosen
among the ranks whose ending is not a lost peer: first one killed by a signal or one that exited without raising
(neither writes an error file), then the rank whose error file was written first. Taught in
``notebooks/04_ddp.ipynb``.
"""

from __future__ import annotations

import json
import os
import re
import signal
from dataclasses import dataclass

from ..core.frames import is_library_file
from ..machine.compat import ChildFailedError, ProcessFailure

__all__ = ["RankFailed", "RankFailure", "read_failures", "hint_for"]

# Frames of the launcher's own plumbing, dropped from the traceback a learner reads.
_PLUMBING = (
    os.sep + os.path.join("elastic", "multiprocessing", "errors", "__init__.py"),
    os.sep + os.path.join("gpulab", "ranks", "worker.py"),
    os.sep + os.path.join("gpulab", "ranks", "cells.py"),
)
_SIGNAL_MEANING = {
    "SIGKILL": "usually the kernel's out-of-memory killer (look for 'Killed process' in `dmesg`) or a `kill -9`",
    "SIGSEGV": "a crash in native code (a C/C++/CUDA extension), not in Python",
    "SIGABRT": "native code aborted (a failed check in a C++ library; its message is in the lines above, if any)",
    "SIGTERM": "something asked it to stop (a job scheduler, or `kill`)",
    "SIGBUS": "a bad memory access; in containers often a too-small /dev/shm (docker --shm-size)",
}


@dataclass(frozen=True)
class RankFailure:
    """How one rank ended: the exception it raised (with its traceback) or the signal / exit code, and when."""

    rank: int
    exitcode: int | None  # negative: killed by that signal; None: unknown (stopped after another rank failed)
    error: str = ""  # "ValueError: boom"; empty when nothing was raised in Python
    traceback: str = ""
    written_ns: int | None = None  # when its error file was written (orders the failures)

    @property
    def signal_name(self) -> str | None:
        """The signal that killed the rank (``SIGKILL``), or None when it was not killed by one."""
        if self.exitcode is None or self.exitcode >= 0:
            return None
        try:
            return signal.Signals(-self.exitcode).name
        except ValueError:
            return f"number {-self.exitcode}"

    def summary(self) -> str:
        """How the rank ended, in a few words: what it raised, the signal, or its exit code."""
        if self.error:
            return f"raised {self.error}"
        if self.signal_name:
            return f"was killed by signal {self.signal_name} (exit code {self.exitcode})"
        if self.exitcode is None:
            return "raised nothing (stopped by the launcher if still running)"
        return f"exited with code {self.exitcode} without raising an exception"


class RankFailed(ChildFailedError):
    """A launched function failed in one or more ranks. Its fields say where and how, first-failing rank first:

    - ``rank``: the rank where the failure started (the root cause; the others usually failed because of it);
    - ``exitcode``: that rank's exit code (negative: killed by a signal), ``signal``: the signal's name or ``None``;
    - ``error``: what it raised (``"ValueError: boom"``, empty if nothing was raised), ``traceback``: the rank's
      traceback text in your code (the launcher's own frames dropped);
    - ``ranks``: how every failed or stopped rank ended (``RankFailure``), the root cause first;
    - ``world_size``, ``hint`` (what to try next, may be empty).

    It is elastic's ``ChildFailedError`` (what torchrun raises): ``failures`` maps each rank to elastic's
    ``ProcessFailure`` and ``get_first_failure()`` returns the root cause's. Its message is written for the notebook:
    the first failing rank, its traceback, the signal if it was killed, what the other ranks did, and the hint.
    """

    # the message carries the rank's own traceback, so the notebook's short traceback (notebook.tracebacks) ends at
    # the learner's line: the launcher's frame that raised it is no lesson
    told_in_its_message = True

    def __init__(
        self,
        root: RankFailure,
        others: list[RankFailure],
        world_size: int,
        hint: str = "",
        last_lines: list[str] | None = None,
    ) -> None:
        self.name = "launch"
        self.root, self.others, self.world_size, self.hint = root, list(others), world_size, hint
        self.last_lines = list(last_lines or [])
        self.ranks: tuple[RankFailure, ...] = (root, *others)
        self.failures = {f.rank: ProcessFailure(f.rank, 0, f.exitcode or 1, "") for f in self.ranks}
        Exception.__init__(self, self._message(self.last_lines))

    @property
    def rank(self) -> int:
        """The rank where the failure started (the root cause; the others usually failed because of it)."""
        return self.root.rank

    @property
    def exitcode(self) -> int | None:
        """That rank's exit code (negative: killed by a signal; None: unknown)."""
        return self.root.exitcode

    @property
    def signal(self) -> str | None:
        """The name of the signal that killed that rank, or None."""
        return self.root.signal_name

    @property
    def error(self) -> str:
        """What that rank raised (``"ValueError: boom"``), empty when nothing was raised in Python."""
        return self.root.error

    @property
    def traceback(self) -> str:
        """That rank's traceback, as the rank printed it (empty when it raised nothing)."""
        return self.root.traceback

    def get_first_failure(self) -> tuple[int, ProcessFailure]:
        """elastic's accessor: the root cause's rank and ``ProcessFailure`` (by cause, not by error-file time)."""
        return self.rank, self.failures[self.rank]

    def _message(self, last_lines: list[str]) -> str:
        summary = self.root.summary()
        if self.root.traceback and "\n" in self.root.error.strip():  # the traceback ends with the whole message
            summary = f"raised {self.root.error.strip().splitlines()[0]} (… the whole message ends the traceback below)"
        parts = [f"rank {self.rank} of {self.world_size} {summary}"]
        if self.root.signal_name:
            meaning = _SIGNAL_MEANING.get(self.root.signal_name, "")
            parts[0] += f": {meaning}." if meaning else "."
            parts[0] += " Nothing was raised in Python, so there is no traceback."
        others = {f.rank: f for f in self.others}
        rest = [others.get(r, RankFailure(r, None)) for r in range(self.world_size) if r != self.rank]
        if rest:
            parts.append("The other ranks: " + "; ".join(f"rank {f.rank} {self._brief(f)}" for f in rest) + ".")
        if self.root.traceback:
            short, hidden = short_rank_traceback(self.root.traceback)
            where = (
                (
                    f" (your code and the line that raised; {hidden} library frame(s) left out, all of them in "
                    "err.root.traceback)"
                )
                if hidden
                else ""
            )
            parts.append(f"Traceback in rank {self.rank}{where}:\n{short.rstrip()}")
        elif last_lines:
            parts.append(f"Last lines rank {self.rank} wrote to stderr:\n" + "\n".join(last_lines))
        if self.hint:
            parts.append(self.hint)
        return "\n\n".join(parts)

    def _brief(self, other: RankFailure) -> str:
        """Another rank's ending in one line: a long error it shares with the first rank is not repeated."""
        if other.error and other.error == self.root.error:
            return f"raised the same {other.error.split(':', 1)[0]}"
        if lost_a_peer(other.error) and not lost_a_peer(self.root.error):
            kind = other.error.split(":", 1)[0]
            return f"raised {kind} because rank {self.rank} had gone (a consequence: its connection broke)"
        if other.error and "\n" in other.error.strip():
            first = other.error.strip().splitlines()[0]
            return f"raised {first[:160]}{'…' if len(first) > 160 else ''} (…)"
        return other.summary()

    def __reduce__(self):  # ChildFailedError's signature differs: rebuild from the fields, which pickle
        return (RankFailed, (self.root, self.others, self.world_size, self.hint, self.last_lines))


def read_failures(
    observed: dict[int, ProcessFailure], error_files: dict[int, str]
) -> tuple[RankFailure, list[RankFailure]]:
    """The root cause and the other failures, from elastic's observed failure(s) and every rank's error file."""
    found: dict[int, RankFailure] = {}
    for rank, path in error_files.items():
        if os.path.isfile(path):
            found[rank] = _from_error_file(rank, path, observed.get(rank))
    for rank, failure in observed.items():
        if rank not in found:
            found[rank] = RankFailure(rank, failure.exitcode)
    # a rank that lost its peer is a consequence whenever some rank failed otherwise
    pool = [f for f in found.values() if not lost_a_peer(f.error)] or list(found.values())
    silent = [f for f in pool if f.rank in observed and f.written_ns is None and f.exitcode]
    written = [f for f in pool if f.written_ns is not None]
    if silent:  # killed, or exited without raising: the others' errors (lost peers) came after
        root = min(silent, key=lambda f: (f.signal_name is None, f.rank))
    elif written:
        root = min(written, key=lambda f: f.written_ns)
    else:
        root = found[min(observed)]
    return root, [f for r, f in sorted(found.items()) if r != root.rank]


# What a rank raises when another rank has gone: its connection closed, reset or refused while the group formed or
# a collective ran (gloo's and NCCL's wording on torch 2.11–2.14).
_LOST_PEER = re.compile(
    r"Connection (closed|reset) by peer|Connection refused|Broken pipe|connectFullMesh failed"
    r"|remote process exited|NCCL communicator was aborted",
    re.IGNORECASE,
)


def lost_a_peer(error: str) -> bool:
    """Whether a rank's error is the mark of another rank having gone (a consequence, not a cause)."""
    return bool(error) and bool(_LOST_PEER.search(error))


def _from_error_file(rank: int, path: str, observed: ProcessFailure | None) -> RankFailure:
    with open(path) as f:
        data = json.load(f)
    message = data.get("message", {})
    if isinstance(message, str):
        error, tb = message, ""
    else:
        error, tb = message.get("message", ""), message.get("extraInfo", {}).get("py_callstack", "")
    exitcode = observed.exitcode if observed is not None else 1
    return RankFailure(rank, exitcode, error, _without_plumbing(tb), os.stat(path).st_mtime_ns)


_FRAME = re.compile(r'^  File "(?P<path>[^"]+)", line \d+')


def short_rank_traceback(tb: str) -> tuple[str, int]:
    """A formatted traceback cut as the notebook's short tracebacks are: every frame of the learner's code, the frame
    where each exception was raised, and one line in place of the library frames between; and how many were left out.
    """
    blocks: list[list[str]] = []  # a frame ("  File ..." and its indented lines) or one other line
    for line in tb.splitlines():
        if _FRAME.match(line) or (line.startswith("    ") and blocks and _FRAME.match(blocks[-1][0])):
            (blocks.append([line]) if _FRAME.match(line) else blocks[-1].append(line))
        else:
            blocks.append([line])
    out: list[str] = []
    hidden_here: list[str] = []
    hidden = 0
    for i, block in enumerate(blocks):
        frame = _FRAME.match(block[0])
        last_of_its_traceback = i + 1 == len(blocks) or not _FRAME.match(blocks[i + 1][0])
        if frame and is_library_file(frame.group("path")) and not last_of_its_traceback:
            hidden_here.append(frame.group("path"))
            continue
        if hidden_here:
            out.append(f"  … {len(hidden_here)} frame(s) inside {_packages(hidden_here)} …")
            hidden += len(hidden_here)
            hidden_here = []
        out.extend(block)
    return "\n".join(out), hidden


def _packages(paths: list[str]) -> str:
    names = []
    for path in paths:
        parts = path.replace("\\", "/").split("/")
        name = (
            parts[parts.index("site-packages") + 1]
            if "site-packages" in parts[:-1]
            else ("gpulab" if "gpulab" in parts else "Python's library")
        )
        if name.removesuffix(".py") not in names:
            names.append(name.removesuffix(".py"))
    return ", ".join(names)


def _without_plumbing(tb: str) -> str:
    """Drop the launcher's own frames (elastic's ``@record`` wrapper, the trampoline) from a formatted traceback."""
    out, skipping = [], False
    for line in tb.splitlines():
        if line.startswith("  File "):
            skipping = any(p in line for p in _PLUMBING)
        elif not line.startswith("    "):
            skipping = False
        if not skipping:
            out.append(line)
    return "\n".join(out)


def hint_for(error: str, *, timeout_s: float, backend: str | None) -> str:
    """What to try next for errors learners meet when launching ranks (empty when there is nothing to add)."""
    if "initialize the default process group twice" in error:
        return (
            "Hint: launch() already called init_process_group in each rank (backend "
            f"{backend!r}). Guard your own call with `if not dist.is_initialized():` (the same code then runs "
            "under torchrun), or launch(..., init_process_group=False) to do it yourself."
        )
    if "Default process group has not been initialized" in error:
        return (
            "Hint: this launch was made with init_process_group=False, so the function must call "
            "torch.distributed.init_process_group() before its first collective."
        )
    if re.search(r"timed? ?out", error, re.IGNORECASE):
        return (
            f"Hint: a collective waited {timeout_s:g} s for ranks that never joined it. Every rank must call the "
            "same collectives in the same order: look for one inside `if rank == 0:`, or a loop that runs a "
            "different number of times per rank (uneven data). launch(..., timeout_s=...) sets the wait."
        )
    if "Connection closed by peer" in error or "Connection reset by peer" in error:
        return "Hint: another rank ended while this one was talking to it; its own error is the one to read."
    return ""
