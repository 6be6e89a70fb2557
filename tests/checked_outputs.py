"""Compare a chapter's freshly executed outputs with its committed ones, as nbval does for the cells tagged
``nbval-check-output`` under ``--nbval-lax``: the same sanitising patterns (``notebooks/nbval_sanitize.cfg``), streams
merged per name, and nbval's own list of output keys that are never compared. Used where a chapter is executed outside
nbval (under a described machine), so that its checked outputs are held there too."""

from __future__ import annotations

import re
from collections import defaultdict
from pathlib import Path

import nbformat
from nbval.plugin import coalesce_streams, get_sanitize_patterns, transform_streams_for_comparison

ROOT = Path(__file__).resolve().parents[1]
SANITIZE = ROOT / "notebooks" / "nbval_sanitize.cfg"
CHECKED = "nbval-check-output"
# nbval's IPyNbFile.skip_compare without --nbdime: keys that are never compared
SKIP = (
    "metadata",
    "traceback",
    "prompt_number",
    "output_type",
    "name",
    "execution_count",
    "application/vnd.jupyter.widget-view+json",
    "image/png",
    "image/jpeg",
)


def _patterns() -> list[tuple[str, str]]:
    return get_sanitize_patterns(SANITIZE.read_text(encoding="utf-8"))


def _flatten(outputs: list, patterns: list[tuple[str, str]]) -> dict[str, list]:
    def clean(value):
        if not isinstance(value, str):
            return value
        for regex, replace in patterns:
            value = re.sub(regex, replace, value)
        return value

    flat: dict[str, list] = defaultdict(list)
    for out in transform_streams_for_comparison(coalesce_streams([nbformat.from_dict(o) for o in outputs])):
        for key, value in out.items():
            if key in SKIP:
                continue
            if key == "data":
                for mime, data in value.items():
                    if mime not in SKIP:
                        flat[mime].append(clean(data))
            else:
                flat[key].append(clean(value))
    return dict(flat)


def checked_differences(committed: nbformat.NotebookNode, fresh: nbformat.NotebookNode) -> list[str]:
    """One line per cell tagged ``nbval-check-output`` whose fresh output nbval would reject against the committed
    one (cells are matched by id); an empty list when every checked cell holds."""
    patterns = _patterns()
    by_id = {c.get("id"): c for c in fresh.cells}
    problems = []
    for cell in committed.cells:
        if cell.cell_type != "code" or CHECKED not in cell.metadata.get("tags", []):
            continue
        then, now = _flatten(cell.outputs, patterns), _flatten(by_id[cell.id].outputs, patterns)
        if then != now:
            problems.append(f"cell {cell.id}: committed {then!r}\n    now {now!r}")
    return problems
