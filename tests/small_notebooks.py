"""Small notebooks that tests write: cells given as (kind, source, tags), with a kernelspec, as a chapter has."""

from __future__ import annotations

from pathlib import Path

import nbformat


def write_notebook(path: Path, cells: list[tuple[str, str, list[str]]]) -> Path:
    """Write a notebook of ``cells`` (``"markdown"`` or ``"code"``, source, tags) to ``path`` and return it."""
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    for kind, source, tags in cells:
        cell = nbformat.v4.new_markdown_cell(source) if kind == "markdown" else nbformat.v4.new_code_cell(source)
        cell.metadata["tags"] = tags
        nb.cells.append(cell)
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, path)
    return path
