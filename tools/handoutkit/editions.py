"""Two editions of every handout, from one run: students get the exercises without their solutions.

A cell tagged ``solution`` (code or text) is a worked answer. The student edition leaves those cells out, inputs and
outputs; the instructor edition keeps them and labels them (the tag becomes the CSS class ``celltag_solution``).
"""

from __future__ import annotations

import copy
from enum import Enum

import nbformat

__all__ = ["Edition", "SOLUTION_TAG", "edition_of", "solution_cells"]

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
