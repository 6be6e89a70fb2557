"""Carry rank 0's steps and marks from processes that Lightning forked (``ddp_notebook``) to the notebook's monitor.

With ``strategy="ddp_notebook"`` every rank, rank 0 included, runs in a process forked from the notebook's kernel;
a forked process cannot draw in the notebook (its output channel belongs to the kernel). So the monitor runs in the
kernel, sampling the machine (GPU memory and utilisation through NVML, host RAM and CPU), and rank 0 sends it short
text lines through a pipe made before the fork: ``S <samples>`` for a step, ``M <label>`` for a mark, ``R`` when
training starts, ``E`` at the end, which the kernel acknowledges so that the fit returns only after every line it
sent has reached the monitor. Written by hand because ``multiprocessing.Queue`` starts a feeder thread and pickles in
the writer; a pipe of text lines costs a system call per step. The writer never blocks: a full pipe (nobody reading)
drops the line and counts it. Taught in ``notebooks/06_lightning.ipynb``.
"""

from __future__ import annotations

import os
import select
import threading
from typing import Any

__all__ = ["StepRelay", "RELAY_THREAD_NAME"]

RELAY_THREAD_NAME = "gpulab-lightning-relay"
_POLL_S = 0.2
_MAX_LABEL = 200


class StepRelay:
    """Made in the process that runs the monitor, before Lightning forks; ``send_*`` are called in rank 0's process.

    The reading thread stops when the monitor stops, and closes the pipes; nothing is left behind.
    """

    def __init__(self, mon: Any, *, ack_timeout_s: float = 10.0) -> None:
        if not getattr(mon, "running", False):
            raise ValueError(
                f"{mon!r} is not running: start it first (`with gpulab.monitor('fit') as mon:`) and make "
                "the callback inside the block, so the ranks have somewhere to report."
            )
        self.mon = mon
        self.owner_pid = os.getpid()
        self.ack_timeout_s = ack_timeout_s
        self.dropped = 0  # lines a writer could not send (counted in the writer's process)
        self._events_r, self._events_w = os.pipe()
        self._ack_r, self._ack_w = os.pipe()
        self._writer_ready = False
        self._closed = False  # set before the pipes close: a process forked later must not write to reused fds
        self._thread = threading.Thread(target=self._read, name=RELAY_THREAD_NAME, daemon=True)
        self._thread.start()

    @property
    def in_owner(self) -> bool:
        """True in the process that made the relay (there the callback calls the monitor directly)."""
        return os.getpid() == self.owner_pid

    # -- rank 0's side ------------------------------------------------------------------------------------------------
    def _send(self, line: str) -> None:
        if self._closed:
            self.dropped += 1
            return
        if not self._writer_ready:
            os.set_blocking(self._events_w, False)  # in this (forked) process only: never stall training
            self._writer_ready = True
        try:
            os.write(self._events_w, (line + "\n").encode())  # one write under PIPE_BUF bytes: arrives whole
        except (BlockingIOError, BrokenPipeError):
            self.dropped += 1

    def send_step(self, samples: int) -> None:
        """From rank 0: one step of ``samples`` done (never blocks training; dropped if the pipe is full)."""
        self._send(f"S {int(samples)}")

    def send_mark(self, label: str) -> None:
        """From rank 0: mark ``label`` on the monitor's time axis (one line, shortened)."""
        self._send("M " + " ".join(str(label).split())[:_MAX_LABEL])

    def send_restart(self) -> None:
        """From rank 0: the first step's time counts from now."""
        self._send("R")

    def finish(self) -> bool:
        """Send the end and wait until the monitor has taken every line (at most ``ack_timeout_s``): True if it did."""
        self._send("E")
        if self._closed:
            return False
        ready, _, _ = select.select([self._ack_r], [], [], self.ack_timeout_s)
        if ready:
            os.read(self._ack_r, 1)
        return bool(ready)

    # -- the monitor's side (a thread in the owner) -------------------------------------------------------------------
    def _handle(self, line: str) -> None:
        kind, _, rest = line.partition(" ")
        if kind == "S":
            self.mon.step(samples=int(rest))
        elif kind == "M":
            self.mon.mark(rest)
        elif kind == "R":
            self.mon.restart_step_clock()
        elif kind == "E":
            os.write(self._ack_w, b"A")

    def _read(self) -> None:
        buffer = b""
        try:
            while self.mon.running:
                ready, _, _ = select.select([self._events_r], [], [], _POLL_S)
                if not ready:
                    continue
                buffer += os.read(self._events_r, 65536)
                *lines, buffer = buffer.split(b"\n")
                for line in lines:
                    try:
                        self._handle(line.decode())
                    except RuntimeError:  # the monitor stopped between two lines: the rest has nowhere to go
                        return
        finally:
            self._closed = True
            for fd in (self._events_r, self._events_w, self._ack_r, self._ack_w):
                os.close(fd)

    def join(self, timeout: float | None = None) -> None:
        """Wait for the reading thread to end (it ends within 0.2 s of the monitor stopping)."""
        self._thread.join(timeout)

    def __getstate__(self) -> dict[str, Any]:
        raise TypeError(
            "a StepRelay works only in processes forked from the one that made it (ddp_notebook, "
            "ddp_fork); spawn-based strategies pickle the callback and cannot reach the monitor."
        )
