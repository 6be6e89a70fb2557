"""Execute a chapter for its handout: in a temporary copy of its folder, with the figures kept.

The committed notebooks carry text outputs only (``tools/execute_notebooks.py`` strips images); a handout needs the
figures the room saw, so the chapter is run again here and the run is exported, never written back. The kernel gets
``GPULAB_FAST`` (fast or full sizes), ``GPULAB_MONITOR_LIVE=0`` (the monitor draws its final figure only: no widget
to freeze) and this checkout first on ``PYTHONPATH``. nbclient stores the widgets' final state in the notebook's
metadata, which ``static.py`` turns into plain HTML.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

__all__ = ["ChapterFailed", "execute", "code_cells"]

ROOT = Path(__file__).resolve().parents[2]


class ChapterFailed(RuntimeError):
    """A chapter raised where it should not have: the handout would print a traceback as if it were the lesson."""


def code_cells(nb: nbformat.NotebookNode) -> int:
    return sum(c.cell_type == "code" for c in nb.cells)


def kernel_env(fast: bool) -> dict[str, str]:
    env = dict(os.environ)
    env["GPULAB_FAST"] = "1" if fast else "0"
    env["GPULAB_MONITOR_LIVE"] = "0"
    env.pop("JPY_SESSION_NAME", None)  # make handouts from a JupyterLab terminal: still no live widgets
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *filter(None, [env.get("PYTHONPATH")])])
    return env


def execute(
    notebook: Path, *, fast: bool, timeout_s: int = 600, on_cell: Callable[[], None] = lambda: None
) -> nbformat.NotebookNode:
    """Run ``notebook`` top to bottom in a copy of its folder; return the executed notebook (nothing is saved).

    Cells tagged ``raises-exception`` may raise (they are the lesson); any other error raises ``ChapterFailed``
    naming the cell, because a handout with an unexpected traceback would teach the wrong thing."""
    nb = nbformat.read(notebook, as_version=4)
    with tempfile.TemporaryDirectory(prefix="gpulab-handout-") as tmp:
        work = Path(tmp) / notebook.parent.name
        shutil.copytree(notebook.parent, work, ignore=shutil.ignore_patterns(".ipynb_checkpoints", "__pycache__"))
        client = NotebookClient(
            nb,
            timeout=timeout_s,
            kernel_name="python3",
            store_widget_state=True,
            resources={"metadata": {"path": str(work)}},
            on_cell_executed=lambda **_: on_cell(),
        )
        try:
            client.execute(env=kernel_env(fast))  # passed on to the kernel manager's start_kernel
        except CellExecutionError as exc:
            raise ChapterFailed(
                f"{notebook.name} raised in a cell not tagged raises-exception, so no handout was "
                f"made from it. Run the chapter in JupyterLab to see why:\n{exc}"
            ) from None
    return nb
