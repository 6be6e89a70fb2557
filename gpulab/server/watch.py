"""Watching the whole server all workshop long: ``python -m gpulab watch`` in a terminal, ``watch_gpus()`` in a cell.

Every ``interval_s`` it reads every GPU (NVML, or the described GPUs of ``GPULAB_SIMULATE_GPUS``, labelled SIMULATED),
who holds a gpulab reservation on each, whose processes run there (Unix user, Jupyter kernel), and which JupyterHub
servers run on GPUs no reservation holds ("unheld", after a Hub crash; read from the environments this user may read:
all of them for root), and redraws ``room.ServerView`` in place: the terminal is cleared and rewritten (like ``gpustat
--watch``), the notebook cell's ``ipywidgets.HTML`` gets a new value from a thread, as the live monitor does. Written
here rather than taken from nvitop or gpustat because neither knows gpulab's reservations, and both would need their own
install. Nothing here creates a CUDA context. Taught in ``notebooks/workshop_guide.ipynb``.
"""

from __future__ import annotations

import os
import socket
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any, TextIO

from ..core.arguments import is_real_number
from ..core.readings import Unavailable
from ..core.scheduler import allocation
from ..core.widget_view import widget_bundle
from ..machine.nvml import GpuReader
from ..machine.resolve import as_reader
from ..reservations.holders import reservation_holders
from ..reservations.yours import yours_and_others
from .owners import Owner, hub_servers, process_owner
from .render import ServerView, render_html, render_text
from .reservation_list import reservation_rows

__all__ = ["read_server", "watch_terminal", "ServerWatch", "watch_gpus", "WATCH_THREAD_NAME"]

WATCH_THREAD_NAME = "gpulab-watch"
_HOME_AND_CLEAR = "\x1b[H\x1b[2J"


def _validated_interval(interval_s: float) -> float:
    if not is_real_number(interval_s):
        raise TypeError(
            f"interval_s={interval_s!r:.40} is a {type(interval_s).__name__}; interval_s takes a number of "
            "seconds between redraws, written without quotes: interval_s=2."
        )
    if not interval_s >= 0.5:  # NaN too
        raise ValueError(
            f"an interval of {interval_s!r} s: the server view would be redrawn too often; use 0.5 or "
            "more (2 is plenty: NVML's process list is slow and holds a driver lock)."
        )
    return float(interval_s)


def read_server(
    machine: GpuReader | str | None = None, reservations: str | os.PathLike[str] | None = None, interval_s: float = 2.0
) -> ServerView:
    """One reading: every GPU with its processes, the reservations in ``reservations`` (default: the shared one) and
    the owner of each pid seen."""
    reader = as_reader(machine)
    gpus = tuple(reader.info(i, processes=True) for i in range(reader.count()))
    holders = reservation_holders([g.uuid for g in gpus] + [m.uuid for g in gpus for m in g.mig_devices], reservations)
    simulated = bool(getattr(reader, "simulated", False))
    owners: dict[int, str] = {}
    for g in gpus:
        for p in () if isinstance(g.processes, Unavailable) else g.processes:
            # a described machine's pids are not this machine's processes: name them as described
            owners[p.pid] = f"pid {p.pid} {p.name} (described)" if simulated else str(process_owner(p.pid))
    # a holder that wrote its name: that user, and what its pid is (a kernel, a script) as the room knows it
    # (a reservation of this very process reads "this notebook", as in the picker); a kernel whose command line names
    # no connection file (a provisioned kernel) is named by the kernel id its reservation wrote
    holder_text = {
        uuid: str(_named_owner(h.pid, h.user, h.details.get("kernel")))
        if h.pid is not None and h.user is not None and not h.mine
        else h.text
        for uuid, h in holders.items()
    }
    unheld = []
    for server in hub_servers(kernels=True):  # servers (a Hub crashed) and kernels' ranks on GPUs nobody holds
        lost = [g.physical_index for g in gpus if g.uuid in server.uuids and g.uuid not in holders]
        if lost:
            unheld.append(
                f"unheld: {server} runs on GPU {', '.join(map(str, lost))}, which no reservation holds, so the next "
                + (
                    "kernel may be given it too: its kernel ended without it; stop it (kill " + str(server.pid) + ")"
                    if server.kernel
                    else "spawn may be given it too: stop that server, or start the Hub again if it crashed (it "
                    "reserves again what it held for the servers that outlived it)"
                )
            )
    yours, _ = yours_and_others(holders)  # the watching process's own and its server's: "yours", as the picker
    return ServerView(
        gpus,
        holder_text,
        owners,
        socket.gethostname(),
        time.time(),
        interval_s,
        simulated,
        reader.error,
        tuple(reservation_rows(gpus, reservations)),
        tuple(unheld),
        yours,
        {u: (len(h.shares), max(n for _, n, _ in h.shares)) for u, h in holders.items() if h.shares},
        allocation(os.environ),
    )


def watch_terminal(
    machine: GpuReader | str | None = None,
    *,
    interval_s: float = 2.0,
    frames: int | None = None,
    reservations: str | os.PathLike[str] | None = None,
    out: TextIO | None = None,
    sleep: Callable[[float], Any] = time.sleep,
) -> int:
    """Redraw the server view every ``interval_s`` until Ctrl-C (or ``frames`` views); returns the views drawn.

    On a terminal the screen is cleared and rewritten in place, in colour; into a pipe or file each view is
    appended, plain, separated by a blank line."""
    interval_s = _validated_interval(interval_s)
    out = out or sys.stdout
    tty = out.isatty()
    drawn = 0
    try:
        while frames is None or drawn < frames:
            text = render_text(read_server(machine, reservations, interval_s), color=tty)
            out.write(
                (_HOME_AND_CLEAR + text + f"\n(every {interval_s:g} s; Ctrl-C stops)\n")
                if tty
                else (("\n" if drawn else "") + text + "\n")
            )
            out.flush()
            drawn += 1
            if frames is None or drawn < frames:
                sleep(interval_s)
    except KeyboardInterrupt:
        out.write("\n")
    return drawn


class ServerWatch:
    """The server view in a notebook cell, redrawn by a thread every ``interval_s`` while the kernel is idle too.

    ``stop()`` (or the end of a ``with`` block) ends the thread; ``frames`` bounds it. The widget is shown from the
    thread that made it; only its value is set from the watching thread (the ipywidgets pattern for threads)."""

    def __init__(
        self,
        machine: GpuReader | str | None = None,
        *,
        interval_s: float = 2.0,
        frames: int | None = None,
        reservations: str | os.PathLike[str] | None = None,
    ) -> None:
        import ipywidgets  # the one import of ipywidgets for this view

        self.interval_s = _validated_interval(interval_s)
        self.reader = as_reader(machine)
        self._reservations, self._frames = reservations, frames
        self.view = read_server(self.reader, reservations, self.interval_s)
        self.widget = ipywidgets.HTML(render_html(self.view))
        self.frames_drawn = 1
        self.error: str | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=WATCH_THREAD_NAME, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            if self._frames is not None and self.frames_drawn >= self._frames:
                return
            try:
                self.view = read_server(self.reader, self._reservations, self.interval_s)
                self.widget.value = render_html(self.view)
            except Exception as exc:  # a driver hiccup: say it in the cell, keep watching
                self.error = f"{type(exc).__name__}: {exc}"
                self.widget.value = (
                    render_html(self.view) + f"<p style='color:#b00'>last reading failed: {self.error}</p>"
                )
            self.frames_drawn += 1

    @property
    def running(self) -> bool:
        """Whether the view is still redrawn."""
        return self._thread.is_alive()

    def stop(self, timeout: float = 10.0) -> None:
        """Stop redrawing (the last view stays in the cell)."""
        self._stop.set()
        if self._thread is not threading.current_thread():
            self._thread.join(timeout)

    def __enter__(self) -> ServerWatch:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def __str__(self) -> str:
        return render_text(self.view)

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        return widget_bundle(self.widget.model_id, str(self))  # not the widget's own: ipywidgets 7 has none


def watch_gpus(
    machine: GpuReader | str | None = None,
    *,
    interval_s: float = 2.0,
    frames: int | None = None,
    reservations: str | os.PathLike[str] | None = None,
) -> ServerWatch:
    """``gpulab.server.watch.watch_gpus()`` as a cell's last line: the server view, redrawn every ``interval_s``
    until ``.stop()``. ``python -m gpulab watch`` is the same in a terminal."""
    return ServerWatch(machine, interval_s=interval_s, frames=frames, reservations=reservations)


def _named_owner(pid: int, user: str, reserved_kernel: str | None) -> Owner:
    """The holder's process as ``process_owner`` sees it, under the user its reservation names, and named by the
    kernel id its reservation wrote where its command line names no connection file (``kernel ?``)."""
    owner = replace(process_owner(pid), user=user)
    return replace(owner, kernel=reserved_kernel) if owner.kernel == "?" and reserved_kernel else owner
