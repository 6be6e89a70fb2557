"""GPU cells as a GPU printed them: the bundles ``make test-gpu`` records, and which recording a skipped cell may show.

A bundle is a folder ``evidence/<date>-<gpu>/`` that holds each chapter as executed on a GPU machine
(``NN_*.ipynb``, normalised) and ``manifest.json``: the machine (GPU name and count, torch, CUDA, driver, date, mode)
and, for every ``%%gpu`` cell of each chapter, its cell id, the GPUs it needs, the hash of its source and whether it
ran there. ``find`` decides what a cell that skips here may show: the newest recording of the same chapter's same
code (``source_hash``) on a machine with enough GPUs, or one line saying why there is none. It never hands back the
output of different code, and never a recording of fewer GPUs than the cell needs. The cell id is used as well where
the front end sends one (JupyterLab does; nbclient, nbval, Colab and the classic Notebook do not). Taught beside
``%%gpu`` (``notebook/magics``), listed by the environment report, used by the handouts' GPU edition.

Pure: the standard library only (json, hashlib); nothing here starts CUDA or imports torch.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = [
    "MANIFEST",
    "BUNDLE_KIND",
    "RecordedCell",
    "Bundle",
    "Lookup",
    "source_hash",
    "magic_line",
    "cell_body",
    "read_bundles",
    "find",
    "recordings_folder",
    "SKIP_LINE",
    "NO_RECORDING",
    "skipped_here",
]

MANIFEST = "manifest.json"
# How %%gpu starts its output where it does not run the cell (notebook.magics), and what the runs of earlier versions
# printed there: the bundles, the handouts and the site tell a skipped cell by it.
SKIP_LINE = "Not run here:"
OLDER_SKIP_LINES = ("Skipped on this machine:",)
# The reader's half-line for a GPU cell that no GPU run has recorded yet; how a maintainer records one is
# docs/gpu-runs.md's business, not the reader's.
NO_RECORDING = "No recorded GPU output yet."


def skipped_here(text: str) -> bool:
    """True when ``text``, a cell's printed output, is %%gpu's skip (today's wording or an older run's)."""
    return text.lstrip().startswith((SKIP_LINE, *OLDER_SKIP_LINES))


BUNDLE_KIND = "gpulab-gpu-bundle"
_MAGIC = re.compile(r"^\s*%%gpu\b[ \t]*([^\n]*)")


def magic_line(source: str) -> int | None:
    """How many GPUs a ``%%gpu [n]`` cell needs (1 when unsaid); None for any other cell."""
    m = _MAGIC.match(source)
    if not m:
        return None
    arg = m.group(1).strip()
    return int(arg) if arg.isdigit() else 1


def cell_body(source: str) -> str:
    """A ``%%gpu`` cell's code below the magic's line: what IPython hands the magic as ``cell``."""
    return source.split("\n", 1)[1] if magic_line(source) is not None and "\n" in source else ""


def source_hash(body: str) -> str:
    """The hash that names a GPU cell's code: sha256 of the body, line ends and trailing blanks ignored (a front end
    may add or drop them); the first 16 hex digits."""
    text = "\n".join(line.rstrip() for line in body.replace("\r\n", "\n").strip("\n").split("\n"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class Bundle:
    """One recorded run: where it is and the machine that ran it."""

    folder: Path
    date: str
    gpu_name: str
    gpu_count: int
    torch: str
    mode: str
    simulated: bool = False

    @property
    def label(self) -> str:
        """'recorded on NVIDIA H100 80GB HBM3, torch 2.11.0+cu130, 2026-11-27; not run here'."""
        gpus = self.gpu_name if self.gpu_count == 1 else f"{self.gpu_count}× {self.gpu_name}"
        if self.simulated:
            gpus += " (SIMULATED: described GPUs, the code ran on a CPU)"
        return f"recorded on {gpus}, torch {self.torch}, {self.date}; not run here"


@dataclass(frozen=True)
class RecordedCell:
    """One ``%%gpu`` cell of one chapter, as a bundle holds it."""

    bundle: Bundle
    chapter: str  # "01_cpu_gpu_transfer.ipynb"
    cell_id: str | None
    index: int  # its position in the recorded chapter
    needs: int
    source_sha256: str
    ran: bool  # False: it skipped there too (too few GPUs on that machine)

    def outputs(self) -> list[dict[str, Any]]:
        """The cell's recorded outputs, read from the bundle's chapter when asked for."""
        nb = json.loads((self.bundle.folder / self.chapter).read_text(encoding="utf-8"))
        return [_joined(o) for o in nb["cells"][self.index].get("outputs", [])]


def _joined(output: dict[str, Any]) -> dict[str, Any]:
    """An output with the notebook file's split lines joined back into strings (``text``, each ``data`` value)."""
    out = dict(output)
    if isinstance(out.get("text"), list):
        out["text"] = "".join(out["text"])
    if isinstance(out.get("data"), dict):
        out["data"] = {k: "".join(v) if isinstance(v, list) else v for k, v in out["data"].items()}
    return out


@dataclass(frozen=True)
class Lookup:
    """What a skipped cell may show: ``cell`` (a recording of this very code on enough GPUs) or ``note``, one line."""

    cell: RecordedCell | None
    note: str


def recordings_folder() -> Path:
    """Where bundles are looked for: ``GPULAB_RECORDINGS`` when set, else this checkout's ``evidence/``."""
    return Path(os.environ.get("GPULAB_RECORDINGS") or Path(__file__).resolve().parents[2] / "evidence")


def _bundle_of(folder: Path, manifest: dict[str, Any]) -> Bundle:
    m = manifest["machine"]
    return Bundle(
        folder=folder,
        date=manifest["date"],
        gpu_name=m["gpus"][0]["name"] if m["gpus"] else "no GPU",
        gpu_count=len(m["gpus"]),
        torch=m["torch"],
        mode=manifest["mode"],
        simulated=bool(m.get("simulated")),
    )


def read_bundles(folder: Path | None = None) -> list[RecordedCell]:
    """Every recorded ``%%gpu`` cell of every bundle in ``folder`` (default ``recordings_folder()``); a folder
    without a readable manifest of this kind is passed over (it is not a bundle)."""
    folder = recordings_folder() if folder is None else folder
    out: list[RecordedCell] = []
    for path in sorted(folder.glob(f"*/{MANIFEST}")) if folder.is_dir() else ():
        try:
            manifest = json.loads(path.read_text(encoding="utf-8"))
            if manifest.get("kind") != BUNDLE_KIND:
                continue
            bundle = _bundle_of(path.parent, manifest)
            for chapter, cells in manifest["chapters"].items():
                out += [
                    RecordedCell(
                        bundle,
                        chapter,
                        c.get("id"),
                        c["index"],
                        c["needs"],
                        c["source_sha256"],
                        c["ran"],
                    )
                    for c in cells
                ]
        except (OSError, ValueError, KeyError, TypeError, IndexError):
            continue
    return out


def _newest(cells: list[RecordedCell]) -> list[RecordedCell]:
    return sorted(cells, key=lambda c: (c.bundle.date, c.bundle.folder.name), reverse=True)


def find(
    cells: list[RecordedCell],
    *,
    source: str,
    needs: int,
    chapter: str | None = None,
    cell_id: str | None = None,
) -> Lookup:
    """The newest recording of this cell's code (``source``: the body under ``%%gpu``) in ``chapter`` on a machine
    with at least ``needs`` GPUs; else a note that says why none is shown (see the module's docstring).

    ``chapter`` (``01_cpu_gpu_transfer.ipynb``) and ``cell_id`` are used where the front end tells them; without
    the chapter, a hash found in one chapter only (or, with the id, in the cell of that id) is enough."""
    digest = source_hash(source)
    pool = [c for c in cells if chapter is None or c.chapter == chapter]
    same = [c for c in pool if c.source_sha256 == digest]
    if chapter is None and cell_id is not None and any(c.cell_id == cell_id for c in same):
        same = [c for c in same if c.cell_id == cell_id]
    if len({c.chapter for c in same}) > 1:
        return Lookup(None, "Recordings of this code exist in several chapters, and this one is not known: none shown.")
    shown = _newest([c for c in same if c.ran and c.bundle.gpu_count >= needs])
    if shown:
        return Lookup(shown[0], shown[0].bundle.label)
    if same:
        best = max(same, key=lambda c: (c.bundle.gpu_count, c.bundle.date))
        return Lookup(
            None,
            f"Recorded only on {best.bundle.gpu_count} GPU(s) ({best.bundle.gpu_name}, {best.bundle.date}), where it "
            f"could not run: this cell needs {needs}, so no recording is shown.",
        )
    if cell_id is not None and any(c.cell_id == cell_id for c in pool):
        old = _newest([c for c in pool if c.cell_id == cell_id])[0]
        return Lookup(
            None,
            f"This cell's code changed since its recording ({old.bundle.date}): the old output is not shown.",
        )
    return Lookup(None, NO_RECORDING)  # docs/gpu-runs.md says how a maintainer records one
