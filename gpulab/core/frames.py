"""Which source files a learner did not write: Python's library, installed packages and gpulab itself.

Both the notebook's short tracebacks and the launcher's report of a failed rank keep the learner's frames and drop
these, so the rule lives here, below both.
"""

from __future__ import annotations

import sysconfig
from pathlib import Path

__all__ = ["is_library_file", "GPULAB_ROOT", "code_place"]

_LIBRARY_ROOTS = tuple(
    {
        str(Path(p).resolve())
        for key in ("stdlib", "platstdlib", "purelib", "platlib")
        if (p := sysconfig.get_paths().get(key))
    }
)
GPULAB_ROOT = str(Path(__file__).resolve().parents[1])


def is_library_file(filename: str) -> bool:
    """True for Python's own library, installed packages and gpulab: frames a learner did not write."""
    if filename.startswith("<frozen ") or filename.startswith("<built-in"):
        return True
    try:
        resolved = str(Path(filename).resolve())
    except (OSError, ValueError):
        return False
    return resolved.startswith(_LIBRARY_ROOTS) or resolved.startswith(GPULAB_ROOT) or "site-packages" in resolved


def code_place(filename: str, lineno: int, cell: int | None = None) -> str:
    """Where a line is, in the learner's words: ``cell [7], line 3`` for a notebook cell (``cell``: its execution
    count, IPython's ``In [7]``, which ``compat.ipython_cell_number`` reads), ``train.py, line 3`` for a file."""
    if cell is not None:
        return f"cell [{cell}], line {lineno}"
    if filename.startswith("<"):
        return f"{filename}, line {lineno}"
    return f"{Path(filename).name}, line {lineno}"
