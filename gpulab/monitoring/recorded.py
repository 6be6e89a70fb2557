"""A monitor run recorded on a real GPU machine, kept as a small JSON file, drawn again anywhere (a view).

A learner on a CPU machine still sees what the GPU panels look like, from a run that really happened: the GPU cell of
``notebooks/05_live_monitor.ipynb`` writes ``evidence/ch05-monitor-gpu.json`` with ``record_run`` when it runs on a GPU,
and the chapter shows the newest such file with ``latest_recorded_run``, labelled with the machine and the date it
was recorded. Until one exists the chapter says that no GPU run has been recorded yet; nothing is made up, and a run
on described (SIMULATED) GPUs is refused as evidence.

The file holds the least needed to draw the figure again: ``format``, ``machine`` (what it ran on, in words:
``record_run``'s ``ran_on``), ``date``
(ISO 8601, UTC), ``title``, ``gpus`` (physical indices watched), ``cuda_devices``, ``columns``, ``rows`` (one list of
numbers per reading, ``null`` where a value could not be read), ``marks`` (``[seconds, label]``) and ``summary`` (the
monitor's summary as text).
"""

from __future__ import annotations

import base64
import html
import json
import math
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["RecordedRun", "record_run", "latest_recorded_run", "EVIDENCE_DIR", "FORMAT"]

FORMAT = "gpulab monitor run 1"
EVIDENCE_DIR = Path(__file__).resolve().parents[2] / "evidence"  # the repository's evidence/ folder
_KEYS = ("machine", "date", "title", "gpus", "cuda_devices", "columns", "rows", "marks", "summary")


@dataclass(frozen=True)
class RecordedRun:
    """One recorded monitor run: what it ran on (in words) and when, and its readings."""

    ran_on: str
    date: str
    title: str
    gpus: tuple[int, ...]
    cuda_devices: int
    columns: tuple[str, ...]  # "elapsed_s", then the monitor's columns
    rows: np.ndarray
    marks: tuple[tuple[float, str], ...]
    summary: str
    path: Path | None = None

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> RecordedRun:
        """Read a file that ``record_run`` wrote; a file of another kind is refused, saying what is wrong."""
        path = Path(path)
        try:
            data = json.loads(path.read_text())
        except ValueError as exc:
            raise ValueError(f"{path} is not a recorded monitor run: it is not JSON ({exc}).") from None
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise ValueError(
                f'{path} is not a recorded monitor run: its "format" is not {FORMAT!r}. Write one with '
                "gpulab.monitoring.recorded.record_run(mon, ran_on=...) after a run on a GPU."
            )
        missing = [k for k in _KEYS if k not in data]
        if missing:
            raise ValueError(f"{path} lacks {', '.join(missing)}: a recorded run needs {', '.join(_KEYS)}.")
        rows = np.array([[np.nan if v is None else v for v in row] for row in data["rows"]], dtype=float)
        if not data["columns"] or data["columns"][0] != "elapsed_s":
            raise ValueError(f"{path}: the first column must be elapsed_s (seconds since the monitor started).")
        if rows.size == 0 or rows.shape[1:] != (len(data["columns"]),):
            raise ValueError(
                f"{path}: every row needs one value per column ({len(data['columns'])}), and there must "
                "be at least one reading."
            )
        return cls(
            str(data["machine"]),
            str(data["date"]),
            str(data["title"]),
            tuple(map(int, data["gpus"])),
            int(data["cuda_devices"]),
            tuple(data["columns"]),
            rows,
            tuple((float(t), str(label)) for t, label in data["marks"]),
            str(data["summary"]),
            path,
        )

    @property
    def label(self) -> str:
        """What ran it and when, and that it is a recording (drawn again from its file, not measured here now)."""
        source = f"evidence/{self.path.name}" if self.path is not None else "its file"
        return (
            f"Recorded GPU run: {self.title} — on {self.ran_on}, {self.date}. A recording, drawn again from "
            f"{source}: not a reading of this computer."
        )

    def figure_png(self) -> bytes:
        """The monitor's figure drawn again from the recorded readings."""
        from .figure import MonitorFigure

        fig = MonitorFigure(
            self.columns[1:],
            title=f"{self.title} (recorded {self.date[:10]})",
            gpus=self.gpus,
            cuda_devices=self.cuda_devices,
        )
        fig.update(self.rows[:, 0], self.rows[:, 1:], list(self.marks))
        return fig.png()

    def __str__(self) -> str:
        return f"{self.label}\n{self.summary}"

    def _repr_html_(self) -> str:
        png = base64.b64encode(self.figure_png()).decode()
        return (
            f"<p><b>{html.escape(self.label)}</b></p><img src='data:image/png;base64,{png}' "
            f"alt='{html.escape(self.title)}' style='max-width:100%'><pre>{html.escape(self.summary)}</pre>"
        )


def record_run(mon: Any, path: str | os.PathLike[str] | None = None, *, ran_on: str) -> Path:
    """Write a finished monitor's run to ``path`` (default ``evidence/ch05-monitor-gpu.json``) as evidence.

    ``ran_on`` says in words what it ran on, e.g. ``"1× NVIDIA H100 80GB, torch 2.11.0+cu130"`` (text for people,
    shown with the recording; not a ``machine=`` to read). Refused for a run that is still going, and for described
    (SIMULATED) GPUs: evidence comes only from a real GPU.
    """
    if not isinstance(ran_on, str) or not ran_on.strip():
        raise TypeError(
            f'ran_on={ran_on!r}: say in words what the run ran on, e.g. ran_on="1× NVIDIA H100 80GB, '
            'torch 2.11"; the recorded run is shown with it.'
        )
    if mon.running:
        raise RuntimeError("the monitor is still running: record the run after its with-block has ended.")
    sampler = mon._sampler
    if getattr(sampler.reader, "simulated", False) or not sampler.gpus:
        raise ValueError(
            "this run watched no real GPU (described SIMULATED GPUs, or none): a recorded GPU run must "
            "come from a machine with an NVIDIA GPU. Run the chapter's GPU cell there."
        )
    t, values = mon.history.snapshot()
    rows = [[_number(x) for x in (ti, *row)] for ti, row in zip(t.tolist(), values.tolist())]
    data = {
        "format": FORMAT,
        "machine": ran_on.strip(),
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "title": mon.title,
        "gpus": list(sampler.gpus),
        "cuda_devices": sampler.cuda_devices,
        "columns": ["elapsed_s", *mon.history.columns],
        "rows": rows,
        "marks": [list(m) for m in mon.marks],
        "summary": str(mon.summary()),
    }
    path = Path(path) if path is not None else EVIDENCE_DIR / "ch05-monitor-gpu.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=0))
    return path


def latest_recorded_run(folder: str | os.PathLike[str] | None = None) -> RecordedRun | None:
    """The newest recorded monitor run among ``folder``'s ``*.json`` files (default: the repository's ``evidence/``),
    or None when there is none yet. Other kinds of evidence in the same folder are passed over."""
    folder = Path(folder) if folder is not None else EVIDENCE_DIR
    runs = []
    for p in sorted(folder.glob("*.json")) if folder.is_dir() else ():
        try:
            kind = json.loads(p.read_text()).get("format")
        except (ValueError, AttributeError):
            continue
        if kind == FORMAT:
            runs.append(RecordedRun.load(p))
    return max(runs, key=lambda r: r.date) if runs else None


def _number(x: float) -> float | None:
    return None if isinstance(x, float) and math.isnan(x) else x
