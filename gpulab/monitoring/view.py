"""The monitor's live view in JupyterLab: an image widget that a render thread redraws once a second.

The figure itself is ``figure.MonitorFigure`` (re-exported here). ``LiveImage`` shows it live: a render thread puts a
fresh PNG into an ``ipywidgets.Image`` once a second (twice at most); nothing is ever written into an ``Output``
widget from a thread. A live frame is blitted (``MonitorFigure.live_png``): a few ms instead of ~60 ms.
Taught in ``notebooks/05_live_monitor.ipynb``.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from typing import Any

from .figure import MonitorFigure
from .ring_buffer import History

__all__ = ["MonitorFigure", "LiveImage", "RENDER_THREAD_NAME"]

RENDER_THREAD_NAME = "gpulab-monitor-render"


class LiveImage:
    """The live view: an ``ipywidgets.Image`` whose PNG the render thread replaces at most every ``interval_s``.

    Why not an ipympl canvas: while a cell runs, the kernel cannot answer the canvas's start-up handshake, and
    JupyterLab (4.6, ipympl 0.10) leaves it blank until the cell ends — when a monitor no longer needs it. An
    ``Image`` widget's value, set from a thread, reaches the page at once (the ipywidgets docs' pattern for threads).
    """

    def __init__(
        self,
        figure: MonitorFigure,
        history: History,
        marks: list[tuple[float, str]],
        interval_s: float = 1.0,
        missing: Sequence[str] = (),
    ) -> None:
        import ipywidgets  # the one import of ipywidgets for this view

        self.figure = figure
        self._missing = missing  # the sampler's list, which grows in place when something stops being readable
        self._notes_shown = -1
        self._history = history
        self._marks = marks
        self.interval_s = interval_s
        self.widget = ipywidgets.Image(format="png")
        self.draws = 0
        self.wakeups = 0  # the render thread's turns, drawn or skipped (a skip needs a turn to be seen)
        self.cpu_s = 0.0  # the render thread's CPU time: what the live view costs the training loop
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._handle: Any = None

    def show(self) -> None:
        """Display the widget (main thread) and start redrawing it."""
        from IPython.display import display

        self._handle = display(self.widget, display_id=True)
        self._thread = threading.Thread(target=self._run, name=RENDER_THREAD_NAME, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        # The first frame comes one interval in, with data to fit (at once, it would be empty and its axes would all
        # change a second later). A block shorter than an interval draws no live frame, only the static figure.
        shown: tuple[int, int, int] | None = None
        while not self._stop.wait(self.interval_s):
            self.wakeups += 1
            now = (self._history.appended, len(self._marks), len(self._missing))
            if now != shown:  # nothing new sampled, marked or missing (a stalled sampler): the frame is the same
                shown, started = now, time.thread_time()
                if len(self._missing) != self._notes_shown:
                    self._notes_shown = len(self._missing)
                    self.figure.set_notes([f"not shown: {n}" for n in list(self._missing)])
                self.figure.update_from(self._history, list(self._marks), stepped=True)
                self.widget.value = self.figure.live_png()  # set from a thread, it reaches the page at once
                self.draws += 1
                self.cpu_s += time.thread_time() - started

    def stop(self, timeout: float = 10.0) -> None:
        """Stop redrawing and wait up to ``timeout`` seconds for the drawing thread to end."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)

    def replace_with(self, png: bytes) -> None:
        """Put the final static picture where the live one was (a saved notebook keeps an image, not a widget)."""
        from IPython.display import Image

        if self._handle is not None:
            self._handle.update(Image(data=png, format="png"))
        self.widget.close()
