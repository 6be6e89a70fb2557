"""The monitor's figure: what each panel shows, built once per set of panels and updated in place (a view).

Readable from the back of a room: only panels with something in them (``panels.panels_with_data``: no speed panel
before a step is reported), memory as the change since the start (the level at the start in the legend), speed
averaged over a second with the raw readings faint, event marks as faint lines whose labels are thinned so that none
overlap, legends right of their panel where no title can collide with them, and fonts sized for a projector. Up to
four GPUs get a line each; more get one map each for utilisation and memory (a row per GPU, darker = fuller), so that
eight GPUs read at a glance instead of as sixteen lines. Drawing live is ``blit.BlitFigure``'s job.
Taught in ``notebooks/05_live_monitor.ipynb``.
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from matplotlib.ticker import FuncFormatter

from ..core.units import format_bytes
from .blit import BlitFigure
from .decimate import envelope
from .limits import fitted_limits, grow_limit, live_limits
from .panels import (
    MANY_GPUS,
    change_since_start,
    column_maxima,
    mark_labels,
    panels_with_data,
    smoothed_rate,
    smoothing_window,
)
from .ring_buffer import History
from .style import (
    DPI,
    HEIGHT_IN,
    LEGEND_PT,
    MARK_PT,
    MIN_MEMORY_SPAN,
    PANEL_TITLE_PT,
    SMOOTHING_S,
    TICK_PT,
    TITLE_PT,
    TITLES,
    WIDTH_IN,
    BinaryLocator,
    memory_tick,
)

__all__ = ["MonitorFigure"]


class MonitorFigure(BlitFigure):
    """The monitor's panels over a ``History``'s columns."""

    def __init__(
        self,
        columns: Sequence[str],
        *,
        title: str = "",
        gpus: Sequence[int] = (),
        cuda_devices: int = 0,
        notes: Sequence[str] = (),
    ) -> None:
        super().__init__(WIDTH_IN, 5.0, DPI)
        self.columns = tuple(columns)
        self._at = {c: i for i, c in enumerate(self.columns)}
        self.gpus, self.cuda_devices, self.title = tuple(gpus), int(cuda_devices), title
        self._notes_text, self.panels = "", ()
        self._build(panels_with_data(self.columns, np.empty((0, len(self.columns))), self.gpus))
        self.set_notes(notes)

    # -- building ---------------------------------------------------------------------------------------------------
    def _build(self, panels: tuple[str, ...]) -> None:
        fig = self.figure
        fig.clear()
        fig.set_size_inches(WIDTH_IN, 0.9 + sum(HEIGHT_IN[p] for p in panels))
        fig.set_layout_engine(self._layout_engine)
        axes = fig.subplots(
            len(panels), 1, sharex=True, squeeze=False, gridspec_kw={"height_ratios": [HEIGHT_IN[p] for p in panels]}
        )[:, 0]
        self.panels, self.axes = panels, dict(zip(panels, axes))
        self.lines: dict[str, Any] = {}
        self._compute: dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {}
        self._maps: dict[str, tuple[Any, list[int]]] = {}
        self._marks: list[Any] = []
        self._marks_key: tuple = ()
        self._last_marks: list[tuple[float, str]] = []
        self._live_limits: dict[str, tuple[float, float]] = {}
        self._span = 0.0  # how long the run drawn is (sizes the speed average)
        self._live_end = 10.0  # the live time axis: the first 10 s fill it from the left, then it grows in steps
        self._reset_background()
        if self.title:
            fig.suptitle(self.title, x=0.01, ha="left", fontsize=TITLE_PT, fontweight="bold")
        self._notes = fig.text(0.01, 0.0, self._notes_text, fontsize=TICK_PT, color="#333", va="bottom")
        self._room_for_notes()  # the figure's height changed with its panels
        for name, ax in self.axes.items():
            getattr(self, "_panel_" + name.replace(" ", "_"))(ax)
            ax.set_title(TITLES.get(name, name), loc="left", fontsize=PANEL_TITLE_PT, y=1.0)
            ax.tick_params(labelsize=TICK_PT)
            if not name.endswith("map"):
                ax.grid(alpha=0.3)
                ax.legend(
                    loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=LEGEND_PT, frameon=False, borderaxespad=0.0
                )
        axes[-1].set_xlabel("seconds since the monitor started", fontsize=TICK_PT)

    def _line(self, ax: Any, key: str, compute: Callable, label: str, **style: Any) -> None:
        (self.lines[key],) = ax.plot([], [], label=label, **{"linewidth": 1.8, **style})
        self._compute[key] = compute

    def _column(self, ax: Any, column: str, label: str, **style: Any) -> None:
        if column in self._at:
            i = self._at[column]
            self._line(ax, column, lambda t, v: v[:, i], label, **style)

    def _map(self, ax: Any, key: str, columns: list[str]) -> None:
        image = ax.imshow(
            np.zeros((len(self.gpus), 1)),
            aspect="auto",
            cmap="Greens",
            vmin=0,
            vmax=100,
            interpolation="nearest",
            extent=(0, 1, len(self.gpus) - 0.5, -0.5),
        )
        ax.set_yticks(range(len(self.gpus)), [f"GPU {k}" for k in self.gpus])
        self._maps[key] = (image, [self._at[c] for c in columns])

    def _panel_memory(self, ax: Any) -> None:
        for col, label in (("host_memory_used_bytes", "host RAM in use"), ("process_rss_bytes", "this process (RSS)")):
            if col in self._at:
                i = self._at[col]
                self._line(ax, col, lambda t, v, i=i: change_since_start(v[:, i])[0], label)
        ax.yaxis.set_major_locator(BinaryLocator(nbins=5, steps=[1, 2, 4, 5, 8, 10]))
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _pos: memory_tick(v, signed=True)))

    def _panel_utilisation(self, ax: Any) -> None:
        self._column(ax, "host_cpu_percent", "CPU, whole machine")
        self._column(ax, "process_cpu_percent", "CPU, this process")
        for k in self.gpus if len(self.gpus) <= MANY_GPUS else ():
            self._column(ax, f"gpu{k}_utilization_percent", f"GPU {k}")
        ax.set_ylim(0, 105)

    def _panel_GPU_memory(self, ax: Any) -> None:
        for k in self.gpus if len(self.gpus) <= MANY_GPUS else ():
            self._column(ax, f"gpu{k}_memory_used_bytes", f"GPU {k} used (NVML, all processes)")
        for what, style in (("allocated", "-"), ("reserved", ":")):
            cols = [f"cuda{j}_{what}_bytes" for j in range(self.cuda_devices)]
            if len(cols) <= 2:
                for j, col in enumerate(cols):
                    self._column(ax, col, f"cuda:{j} {what} (torch)", linestyle=style)
            else:  # a process that sees many GPUs: its totals, not a line per device
                idx = [self._at[c] for c in cols]
                self._line(
                    ax,
                    f"cuda {what}",
                    lambda t, v, idx=idx: np.nansum(v[:, idx], axis=1),
                    f"{what}, all {len(cols)} cuda devices (torch)",
                    linestyle=style,
                )
        ax.yaxis.set_major_locator(BinaryLocator(nbins=5, steps=[1, 2, 4, 5, 8, 10]))
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _pos: memory_tick(v, signed=False)))

    def _panel_GPU_busy_map(self, ax: Any) -> None:
        self._map(ax, "busy", [f"gpu{k}_utilization_percent" for k in self.gpus])

    def _panel_GPU_memory_map(self, ax: Any) -> None:
        self._map(ax, "memory", [f"gpu{k}_memory_used_bytes" for k in self.gpus])
        self._map_totals = [self._at[f"gpu{k}_memory_total_bytes"] for k in self.gpus]

    def _panel_speed(self, ax: Any) -> None:
        self._column(ax, "samples_per_s", "each reading", linewidth=0.8, alpha=0.35, color="tab:blue", zorder=1.8)
        total = self._at["samples_total"]
        self._line(
            ax,
            "smoothed",
            lambda t, v: smoothed_rate(t, v[:, total], self._window()),
            f"{SMOOTHING_S:g} s average",
            linewidth=2.6,
            color="tab:blue",
            zorder=2.2,
        )

    def _window(self) -> float:
        """The speed average's window, sized to the time axis (the run; live, the axis's current span, which grows in
        steps, so the legend rarely changes and frames stay blitted), and said so in the legend."""
        window = smoothing_window(self._span, SMOOTHING_S)
        line = self.lines["smoothed"]
        if line.get_label() != f"{window:g} s average":
            line.set_label(f"{window:g} s average")
            line.axes.legend(
                loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=LEGEND_PT, frameon=False, borderaxespad=0.0
            )
        return window

    def set_notes(self, notes: Sequence[str]) -> None:
        """Show ``notes`` under the panels, in full, wrapped at word boundaries (what could not be read)."""
        # in full, wrapped at word boundaries (never cut with "[…]"), backticks dropped: a figure has no code font
        lines = [line for n in notes for line in textwrap.wrap(n.replace("`", ""), 150)]
        self._notes_text = "\n".join(lines)
        self._notes.set_text(self._notes_text)
        self._room_for_notes()

    def _room_for_notes(self) -> None:
        """Keep the panels (and their axis label) clear of the notes: their lines' height, as a share of the figure."""
        lines = self._notes_text.count("\n") + 1 if self._notes_text else 0
        bottom = (lines + 0.6) * TICK_PT * 1.3 / 72 / self.figure.get_figheight() if lines else 0.0
        self._layout_engine.set(h_pad=0.05, rect=(0, bottom, 1, 1 - bottom))
        self.needs_layout = True

    # -- data -------------------------------------------------------------------------------------------------------
    def update(
        self,
        elapsed_s: np.ndarray,
        values: np.ndarray,
        marks: Sequence[tuple[float, str]] = (),
        *,
        stepped: bool = False,
    ) -> None:
        """Move every artist to the new data, rebuild only if the set of panels with data changed, rescale.

        ``stepped=True`` (live frames): limits only grow, in round steps, so most frames can be blitted."""
        panels = panels_with_data(self.columns, values, self.gpus)
        if panels != self.panels:
            self._build(panels)
        if stepped:
            self._live_end = grow_limit(self._live_end, float(elapsed_s[-1]) if len(elapsed_s) else 0.0)
        end = self._live_end if stepped else max(float(elapsed_s[-1]) if len(elapsed_s) else 1.0, 1.0)
        self._span = float(elapsed_s[-1]) if len(elapsed_s) and not stepped else end
        self._last_marks = list(marks)
        width = int(self.axes[self.panels[-1]].bbox.width)
        seen: dict[Any, list[np.ndarray]] = {ax: [] for ax in self.axes.values()}
        for key, line in self.lines.items():
            y = self._compute[key](elapsed_s, values)
            if (line.get_alpha() or 1.0) > 0.5:  # the faint raw readings do not set the limits
                seen[line.axes].append(y)
            line.set_data(*envelope(elapsed_s, y, self._live_end, width) if stepped else (elapsed_s, y))
        for key, (image, idx) in self._maps.items() if len(elapsed_s) else ():
            block = values[:, idx]
            if key == "memory":
                block = 100.0 * block / values[:, self._map_totals]
            bins = int(min(width, max(1, round(len(elapsed_s) * end / max(float(elapsed_s[-1]), 1e-9)))))
            image.set_data(column_maxima(elapsed_s, block, end, bins).T)
            image.set_extent((0, end, len(self.gpus) - 0.5, -0.5))
        self._memory_labels(values)
        for name, ax in self.axes.items():
            if name == "utilisation":
                ax.set_ylim(0, 105)
            elif not name.endswith("map"):
                arrays = seen[ax]
                self._set_ylim(name, np.concatenate(arrays) if arrays else np.empty(0), stepped, bool(marks))
        self.axes[self.panels[-1]].set_xlim(0, end)
        self._place_marks(marks)

    def _memory_labels(self, values: np.ndarray) -> None:
        """The memory panel's legend says where each line started; its title, the host's limit."""
        if "memory" not in self.axes or not len(values):
            return
        ax, changed = self.axes["memory"], False
        for col, base in (("host_memory_used_bytes", "host RAM in use"), ("process_rss_bytes", "this process (RSS)")):
            start = change_since_start(values[:, self._at[col]])[1] if col in self.lines else np.nan
            if np.isfinite(start) and self.lines[col].get_label() == base:
                self.lines[col].set_label(f"{base}, {format_bytes(start)} at the start")
                changed = True
        if changed:
            ax.legend(
                loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=LEGEND_PT, frameon=False, borderaxespad=0.0
            )
        limit = values[-1, self._at["host_memory_limit_bytes"]] if "host_memory_limit_bytes" in self._at else np.nan
        title = "memory: change since the start" + (
            f" (host limit {format_bytes(limit)})" if np.isfinite(limit) else ""
        )
        if ax.get_title(loc="left") != title:
            ax.set_title(title, loc="left", fontsize=PANEL_TITLE_PT, y=1.0)

    def _set_ylim(self, name: str, seen: np.ndarray, stepped: bool, marks: bool) -> None:
        ax = self.axes[name]
        seen = seen[np.isfinite(seen)]
        high = float(seen.max()) if seen.size else 0.0
        low = min(float(seen.min()), 0.0) if seen.size else 0.0
        if name == "memory":  # a few MiB of noise must not fill the panel
            high = max(high, low + MIN_MEMORY_SPAN)
        room = 1.35 if (marks and name == self.panels[0]) else 1.0  # the top panel carries the mark labels
        if stepped:
            headroom = 1.5 if name == "speed" else 1.25
            self._live_limits[name] = live_limits(low, high * room, self._live_limits.get(name), headroom=headroom)
            ax.set_ylim(*self._live_limits[name])
        else:
            ax.set_ylim(*fitted_limits(low, high, room))

    def _place_marks(self, marks: Sequence[tuple[float, str]]) -> None:
        """Faint lines at every mark on every panel; labels on the top panel, thinned so that none overlap."""
        top = self.axes[self.panels[0]]
        x0, x1 = top.get_xlim()
        key = (tuple(marks), (x0, x1), int(top.bbox.width))
        if key == self._marks_key:
            return
        self._marks_key = key
        for artist in self._marks:
            artist.remove()
        self._marks = [
            ax.axvline(t, color="black", alpha=0.35, linewidth=0.9, zorder=1.5)
            for t, _ in marks
            for name, ax in self.axes.items()
            if not name.endswith("map")
        ]
        px = [(t - x0) / (x1 - x0) * top.bbox.width for t, _ in marks]
        for i, text, ha in mark_labels(px, [label for _, label in marks], top.bbox.width, MARK_PT, DPI):
            self._marks.append(
                top.annotate(
                    text,
                    (marks[i][0], 0.97),
                    xycoords=("data", "axes fraction"),
                    xytext=(3 if ha == "left" else -3, 0),
                    textcoords="offset points",
                    fontsize=MARK_PT,
                    va="top",
                    ha=ha,
                    zorder=3,
                    bbox={"boxstyle": "round,pad=0.15", "fc": "white", "alpha": 0.85, "linewidth": 0},
                )
            )

    def update_from(self, history: History, marks: Sequence[tuple[float, str]] = (), *, stepped: bool = False) -> None:
        """Redraw every panel from ``history`` and the ``marks`` (``stepped``: a live frame, between two samples)."""
        self.update(*history.snapshot(), marks, stepped=stepped)

    # -- what BlitFigure draws --------------------------------------------------------------------------------------
    def moving(self) -> list[Any]:
        """The lines and heat maps that change every frame."""
        return list(self.lines.values()) + [image for image, _ in self._maps.values()]

    def background_key(self) -> tuple:
        """The panels, their limits, the marks, the notes, the legend and the title: a change redraws the background."""
        return (
            self.panels,
            tuple((ax.get_xlim(), ax.get_ylim()) for ax in self.figure.axes),
            self._marks_key,
            self._notes_text,
            tuple(line.get_label() for line in self.lines.values()),
            self.axes[self.panels[0]].get_title(loc="left"),
        )

    def after_layout(self) -> None:
        """Place the marks again, thinned for the width the layout gave the panels."""
        self._place_marks(self._last_marks)  # thinned for the width the layout really gave the panels
