"""Watch memory, utilisation and speed while code runs: ``with gpulab.monitor("title") as mon: ...``.

A sampling thread reads the GPUs (NVML), torch's CUDA memory (only once CUDA is initialised — the monitor never
initialises it), host RAM (cgroup-aware) and CPU, and the work the loop reports with ``mon.step(samples=...)`` or by
iterating ``mon.wrap(loader)``. ``mon.mark("epoch 2")`` puts an event on the time axis. In JupyterLab the figure is
live (an image widget redrawn once a second); everywhere, when the block ends — normally, on an exception or on
Ctrl-C — the thread stops and a static figure and a ``MonitorSummary`` are left in the cell output.
Data: ``mon.records()`` (list of dicts: ``pandas.DataFrame(mon.records())``) and ``mon.to_csv(path)``.
Taught in ``notebooks/05_live_monitor.ipynb``; used by chapters 00–02.
"""

from __future__ import annotations

import sys
import time
import warnings
from collections.abc import Callable, Iterable, Sequence
from os import PathLike
from typing import Any

from ..core.arguments import shown, whole_number
from ..machine.nvml import GpuReader
from .frontend import frontend_available
from .options import validated_options
from .readout import records, summarise, write_csv
from .ring_buffer import History
from .sampler import Progress, Sampler
from .summary import MonitorSummary, PeakMemory
from .watched import Watched

__all__ = ["monitor", "Monitor", "MonitorSummary", "PeakMemory", "History", "frontend_available"]

RENDER_INTERVAL_S = 1.0  # between redraws of the live figure: each takes the training loop's CPU time


class Monitor:
    """A monitored stretch of code. Use ``gpulab.monitor(...)`` as a context manager; one Monitor records one run."""

    def __init__(
        self,
        title: str = "",
        *,
        machine: GpuReader | str | None = None,
        gpus: Sequence[int] | None = None,
        interval_s: float = 0.2,
        live: bool | str = "auto",
        show: bool = True,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Any] | None = None,
    ) -> None:
        reader, gpus, interval_s = validated_options(
            title=title,
            reader=machine,
            gpus=gpus,
            interval_s=interval_s,
            show=show,
            clock=clock,
            sleep=sleep,
        )
        if live not in (True, False, "auto"):
            raise ValueError(f"live= takes True, False or 'auto' (live only in JupyterLab); got {shown(live)}.")
        self.title = title
        self._clock = clock
        self._progress = Progress(clock)
        self._sampler = Sampler(
            reader=reader,
            progress=self._progress,
            gpus=gpus,
            interval_s=interval_s,
            clock=clock,
            sleep=sleep,
        )
        self._live_wanted = live
        self._show = show
        self.marks: list[tuple[float, str]] = []
        self._state = "new"  # new → running → stopped
        self._ended_by = "still running"
        self._figure: Any = None
        self._live: Any = None
        self._stopped_at: float | None = None

    # -- what the monitor holds ---------------------------------------------------------------------------------------
    @property
    def history(self) -> History:
        """The readings so far (a ring buffer of fixed size: the oldest go first once it is full)."""
        return self._sampler.history

    @property
    def missing(self) -> list[str]:
        """What could not be read, one sentence each (e.g. no NVIDIA driver): shown under the figure and summary."""
        return list(self._sampler.missing)

    @property
    def running(self) -> bool:
        """Whether the monitor is sampling now (inside its ``with`` block)."""
        return self._state == "running"

    def __repr__(self) -> str:
        simulated = " SIMULATED GPUs," if getattr(self._sampler.reader, "simulated", False) else ""
        return f"<Monitor {self.title!r} {self._state},{simulated} {len(self.history)} readings>"

    # -- start and stop -----------------------------------------------------------------------------------------------
    def start(self) -> Monitor:
        """Start sampling (and the live figure where JupyterLab can show it); ``with gpulab.monitor(...)`` calls it. A
        monitor records one run."""
        if self._state != "new":
            raise RuntimeError(
                f"this monitor is {self._state}: a Monitor records one run. Start a new one with "
                "`with gpulab.monitor(...) as mon:`."
            )
        self._state = "running"
        self._progress.restart_step_clock()  # the first step counts from the start, not from when mon was made
        self._sampler.start()
        try:
            self._start_live()
        except BaseException:  # leave no thread behind if the live view cannot start
            self._state = "stopped"
            self._sampler.stop()
            if self._live is not None:
                self._live.stop()
            raise
        return self

    def _start_live(self) -> None:
        live = self._live_wanted
        if live == "auto":  # decided without importing matplotlib: a headless run draws only at the end
            live = self._show and frontend_available()  # show=False: nothing in the output, not even a live image
        if not live:
            return
        try:
            from .view import LiveImage

            self._live = LiveImage(
                self._build_figure(), self.history, self.marks, RENDER_INTERVAL_S, missing=self._sampler.missing
            )
        except ImportError as exc:
            raise ImportError(
                f"live=True shows the figure in an ipywidgets Image, and ipywidgets could not be "
                f"imported ({exc}). Install it with `pip install ipywidgets` and restart JupyterLab, or "
                "pass live=False to get the figure when the block ends."
            ) from exc
        self._live.show()

    def stop(self, ended_by: str = "completed") -> MonitorSummary:
        """Stop the threads, take a last reading, and (with ``show``) leave the figure and the summary in the output."""
        if self._state != "running":
            raise RuntimeError(f"this monitor is {self._state}, not running: nothing to stop.")
        self._state = "stopped"
        self._ended_by = ended_by
        try:
            self._sampler.stop()
        finally:
            if self._live is not None:
                self._live.stop()
        self._sampler.tick(rate=False)  # the work and marks reported since the thread's last reading
        self._stopped_at = self._clock()
        summary = self.summary()
        if self._show:
            try:
                self._display(summary)
            except Exception as exc:
                if ended_by == "completed":
                    raise
                # the block is already ending with the learner's exception: report ours without hiding theirs
                warnings.warn(
                    f"the monitor could not show its figure ({type(exc).__name__}: {exc}); "
                    f"its data is still in mon.records().",
                    RuntimeWarning,
                    stacklevel=2,
                )
        return summary

    def __enter__(self) -> Monitor:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: Any) -> None:
        self.stop("completed" if exc_type is None else f"{exc_type.__name__}: {exc}".rstrip(": "))

    # -- what the loop reports ----------------------------------------------------------------------------------------
    def _require_running(self, what: str) -> None:
        if self._state != "running":
            raise RuntimeError(
                f"mon.{what} was called on a monitor that is {self._state}. Call it inside the "
                "`with gpulab.monitor(...) as mon:` block (or between mon.start() and mon.stop())."
            )

    def step(self, samples: int = 1) -> None:
        """Report one step of work that processed ``samples`` examples (a batch's size). Costs about a microsecond.

        The step's time is the time since the previous step (for the first: since the monitor started, or since
        ``wrap`` began). Call it from the loop's own thread.
        """
        n = whole_number(
            samples,
            "samples",
            what="the examples the step processed",
            example="mon.step(samples=len(x)) for a batch tensor x",
        )
        self._require_running("step()")
        self._progress.step(n)

    def restart_step_clock(self) -> None:
        """The next ``step()`` counts its time from now, not from the previous step (or the start): call it where a
        loop begins after set-up that ran inside the block (a Lightning fit's sanity check, DDP starting), so the
        set-up is not taken for a slow first step."""
        self._require_running("restart_step_clock()")
        self._progress.restart_step_clock()

    def wrap(self, iterable: Iterable[Any], samples: int | Callable[[Any], int] | None = None) -> Watched:
        """``for x, y in mon.wrap(loader):`` — one step per batch; ``samples`` = per-batch count or a function of it
        (default: the first dimension of the batch's first tensor). Works around a DataLoader or a tqdm bar."""
        self._require_running("wrap()")
        if isinstance(iterable, (str, bytes)) or not hasattr(iterable, "__iter__"):
            raise TypeError(
                f"mon.wrap() takes what the loop iterates over (a DataLoader, a list of batches, a "
                f"tqdm bar); got {shown(iterable)}, which has no items to step through. Write "
                "`for batch in mon.wrap(loader):`."
            )
        if samples is not None and not callable(samples):
            samples = whole_number(
                samples,
                "samples",
                what="examples in each batch, or a function of the batch that counts them",
                example="mon.wrap(loader, samples=64); leave it out to count each batch's first dimension",
            )
        return Watched(iterable, samples, step=self.step, restart_clock=self._progress.restart_step_clock)

    def mark(self, label: str) -> None:
        """Put an event (``"epoch 2"``, ``"DDP starts"``) on the time axis, the summary and the CSV."""
        self._require_running("mark()")
        self.marks.append((self._clock() - self._sampler.t0, str(label)))

    # -- results ------------------------------------------------------------------------------------------------------
    def summary(self) -> MonitorSummary:
        """What the run used at its peak (host, this process, each GPU) and how fast it went, as far as it was
        reported."""
        end = self._stopped_at if self._stopped_at is not None else self._clock()
        return summarise(self.title, self.history, self._sampler, self._progress.state, end, self.marks, self._ended_by)

    def records(self) -> list[dict[str, Any]]:
        """One dict per reading: ``elapsed_s``, every column (NaN = not readable), ``marks`` made since the last one."""
        return records(self.history, self.marks)

    def to_csv(self, path: str | PathLike[str]) -> None:
        """Write ``records()`` as CSV (empty cell = not readable); ``pandas.read_csv`` reads it back."""
        write_csv(path, self.records(), self.history.columns)

    def _build_figure(self) -> Any:
        if self._figure is None:
            from .view import MonitorFigure

            title = self.title + (
                " [SIMULATED GPUs]" if getattr(self._sampler.reader, "simulated", False) and self._sampler.gpus else ""
            )
            self._figure = MonitorFigure(
                self.history.columns, title=title, gpus=self._sampler.gpus, cuda_devices=self._sampler.cuda_devices
            )
        return self._figure

    def figure(self, notes: bool = True) -> Any:
        """The monitor's ``matplotlib.figure.Figure`` with everything recorded so far (``notes``: what could not be
        read, under the panels; off where the summary beside it says it)."""
        fig = self._build_figure()
        fig.set_notes([f"not shown: {n}" for n in self.missing] if notes else [])
        fig.update_from(self.history, list(self.marks))
        return fig.figure

    def figure_png(self, notes: bool = True) -> bytes:
        """The figure as PNG bytes (``notes``: what could not be read, under the panels)."""
        self.figure(notes)
        return self._figure.png()

    def _display(self, summary: MonitorSummary) -> None:
        ipython = sys.modules.get("IPython")
        if ipython is None or ipython.get_ipython() is None:
            print(summary)  # a script or a terminal: the text summary is the artefact
            return
        from IPython.display import Image, display

        png = self.figure_png(notes=False)  # the summary below says what was not shown, once, in full
        if self._live is not None:
            self._live.replace_with(png)
        else:
            display(Image(data=png, format="png"))
        display(summary)


def monitor(
    title: str = "",
    *,
    machine: GpuReader | str | None = None,
    gpus: Sequence[int] | None = None,
    interval_s: float = 0.2,
    live: bool | str = "auto",
    show: bool = True,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], Any] | None = None,
) -> Monitor:
    """``with gpulab.monitor("training") as mon:`` — watch memory, utilisation and speed while the block runs.

    ``machine``: this one (NVML) by default, or a preset name / reader for a described one; ``gpus``: physical
    indices to watch (default all); ``interval_s``: between readings (0.2 = 5 Hz); ``live``: True / False / "auto"
    (live in JupyterLab when ``show``); ``show``: leave figure + summary at the end; ``clock``/``sleep``: the time
    source (tests pass a fake). Taught in ``notebooks/05_live_monitor.ipynb``.
    """
    return Monitor(
        title,
        machine=machine,
        gpus=gpus,
        interval_s=interval_s,
        live=live,
        show=show,
        clock=clock,
        sleep=sleep,
    )
