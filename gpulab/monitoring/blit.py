"""Drawing a figure live, cheaply: a cached background and only the moving artists drawn again (a view helper).

A full Agg draw of the monitor's figure costs tens of milliseconds, half of it the layout. ``BlitFigure`` draws a live
frame in full only when what the background shows changed (``background_key``: limits, marks, legends, notes), and
otherwise restores the cached picture and draws the data artists (``moving``) over it, in zorder: a few ms. The
layout is redone only when it must be: the first time, after ``needs_layout``, or when new limits made some y tick
labels wider than the layout left room for. ``png`` draws everything in one pass for the static picture.
Taught in ``notebooks/05_live_monitor.ipynb``.
"""

from __future__ import annotations

import io
from typing import Any

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from .png import encode_png

__all__ = ["BlitFigure"]


class BlitFigure:
    """A plain ``Figure`` (never pyplot) with an Agg canvas, drawn live by blitting; subclasses say what moves."""

    def __init__(self, width_in: float, height_in: float, dpi: int) -> None:
        self.figure = Figure(figsize=(width_in, height_in), dpi=dpi, layout="constrained")
        self._canvas = FigureCanvasAgg(self.figure)  # drawn with Agg in every notebook backend
        self._layout_engine = self.figure.get_layout_engine()
        self.full_draws = 0  # live frames drawn in full (the first, and after the background changed)
        self._reset_background()

    def _reset_background(self) -> None:
        self._background, self._background_key, self._margins = None, (), []
        self.needs_layout = True

    # what subclasses provide
    def moving(self) -> list[Any]:
        """The artists redrawn every frame; the rest is the background, drawn once. Subclasses say which."""
        return []

    def background_key(self) -> tuple:
        """What the background depends on: when it changes, the next frame is drawn in full. Subclasses say what."""
        return ()

    def after_layout(self) -> None:
        """Called after each layout, before the figure is drawn with it (the figure's final geometry)."""

    def live_png(self) -> bytes:  # draw_live, then a light encoding: a third of print_png's encoding time
        """One live frame as PNG bytes: only the moving artists redrawn, encoded lightly (a third of ``print_png``'s
        time)."""
        self.draw_live()
        return encode_png(np.asarray(self._canvas.buffer_rgba()))

    def draw_live(self) -> bool:
        """Draw a live frame on the canvas: blitted over the cached background when that still shows the same
        things, else drawn in full and cached again. Returns whether it was drawn in full."""
        moving = self.moving()
        for artist in moving:
            artist.set_animated(True)  # a full draw leaves them out of the background
        key = self.background_key()
        full = self._background is None or key != self._background_key or self.needs_layout
        if full:
            self._draw_background()
            self._background = self._canvas.copy_from_bbox(self.figure.bbox)
            self._background_key = self.background_key()  # as drawn: the layout may have moved labels
            self.full_draws += 1
        else:
            self._canvas.restore_region(self._background)
        renderer = self._canvas.get_renderer()
        for artist in sorted(moving, key=lambda a: a.get_zorder()):
            artist.draw(renderer)
        return full

    def _draw_background(self) -> None:
        if self.needs_layout or not self._margins:
            relayout = True
        else:
            self.figure.set_layout_engine("none")
            self._canvas.draw()
            relayout = any(w > room + 0.5 for w, room in zip(self._y_label_widths(), self._margins))
        if relayout:
            self._lay_out()
            self.needs_layout = False
            self.after_layout()  # e.g. labels placed for the width the layout gave
            self.figure.set_layout_engine("none")
            self._canvas.draw()
            self.figure.set_layout_engine(self._layout_engine)
            self._margins = self._y_label_widths()

    def _lay_out(self) -> None:
        """Constrained layout from the grid's own positions: its result depends on where the axes start (legends sit
        relative to them), so a figure drawn live before lays out exactly as a fresh one."""
        for ax in self.figure.axes:
            spec = ax.get_subplotspec()
            if spec is not None:
                ax.set_subplotspec(spec)  # puts the axes back where its grid cell is
        self._layout_engine.execute(self.figure)

    def _y_label_widths(self) -> list[float]:  # each axes' y tick labels and label, as last drawn, in pixels
        return [ax.yaxis.get_tightbbox(self._canvas.get_renderer()).width for ax in self.figure.axes]

    def png(self, *, relayout: bool = True) -> bytes:
        """The figure as PNG bytes (Agg), everything drawn in one pass: the static picture left at the end.
        ``relayout=False`` keeps the panels where the last laid-out draw put them (the layout is a third of a draw)."""
        for artist in self.moving():
            artist.set_animated(False)  # after live frames: the static picture draws everything in one pass
        self._background, self._margins = None, []
        if relayout or self.needs_layout:
            self._lay_out()
            self.needs_layout = False
            self.after_layout()
        self.figure.set_layout_engine("none")
        buf = io.BytesIO()
        self._canvas.print_png(buf)
        self.figure.set_layout_engine(self._layout_engine)
        return buf.getvalue()
