"""A pytest plugin for nbval: keeps each chapter as this run executed it, for the GPU edition's bundle.

``make test-gpu`` (``tools/gpu_run.py``) sets ``GPULAB_RECORD_CHAPTERS`` to a folder; then, as nbval runs a chapter's
cells against its committed outputs, this plugin takes the outputs nbval collected from the kernel
(``IPyNbCell.test_outputs``, the same ones it compares and the raising-cell check reads) and, once the chapter's last
cell has run, writes the chapter with those outputs into the folder under its own name. The recording is the
execution that tested, not a second pass. Nothing happens when the variable is unset (``make test``, CI).
``tools/gpukit/bundle.py`` turns the folder into the bundle (normalised, images trimmed, manifest, archive).
A cell that nbval did not run (deselected, skipped) keeps no output: a recording shows only what ran.
"""

from __future__ import annotations

import copy
import os
from pathlib import Path

import pytest

VARIABLE = "GPULAB_RECORD_CHAPTERS"
_EXECUTED: dict[str, dict[int, list]] = {}  # chapter path -> nbval cell index -> outputs


def _folder() -> Path | None:
    value = os.environ.get(VARIABLE)
    return Path(value) if value else None


def write_chapter(nb_path: Path, outputs: dict[int, list], folder: Path) -> Path:
    """``nb_path``'s notebook with ``outputs`` (by code-cell index, as nbval counts) in place of its committed ones,
    written as ``folder / nb_path.name``; code cells without a fresh output keep none."""
    import nbformat

    nb = nbformat.read(nb_path, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    for index, cell in enumerate(code):
        cell.outputs = [nbformat.from_dict(copy.deepcopy(dict(o))) for o in outputs.get(index, [])]
        for out in cell.outputs:
            if out.get("output_type") == "stream" and isinstance(out.get("text"), list):
                out.text = "".join(out.text)
            if out.get("output_type") in ("display_data", "execute_result"):
                out.setdefault("metadata", {})
            if out.get("output_type") == "execute_result":
                out.setdefault("execution_count", None)
        cell.execution_count = None
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / nb_path.name
    nbformat.write(nb, path)
    return path


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item):
    try:
        return (yield)
    finally:
        fresh = getattr(item, "test_outputs", None)
        if _folder() is not None and fresh is not None and hasattr(item, "cell_num"):
            _EXECUTED.setdefault(str(item.fspath), {})[item.cell_num] = list(fresh)


def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> None:
    """After a chapter's last cell: write it (one file per chapter, so a run cut short keeps the chapters it ended)."""
    folder = _folder()
    path = str(item.fspath)
    if folder is None or path not in _EXECUTED:
        return
    if nextitem is None or str(nextitem.fspath) != path:
        write_chapter(Path(path), _EXECUTED.pop(path), folder)
