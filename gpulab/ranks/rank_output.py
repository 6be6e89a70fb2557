"""Each rank's output, copied live into the notebook cell, one whole line at a time, labelled ``[rank k]``.

A rank's ``print`` cannot reach the cell by itself: the rank's standard output is the kernel's own terminal, not the
notebook. elastic redirects each rank's file descriptors 1 and 2 into log files (``stdout.log`` / ``stderr.log``);
this relay reads what is new in them and writes it to *this* process's ``sys.stdout`` / ``sys.stderr`` — in a
notebook, the cell that called the launch. It is pumped from the calling thread (the launcher's wait loop), because
lines written by the cell's own thread land in that cell, as its own ``print`` would.

elastic ships a tailer too (``TailLog``), but it writes from threads of its own and prefixes ``[name]local_rank:``;
this one is short, writes from the caller's thread, whole lines only, with the rank's global number.
Taught in ``notebooks/04_ddp.ipynb``.
"""

from __future__ import annotations

import os
import sys
from collections import deque
from dataclasses import dataclass, field
from typing import TextIO

from ..machine.compat import LogsDest, LogsSpecs, Std

__all__ = ["RankLogs", "OutputRelay"]


class RankLogs(LogsSpecs):
    """elastic's logs spec with fixed paths: ``<root>/<local rank>/stdout.log``, ``stderr.log``, ``error.json``.

    elastic's ``DefaultLogsSpecs`` picks random sub-folders; fixed ones let the launcher tell each rank its files
    up front (where elastic does not redirect file descriptors, macOS and Windows, the rank opens them itself).
    """

    def __init__(self, root: str) -> None:
        super().__init__(log_dir=root, redirects=Std.ALL, tee=Std.NONE)
        self._root = root

    @property
    def root_log_dir(self) -> str:
        """The folder that holds one sub-folder of logs per rank."""
        return self._root

    def files(self, world_size: int) -> dict[int, tuple[str, str]]:
        """Local rank -> (stdout path, stderr path)."""
        return {
            r: (os.path.join(self._root, str(r), "stdout.log"), os.path.join(self._root, str(r), "stderr.log"))
            for r in range(world_size)
        }

    def reify(self, envs: dict[int, dict[str, str]]) -> LogsDest:
        """elastic's log destinations for ``envs``' ranks: each rank's stdout, stderr and error file, folders made."""
        files = self.files(len(envs))
        errors = {}
        for r in envs:
            os.makedirs(os.path.join(self._root, str(r)), exist_ok=True)
            errors[r] = os.path.join(self._root, str(r), "error.json")
            envs[r]["TORCHELASTIC_ERROR_FILE"] = errors[r]  # where elastic's @record writes the traceback
        return LogsDest(
            stdouts={r: f[0] for r, f in files.items()}, stderrs={r: f[1] for r, f in files.items()}, error_files=errors
        )


@dataclass
class _Source:
    path: str
    label: str
    to_stderr: bool
    offset: int = 0
    partial: bytes = b""
    recent: deque = field(default_factory=lambda: deque(maxlen=20))  # last lines, for failure reports


class OutputRelay:
    """Copy new lines from each rank's log files into ``out`` / ``err`` (default: this process's, at call time)."""

    def __init__(self, files: dict[int, tuple[str, str]], out: TextIO | None = None, err: TextIO | None = None):
        """``files`` maps rank -> (stdout path, stderr path). Missing files are waited for, not an error."""
        self._out, self._err = out, err
        self._sources = [
            _Source(path, f"[rank {rank}] ", to_stderr)
            for rank, paths in sorted(files.items())
            for path, to_stderr in zip(paths, (False, True))
        ]
        self.lines_copied = 0

    def pump(self) -> int:
        """Copy every complete line written since the last call; returns how many."""
        copied = 0
        for src in self._sources:
            chunk = self._read_new(src)
            if not chunk:
                continue
            *lines, src.partial = (src.partial + chunk).split(b"\n")
            for raw in lines:
                self._emit(src, raw)
            copied += len(lines)
        if copied:  # live: a notebook sends the lines now, a pipe (a script's log) gets them now
            for stream in (self._out or sys.stdout, self._err or sys.stderr):
                stream.flush()
        self.lines_copied += copied
        return copied

    def finish(self) -> None:
        """Copy what is left, including a last line without a newline."""
        self.pump()
        for src in self._sources:
            if src.partial:
                self._emit(src, src.partial)
                src.partial = b""
        for stream in (self._out or sys.stdout, self._err or sys.stderr):
            stream.flush()

    def recent_lines(self, rank: int, stderr: bool = True) -> list[str]:
        """The last lines (up to 20) a rank wrote to stderr (or stdout): context for a failure report."""
        label = f"[rank {rank}] "
        return [line for src in self._sources if src.label == label and src.to_stderr == stderr for line in src.recent]

    @staticmethod
    def _read_new(src: _Source) -> bytes:
        try:
            with open(src.path, "rb") as f:
                f.seek(src.offset)
                chunk = f.read()
        except FileNotFoundError:
            return b""
        src.offset += len(chunk)
        return chunk

    def _emit(self, src: _Source, raw: bytes) -> None:
        # A progress bar rewrites its line with "\r": keep what a terminal would show, the last rewrite.
        text = raw.decode("utf-8", errors="replace").rstrip("\r").rsplit("\r", 1)[-1]
        src.recent.append(text)
        stream = (self._err or sys.stderr) if src.to_stderr else (self._out or sys.stdout)
        stream.write(f"{src.label}{text}\n")
