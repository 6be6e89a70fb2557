"""Execute a chapter for its handout: in a temporary copy of its folder, with the figures kept.

The committed notebooks carry text outputs only (``tools/execute_notebooks.py`` strips images); a handout needs the
figures the room saw, so the chapter is run again here and the run is exported, never written back. The kernel gets
``GPULAB_FAST`` (fast or full sizes), ``GPULAB_MONITOR_LIVE=0`` (the monitor draws its final figure only: no widget
to freeze) and this checkout first on ``PYTHONPATH``. nbclient stores the widgets' final state in the notebook's
metadata, which ``static.py`` turns into plain HTML.

``executed`` is the one run that both the handouts and the website (``tools/website.py``) read: it keeps each run in
``build/executed/`` under a key made of the chapter's bytes, the sizes and gpulab's source, so ``make handouts`` then
``make site`` runs every chapter once. Why by hand and not by the site's engine (myst-nb can execute, through the same
nbclient): the handouts need the run too and print it with nbconvert, not Sphinx; and the kernel here gets the
environment above, widget state kept, a copy of the folder to work in and a progress callback per cell, which
myst-nb's executor does not offer.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

__all__ = ["ChapterFailed", "execute", "executed", "code_cells", "CACHE"]

ROOT = Path(__file__).resolve().parents[2]
CACHE = ROOT / "build" / "executed"


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
            # ipykernel 7 logs "Kernel is running over TCP without encryption" as it starts, once per chapter, in
            # the middle of make site's and make handouts' output. The kernel listens on 127.0.0.1 for this process
            # alone (a build machine's own loopback), so the warning tells a builder nothing: its log shows errors
            # only. What the chapter's code prints, warnings included, still reaches the page.
            extra_arguments=["--IPKernelApp.log_level=ERROR"],
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


def run_key(notebook: Path, *, fast: bool) -> str:
    """What a run depends on: the chapter's bytes, the sizes, and every file of gpulab and of the chapters' folder
    (their scripts) that the chapter may import or start."""
    h = hashlib.sha256(f"fast={fast}\n".encode())
    h.update(notebook.read_bytes())
    for base, pattern in ((ROOT / "gpulab", "*.py"), (notebook.parent / "scripts", "*.py")):
        for f in sorted(base.rglob(pattern)):
            h.update(str(f.relative_to(base)).encode() + b"\0" + f.read_bytes())
    return h.hexdigest()[:20]


def executed(
    notebook: Path, *, fast: bool, cache: Path | None = CACHE, on_cell: Callable[[], None] = lambda: None
) -> nbformat.NotebookNode:
    """``execute(notebook)``, or its earlier run from ``cache`` when nothing it depends on changed (``run_key``);
    a fresh run is stored there for the next reader (``cache=None``: always run, store nothing)."""
    if cache is None:
        return execute(notebook, fast=fast, on_cell=on_cell)
    stored = cache / f"{notebook.stem}.{run_key(notebook, fast=fast)}.ipynb"
    if stored.is_file():
        for _ in range(code_cells(nb := nbformat.read(stored, as_version=4))):
            on_cell()
        return nb
    nb = execute(notebook, fast=fast, on_cell=on_cell)
    cache.mkdir(parents=True, exist_ok=True)
    for old in cache.glob(f"{notebook.stem}.*.ipynb"):
        old.unlink()  # one run per chapter is kept: the newest
    tmp = stored.with_suffix(".tmp")
    nbformat.write(nb, tmp)
    tmp.replace(stored)
    return nb
