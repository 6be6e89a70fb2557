"""The monitor's figure: built once, its lines updated in place; live in JupyterLab, static everywhere at the end.

``MonitorFigure`` is a plain ``matplotlib.figure.Figure`` (never pyplot, so no backend shows it twice and no global
figure list grows). ``update`` only calls ``set_data`` on existing lines and adds an artist per new mark. ``png``
renders it with Agg for the final static picture that nbval, nbconvert and handouts keep. ``LiveImage`` shows the same
figure live in JupyterLab: a render thread puts a fresh PNG into an ``ipywidgets.Image`` once a second (twice at
most); nothing is ever written into an ``Output`` widget from a thread. A live frame is blitted (``live_png``): while
the axis limits (which grow in steps, see ``limits``), marks and notes stay as they were, the axes, grid, ticks and
legends come from a cached picture and only the lines and marks are drawn again — a few ms instead of ~60 ms.
Panels: host memory, utilisation (CPU and each GPU), GPU memory (only when there are GPUs or CUDA devices), speed.
Taught in ``notebooks/05_live_monitor.ipynb``.
"""
from __future__ import annotations

import io
import textwrap
import threading
import time
from collections.abc import Sequence
from typing import Any

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, MaxNLocator

from ..core.units import format_bytes
from .decimate import envelope
from .history import History
from .limits import grow_limit
from .png import encode_png

__all__ = ["MonitorFigure", "LiveImage", "RENDER_THREAD_NAME"]

RENDER_THREAD_NAME = "gpulab-monitor-render"
_BYTES = FuncFormatter(lambda v, _pos: format_bytes(v, 1).replace(".0 ", " ") if v > 0 else "0")


class _BinaryLocator(MaxNLocator):
    """Round ticks in MiB or GiB (1, 2, 4, 5, 8 …), as memory is counted, not 953.7 MiB."""

    def tick_values(self, vmin: float, vmax: float) -> np.ndarray:
        unit = 1024.0**3 if vmax >= 4 * 1024**3 else 1024.0**2 if vmax >= 1024**2 else 1.0
        return super().tick_values(vmin / unit, vmax / unit) * unit


class MonitorFigure:
    """The monitor's panels over a ``History``'s columns."""

    def __init__(self, columns: Sequence[str], *, title: str = "", gpus: Sequence[int] = (), cuda_devices: int = 0,
                 notes: Sequence[str] = ()) -> None:
        self.columns = tuple(columns)
        has_gpu_memory = bool(gpus) or cuda_devices > 0
        names = ["host memory", "utilisation"] + (["GPU memory"] if has_gpu_memory else []) + ["speed"]
        self.figure = Figure(figsize=(9, 2.0 * len(names) + 0.8), dpi=80, layout="constrained")
        self._canvas = FigureCanvasAgg(self.figure)  # drawn with Agg in every notebook backend
        self._layout_engine = self.figure.get_layout_engine()
        self._needs_layout = True
        axes = self.figure.subplots(len(names), 1, sharex=True, squeeze=False)[:, 0]
        self.axes = dict(zip(names, axes))
        self.lines: dict[str, Any] = {}
        ax = self.axes["host memory"]
        self._line(ax, "host_memory_used_bytes", "host RAM used (cgroup-aware)")
        self._line(ax, "process_rss_bytes", "this process (RSS)")
        self._bytes_axis(ax)
        ax = self.axes["utilisation"]
        self._line(ax, "host_cpu_percent", "CPU, whole machine")
        self._line(ax, "process_cpu_percent", "CPU, this process")
        for k in gpus:
            self._line(ax, f"gpu{k}_utilization_percent", f"GPU {k}")
        ax.set_ylim(0, 105)
        ax.set_ylabel("%")
        if has_gpu_memory:
            ax = self.axes["GPU memory"]
            for k in gpus:
                self._line(ax, f"gpu{k}_memory_used_bytes", f"GPU {k} used (NVML, all processes)")
            for j in range(cuda_devices):
                self._line(ax, f"cuda{j}_allocated_bytes", f"cuda:{j} allocated (torch)")
                self._line(ax, f"cuda{j}_reserved_bytes", f"cuda:{j} reserved (torch)", linestyle=":")
            self._bytes_axis(ax)
        ax = self.axes["speed"]
        self._line(ax, "samples_per_s", "samples/s")
        ax.set_ylabel("samples/s")
        self._step_axis = ax.twinx()
        self._line(self._step_axis, "step_time_s", "step time (s, right)", color="tab:red", linestyle="--")
        self._step_axis.set_ylabel("step time (s)")
        ax.set_xlabel("seconds since the monitor started")
        # Titles at a fixed height (y=1.0) save a fifth of every full draw. It is where matplotlib puts them when
        # nothing is above a panel: no top tick labels, and no offset text ("1e6"), which only the speed panel can
        # get (a million samples/s), so its title keeps the automatic placement.
        for name, ax in self.axes.items():
            ax.set_title(name, loc="left", fontsize=9, **({} if name == "speed" else {"y": 1.0}))
            ax.grid(alpha=0.3)
        for name, ax in self.axes.items():
            handles = ax.lines + (self._step_axis.lines if name == "speed" else [])
            if handles:
                ax.legend(handles=handles, loc="lower right", bbox_to_anchor=(1.0, 1.0), ncols=3, fontsize=7,
                          frameon=False, borderaxespad=0.1)  # above the panel: never hides a line or a mark
        self._title = f"{title} — " if title else ""
        self.axes["host memory"].set_title(f"{self._title}host memory", loc="left", fontsize=9, y=1.0)
        self._marks_drawn = 0
        self._moving: list[Any] = list(self.lines.values())  # lines, then marks: drawn over the live background
        self._ax_columns = {ax: [self.columns.index(c) for c, line in self.lines.items() if line.axes is ax]
                            for ax in self.figure.axes}  # which columns each axes plots, for its live y limit
        self._live_top: dict[Any, float] = {}  # the live view's y limits, which only grow (limits.grow_limit)
        self._live_end = 10.0  # the live time axis: the first 10 s fill it from the left, then it grows in steps
        self._background, self._background_key = None, ()  # the live picture without lines and marks; what it shows
        self._margins: list[float] = []  # y tick label widths the live layout made room for
        self.full_draws = 0  # live frames drawn in full (the first, and after a limit, mark or note changed)
        self._notes = self.figure.text(0.01, 0.0, "", fontsize=7, color="dimgrey", va="bottom")
        self.set_notes(notes)

    @staticmethod
    def _bytes_axis(ax: Any) -> None:
        ax.yaxis.set_major_locator(_BinaryLocator(nbins=5, steps=[1, 2, 4, 5, 8, 10]))
        ax.yaxis.set_major_formatter(_BYTES)

    def _line(self, ax: Any, column: str, label: str, **style: Any) -> None:
        if column in self.columns:
            (self.lines[column],) = ax.plot([], [], label=label, linewidth=1.2, **style)

    def set_notes(self, notes: Sequence[str]) -> None:
        text = "\n".join(textwrap.shorten(n, 150) for n in notes)
        self._notes.set_text(text)
        bottom = 0.015 * (len(notes) + 1) if notes else 0.0  # room for the notes under the panels
        self._layout_engine.set(h_pad=0.04, rect=(0, bottom, 1, 1 - bottom))
        self._needs_layout = True

    def update(self, elapsed_s: np.ndarray, values: np.ndarray, marks: Sequence[tuple[float, str]] = (), *,
               stepped: bool = False) -> None:
        """Move every line to the new data (``set_data``), add any new marks, rescale. No artist is rebuilt.

        ``stepped=True`` (live frames): limits only grow, in round steps, so most frames can be blitted."""
        if stepped:  # live: the x limit first, then at most ~2 points per pixel column (decimate.envelope)
            self._live_end = grow_limit(self._live_end, float(elapsed_s[-1]) if len(elapsed_s) else 0.0)
        width = int(self.axes["speed"].bbox.width)
        for column, line in self.lines.items():
            y = values[:, self.columns.index(column)]
            line.set_data(*envelope(elapsed_s, y, self._live_end, width) if stepped else (elapsed_s, y))
        for t, label in marks[self._marks_drawn:]:
            for ax in self.axes.values():
                self._moving.append(ax.axvline(t, color="black", alpha=0.5, linewidth=0.8))
            top = self.axes["host memory"]
            self._moving.append(top.annotate(
                label, (t, 0.97), xycoords=("data", "axes fraction"), rotation=90, fontsize=8, va="top", ha="right",
                bbox={"boxstyle": "round,pad=0.1", "fc": "white", "alpha": 0.7, "linewidth": 0}))
        self._marks_drawn = max(self._marks_drawn, len(marks))
        if stepped:
            self._stepped_limits(elapsed_s, values)
        else:
            self._exact_limits(elapsed_s)
        if "host_memory_limit_bytes" in self.columns and len(values):
            limit = values[-1, self.columns.index("host_memory_limit_bytes")]
            self.axes["host memory"].set_title(f"{self._title}host memory (limit {format_bytes(limit)})", loc="left",
                                              fontsize=9, y=1.0)

    def _exact_limits(self, elapsed_s: np.ndarray) -> None:
        """Fit the data: y from zero to 8 % above the highest point, x from zero to the last reading."""
        for ax in list(self.axes.values()) + [self._step_axis]:
            ax.relim()
            ax.autoscale_view(scalex=False)
        self.axes["utilisation"].set_ylim(0, 105)
        for ax in [self.axes[n] for n in ("host memory", "GPU memory", "speed") if n in self.axes] + [self._step_axis]:
            ax.set_ylim(0, ax.get_ylim()[1] * 1.08, auto=None)  # from zero, with room above the highest point
        end = float(elapsed_s[-1]) if len(elapsed_s) else 1.0
        self.axes["speed"].set_xlim(0, max(end, 1.0))

    def _stepped_limits(self, elapsed_s: np.ndarray, values: np.ndarray) -> None:
        """Live limits: from zero to a round number that only grows (``grow_limit``); utilisation stays 0–105 %."""
        self.axes["utilisation"].set_ylim(0, 105)
        for ax, cols in self._ax_columns.items():
            if ax is self.axes["utilisation"] or not cols:
                continue
            seen = values[:, cols]
            seen = seen[np.isfinite(seen)]
            noisy = ax is self.axes["speed"] or ax is self._step_axis  # a slow step or a burst: more room above
            self._live_top[ax] = grow_limit(self._live_top.get(ax, 0.0), float(seen.max()) if seen.size else 0.0,
                                            headroom=1.5 if noisy else 1.25)
            ax.set_ylim(0, self._live_top[ax], auto=None)  # autoscaling stays on for the exact limits at the end
        self.axes["speed"].set_xlim(0, self._live_end)

    def update_from(self, history: History, marks: Sequence[tuple[float, str]] = (), *,
                    stepped: bool = False) -> None:
        self.update(*history.snapshot(), marks, stepped=stepped)

    def live_png(self) -> bytes:  # draw_live, then a light encoding: a third of print_png's encoding time
        self.draw_live()
        return encode_png(np.asarray(self._canvas.buffer_rgba()))

    def draw_live(self) -> bool:
        """Draw a live frame on the canvas: blitted over the cached background when that still shows the same axes,
        else drawn in full and the background cached again. Returns whether it was drawn in full.
        Lines and marks are drawn in the order a full draw uses (by zorder, then as added)."""
        for artist in self._moving:
            artist.set_animated(True)  # a full draw leaves them out of the background
        key = (tuple((ax.get_xlim(), ax.get_ylim()) for ax in self.figure.axes), len(self._moving),
               self._notes.get_text(), self.axes["host memory"].get_title(loc="left"))
        full = self._background is None or key != self._background_key or self._needs_layout
        if full:
            self._draw_background()
            self._background = self._canvas.copy_from_bbox(self.figure.bbox)
            self._background_key = key
            self.full_draws += 1
        else:
            self._canvas.restore_region(self._background)
        renderer = self._canvas.get_renderer()
        for ax in self.figure.axes:
            for artist in sorted((a for a in ax.get_children() if a.get_animated()), key=lambda a: a.get_zorder()):
                artist.draw(renderer)
        return full

    def _draw_background(self) -> None:
        """A full draw for the live view. The layout (half a full draw) is redone only when it has to be: the first
        time, after new notes, or when new limits made a panel's y tick labels wider than the layout left room for."""
        if self._needs_layout or not self._margins:
            relayout = True
        else:
            self.figure.set_layout_engine("none")
            self._canvas.draw()
            relayout = any(w > room + 0.5 for w, room in zip(self._y_label_widths(), self._margins))
        if relayout:
            self.figure.set_layout_engine(self._layout_engine)
            self._needs_layout = False
            self._canvas.draw()
            self._margins = self._y_label_widths()

    def _y_label_widths(self) -> list[float]:  # each axes' y tick labels and label, as last drawn, in pixels
        return [ax.yaxis.get_tightbbox(self._canvas.get_renderer()).width for ax in self.figure.axes]

    def png(self, *, relayout: bool = True) -> bytes:
        """The figure as PNG bytes (Agg), everything drawn in one pass: the static picture left at the end.
        ``relayout=False`` keeps the panels where the last laid-out draw put them (the layout is a third of a draw)."""
        for artist in self._moving:
            artist.set_animated(False)  # after live frames: the static picture draws everything in one pass
        self._background, self._margins = None, []
        if relayout or self._needs_layout:
            self.figure.set_layout_engine(self._layout_engine)
            self._needs_layout = False
        else:
            self.figure.set_layout_engine("none")
        buf = io.BytesIO()
        self._canvas.print_png(buf)
        return buf.getvalue()


class LiveImage:
    """The live view: an ``ipywidgets.Image`` whose PNG the render thread replaces at most every ``interval_s``.

    Why not an ipympl canvas: while a cell runs, the kernel cannot answer the canvas's start-up handshake, and
    JupyterLab (4.6, ipympl 0.10) leaves it blank until the cell ends — when a monitor no longer needs it. An
    ``Image`` widget's value, set from a thread, reaches the page at once (the ipywidgets docs' pattern for threads).
    """

    def __init__(self, figure: MonitorFigure, history: History, marks: list[tuple[float, str]],
                 interval_s: float = 1.0, missing: Sequence[str] = ()) -> None:
        import ipywidgets  # the one import of ipywidgets for this view

        self.figure = figure
        self._missing = missing  # the sampler's list, which grows in place when something stops being readable
        self._notes_shown = -1
        self._history = history
        self._marks = marks
        self.interval_s = interval_s
        self.widget = ipywidgets.Image(format="png")
        self.draws = 0
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
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)

    def replace_with(self, png: bytes) -> None:
        """Put the final static picture where the live one was (a saved notebook keeps an image, not a widget)."""
        from IPython.display import Image

        if self._handle is not None:
            self._handle.update(Image(data=png, format="png"))
        self.widget.close()
