"""Every chapter the course points to exists: "chapter 03", "chapters 03–06", "06_lightning" in a notebook or README.

A promise of a chapter that was never written (or was renamed) is rot a learner meets as a dead end. Mentions are
read from the notebooks' markdown and code and from README.md; a mention of a number needs some
``notebooks/NN_*.ipynb``, a mention of a name (``04_ddp``) needs exactly that notebook.
"""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"

# "chapter 05", "Chapter 02's", "chapters 03–06", "chapters 03, 04 and 06", "chapters 03/04"
_NUMBERED = re.compile(r"\b[Cc]hapters?\s+(\d{2}(?:\s*(?:[–—-]|,|/|and|or|&)\s*\d{2})*)")
_NAMED = re.compile(r"(?<![\w/.-])(\d{2})_([a-z][a-z0-9_]*)(?:\.ipynb)?\b")


def chapter_mentions(text: str) -> set[str]:
    """The chapters a text mentions: ``"03"`` for a number, ``"04_ddp"`` for a name (ranges expanded)."""
    found: set[str] = set()
    for m in _NUMBERED.finditer(text):
        previous, dash = None, False
        for token in re.findall(r"\d{2}|[–—-]", m.group(1)):
            if token.isdigit():
                if dash and previous is not None:  # a range: 03–06 is 03, 04, 05 and 06
                    found.update(f"{n:02d}" for n in range(previous, int(token)))
                found.add(token)
                previous, dash = int(token), False
            else:
                dash = True
    found.update(f"{n}_{name}" for n, name in _NAMED.findall(text))
    return found


def _sources() -> dict[str, str]:
    texts = {"README.md": (ROOT / "README.md").read_text()}
    texts |= {f"docs/{p.name}": p.read_text() for p in sorted((ROOT / "docs").glob("*.md"))}
    for path in sorted(NOTEBOOKS.glob("*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        texts[path.name] = "\n".join(c.source for c in nb.cells)
    return texts


def _exists(mention: str) -> bool:
    if "_" in mention:
        return (NOTEBOOKS / f"{mention}.ipynb").exists()
    return any(NOTEBOOKS.glob(f"{mention}_*.ipynb"))


def test_mentions_are_read_with_ranges_lists_and_names():
    text = (
        "Chapter 05 covers it; chapters 03–06 train on it; chapters 01, 02 and 04 run it; see 06_lightning.ipynb "
        "and `02_choosing_gpus`; 60_000 samples, 2_048 steps, Chapter 1 of a book, v1.0 and nbval_sanitize.cfg"
    )
    assert chapter_mentions(text) == {"05", "03", "04", "06", "01", "02", "06_lightning", "02_choosing_gpus"}


@pytest.mark.parametrize("source", sorted(_sources()))
def test_every_chapter_mentioned_exists(source):
    missing = sorted(m for m in chapter_mentions(_sources()[source]) if not _exists(m))
    assert not missing, (
        f"{source} mentions chapter(s) {', '.join(missing)}, but notebooks/ has no such notebook: "
        "write it, or say what the reader can do instead"
    )
