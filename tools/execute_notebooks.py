"""Run chapters top to bottom in fast mode on this machine and save them with their text outputs, images stripped.

    .venv/bin/python tools/execute_notebooks.py [--allow-noisy] notebooks/01_cpu_gpu_transfer.ipynb [...]

This is how the committed outputs are produced: by running the code, never by pasting. Images are removed (the
repository keeps text only; a fresh run in JupyterLab draws them again). Execution counts come out in order. The
result is normalised (``tools/normalise_notebook.py``: no timestamps, widget state, ANSI codes or machine paths), so
that a re-run with no code change differs only in what was measured. ``make notebooks`` runs every chapter.

The chapters whose lessons read timings (``TIMING_CHAPTERS``) are saved only from a quiet machine: before running
one, the machine's ceiling (2 independent processes ÷ 1, ``gpulab.scaling.how_quiet``) and load average are measured,
and below ``QUIET_CEILING`` (1.7×; a quiet 2-core machine reads 1.8–2.0×, one beside other work 1.3–1.6×) the chapter
is not run; after it ran, the line its first cell printed (``this run's machine: … → quiet``) must say quiet too, or
the file is left as it was. ``--allow-noisy`` (or ``GPULAB_ALLOW_NOISY=1``) saves them anyway: the chapter's own top
line then tells its reader that the run was not quiet.
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
# chapters whose lessons read timings: 04 (is DDP faster?), 05 (does watching cost?), 07 (when do 2 ranks pay?), 08
# (is a bfloat16 step faster here?)
TIMING_CHAPTERS = ("04_ddp.ipynb", "05_live_monitor.ipynb", "07_scaling.ipynb", "08_precision_restarts_fsdp.ipynb")
OVERRIDE = "GPULAB_ALLOW_NOISY"


class NotQuiet(RuntimeError):
    """A timing chapter's run was refused: the machine was not quiet enough for its timings to be the lesson's."""


def refusal(name: str, ceiling: float, load: float | None, when: str) -> str:
    """Why ``name`` is not saved, and how to save it anyway."""
    from gpulab.scaling.run_verdicts import QUIET_CEILING

    busy = f", load average {load:.2f}" if load is not None else ""
    # a run refused at or above the quiet threshold can only have had its 1-process run slowed (2 processes cannot be
    # more than twice as fast as 1), also when the ceiling was read back rounded from the top line (2.054× as 2.05×)
    if ceiling >= QUIET_CEILING:
        why = "above the 2× two processes can reach (another program slowed the 1-process run)"
    else:
        why = f"below the {QUIET_CEILING}× of a quiet machine (another program holds a core)"
    return (
        f"{name}: not saved, because the machine was not quiet {when}: 2 independent processes reached {ceiling:.2f}× "
        f"one{busy}, {why}, and this chapter's lessons read its timings. Stop the other work and run it again, or "
        "save it anyway with "
        f"--allow-noisy (or {OVERRIDE}=1): its first cell then says that the run was not quiet."
    )


def check_before(path: Path) -> None:
    """Measure the machine before a timing chapter runs; raise ``NotQuiet`` below the threshold."""
    from gpulab.scaling import how_quiet

    q = how_quiet()
    print(f"{path.name}: {q}")
    if not q.verdict.held:
        raise NotQuiet(refusal(path.name, q.ceiling.speedup, q.load_1min, "before it ran"))


def check_after(path: Path, nb: nbformat.NotebookNode) -> None:
    """The chapter's own top line must exist and say quiet; raise ``NotQuiet`` (or ``ValueError``: no line)."""
    from gpulab.scaling.quiet import QUIET_LINE, read_quietness

    text = "".join(
        "".join(o.get("text", "")) + "".join(o.get("data", {}).get("text/plain", ""))
        for c in nb.cells
        if c.cell_type == "code"
        for o in c.get("outputs", [])
    )
    found = read_quietness(text)
    if found is None:
        raise ValueError(
            f"{path.name} is a timing chapter but printed no {QUIET_LINE!r} line: its first code cell should print "
            "gpulab.scaling.how_quiet(), so that a reader knows how quiet the run was."
        )
    ceiling, quiet = found
    if not quiet:
        raise NotQuiet(refusal(path.name, ceiling, None, "while it ran"))


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


def run(path: Path, allow_noisy: bool = False) -> None:
    timing = path.name in TIMING_CHAPTERS and not allow_noisy
    if timing:
        check_before(path)
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
    if timing:
        check_after(path, nb)
    images = strip_images(nb)
    normalise(nb)
    nbformat.write(nb, path)
    print(f"{path}: ran in {time.perf_counter() - t0:.1f} s, {images} image(s) stripped")


def main(argv: list[str]) -> int:
    allow = "--allow-noisy" in argv or os.environ.get(OVERRIDE, "") not in ("", "0")
    paths = [Path(a) for a in argv if a != "--allow-noisy"]
    if not paths:
        print(__doc__)
        return 2
    refused = []
    for path in paths:
        try:
            run(path, allow_noisy=allow)
        except NotQuiet as exc:
            print(exc, file=sys.stderr)
            refused.append(path.name)
    if refused:
        print(f"not saved (machine not quiet): {', '.join(refused)}", file=sys.stderr)
    return 1 if refused else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
