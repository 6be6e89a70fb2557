"""Run chapters top to bottom in fast mode on this machine and save them with their text outputs, images stripped.

    .venv/bin/python tools/execute_notebooks.py notebooks/01_cpu_gpu_transfer.ipynb [...]

This is how the committed outputs are produced: by running the code, never by pasting. Images are removed (the
repository keeps text only; a fresh run in JupyterLab draws them again). Execution counts come out in order. The
result is normalised (``tools/normalise_notebook.py``: no timestamps, widget state, ANSI codes or machine paths), so
that a re-run with no code change differs only in what was measured. ``make notebooks`` runs every chapter.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

sys.path.insert(0, str(Path(__file__).resolve().parent))
from normalise_notebook import normalise  # noqa: E402  (a script's sibling)

os.environ.setdefault("GPULAB_FAST", "1")
IMAGE_PREFIX = "image/"


def strip_images(nb: nbformat.NotebookNode) -> int:
    removed = 0
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        kept = []
        for out in cell.get("outputs", []):
            data = out.get("data")
            if data:
                images = [k for k in data if k.startswith(IMAGE_PREFIX)]
                for key in images:
                    del data[key]
                    removed += 1
                # An image's text/plain is only a placeholder ("<Figure size 640x480 with 1 Axes>"): drop it too.
                if not data or (images and set(data) == {"text/plain"}):
                    continue
                out.get("metadata", {}).clear()
            kept.append(out)
        cell.outputs = kept
    return removed


def run(path: Path) -> None:
    nb = nbformat.read(path, as_version=4)
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}
    t0 = time.perf_counter()
    NotebookClient(
        nb,
        timeout=600,
        kernel_name="python3",
        store_widget_state=False,
        resources={"metadata": {"path": str(path.parent)}},
    ).execute()
    images = strip_images(nb)
    normalise(nb)
    nbformat.write(nb, path)
    print(f"{path}: ran in {time.perf_counter() - t0:.1f} s, {images} image(s) stripped")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    for arg in sys.argv[1:]:
        run(Path(arg))
