"""Two editions of every handout, from one run: students get the exercises without their solutions.

A cell tagged ``solution`` (code or text) is a worked answer. The student edition leaves those cells out, inputs and
outputs; the instructor edition keeps them and labels them (the tag becomes the CSS class ``celltag_solution``).

The GPU edition (``recorded_edition``; ``make handouts GPU_EDITION=1``) is for a room with no GPUs: each ``%%gpu``
cell that skipped in this run shows instead what the same code printed in the newest recorded GPU run
(``gpulab.checkup.recorded_cells``), after the label "recorded on <GPU>, torch <version>, <date>; not run here"; a cell
with no recording of its code on enough GPUs keeps its skip and says why.
"""

from __future__ import annotations

import copy
from enum import Enum
from typing import Any

import nbformat

__all__ = ["Edition", "SOLUTION_TAG", "edition_of", "solution_cells", "recorded_edition"]

SOLUTION_TAG = "solution"


class Edition(str, Enum):
    STUDENT = "student"
    INSTRUCTOR = "instructor"


def solution_cells(nb: nbformat.NotebookNode) -> list[int]:
    return [i for i, c in enumerate(nb.cells) if SOLUTION_TAG in c.get("metadata", {}).get("tags", [])]


def edition_of(nb: nbformat.NotebookNode, edition: Edition | str) -> nbformat.NotebookNode:
    """A copy of ``nb`` for ``edition``; the executed notebook itself is not changed."""
    try:
        edition = Edition(edition)
    except ValueError:
        raise ValueError(
            f"unknown edition {edition!r}: use 'student' (solutions left out) or 'instructor' (solutions kept)."
        ) from None
    out = copy.deepcopy(nb)
    if edition is Edition.STUDENT:
        drop = set(solution_cells(out))
        out.cells = [c for i, c in enumerate(out.cells) if i not in drop]
    out.metadata.setdefault("gpulab_handout", {})["edition"] = edition.value
    return out


def _stream_text(cell: nbformat.NotebookNode) -> str:
    return "".join(o.get("text", "") for o in cell.get("outputs", []) if o.get("output_type") == "stream")


def _skipped(cell: nbformat.NotebookNode) -> bool:
    from gpulab.checkup.recorded_cells import skipped_here  # %%gpu's skip line, today's or an older run's

    return skipped_here(_stream_text(cell))


def recorded_edition(nb: nbformat.NotebookNode, chapter: str, cells: list | None = None) -> tuple[Any, int]:
    """A copy of the executed chapter ``nb`` (``chapter``: its file name) whose skipped ``%%gpu`` cells show their
    recorded outputs (``cells``: ``read_bundles()`` by default), labelled; and how many cells took a recording."""
    from gpulab.checkup.recorded_cells import cell_body, find, magic_line, read_bundles

    cells = read_bundles() if cells is None else cells
    out = copy.deepcopy(nb)
    shown = 0
    for cell in out.cells:
        needs = magic_line(cell.source) if cell.cell_type == "code" else None
        if needs is None or not _skipped(cell):
            continue
        found = find(cells, source=cell_body(cell.source), needs=needs, chapter=chapter, cell_id=cell.get("id"))
        if found.cell is None:
            if found.note not in _stream_text(cell):  # %%gpu itself prints it under the skip (notebook.magics)
                cell.outputs = [*cell.outputs, nbformat.v4.new_output("stream", name="stdout", text=found.note + "\n")]
            continue
        label = nbformat.v4.new_output("stream", name="stdout", text=f"── {found.note} ──\n")
        cell.outputs = [label, *(nbformat.from_dict(copy.deepcopy(o)) for o in found.cell.outputs())]
        cell.metadata.setdefault("tags", []).append("recorded")
        shown += 1
    out.metadata.setdefault("gpulab_handout", {})["recorded_cells"] = shown
    return out, shown
