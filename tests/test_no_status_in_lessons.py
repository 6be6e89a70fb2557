"""No text cell of a chapter names the course's tests, benchmarks or make targets, or reports its testing status.

A learner reads a chapter for the PyTorch; what ran where, and which test holds a claim, is the claims ledger's job
(notebooks/claims_ledger.md), and how to run the tests is docs/maintainers.md's. ``KNOWN`` lists the text cells (by
cell id) of chapters whose rewrite has not landed yet; each chapter's rewrite empties its own entry, and the test fails
on a known cell that no longer offends, so the list only shrinks.
"""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
CHAPTERS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
STATUS = re.compile(
    r"\btests/|\bbenchmarks/|\btest_\w+\.py\b|`make [a-z-]+`|\bmake (?:test|lab|notebooks|handouts|install|site|lint"
    r"|format|wheelhouse|test-gpu|test-slow|test-kit|test-compat)\b|\bthe test suite\b|\bour tests?\b"
)
# chapter -> the ids of its text cells that still offend, until that chapter's rewrite lands
KNOWN: dict[str, list[str]] = {}


def offenders(path: Path) -> list[str]:
    nb = nbformat.read(path, as_version=4)
    return [c.get("id") for c in nb.cells if c.cell_type == "markdown" and STATUS.search(c.source)]


@pytest.mark.parametrize("path", CHAPTERS, ids=[p.stem for p in CHAPTERS])
def test_no_text_cell_names_tests_benchmarks_or_make_targets(path):
    assert offenders(path) == KNOWN.get(path.stem, [])


def test_the_rule_catches_each_kind_and_passes_plain_prose():
    for text in (
        "see tests/test_visible.py",
        "`make test-gpu` compares",
        "run make notebooks",
        "benchmarks/x.py",
        "the test suite races eight processes",
    ):
        assert STATUS.search(text), text
    for text in ("a test of your own", "torch.testing.assert_close", "make sure CUDA has not started"):
        assert not STATUS.search(text), text
