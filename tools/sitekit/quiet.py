"""The site never publishes a run that its own chapter calls not quiet.

A timing chapter (04, 05, 07 and 08: any chapter whose first cell prints ``this run's machine: … → quiet``) reads
its lesson from timings, and on a busy machine they are the machine's, not the lesson's: "ceiling 0.99× → not
quiet", a model error of 63 %. ``make notebooks`` refuses to save such a run; the site, which runs every chapter on
whatever machine builds it, chooses in this order (docs/publishing.md says why):

1. the build's run, where it says quiet (or where the chapter times nothing);
2. one more run, where the first was not quiet: a moment of load (another build, an editor's indexer) often passes
   (``website.py --once`` skips it: CI builds the site while other tests run, so a second run would be as busy);
3. the committed run, where it says quiet: ``make notebooks`` saved it from a quiet machine. It has text outputs only
   (the repository keeps no images), so the page says, at its top, which run it shows and why;
4. else the build's run, labelled at its top as not quiet, so that no reader takes its timings for the lesson's.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import nbformat

from gpulab.scaling.quiet import read_quietness

__all__ = ["Chosen", "quietness_of", "quiet_run", "with_note"]


def quietness_of(nb: nbformat.NotebookNode) -> tuple[float, bool] | None:
    """The ceiling and quiet word the run printed (None: the chapter times nothing)."""
    text = "".join(
        "".join(o.get("text", "")) + "".join(o.get("data", {}).get("text/plain", ""))
        for c in nb.cells
        if c.cell_type == "code"
        for o in c.get("outputs", [])
    )
    return read_quietness(text)


@dataclass
class Chosen:
    """The run a page shows, and the note put at its top (None: the build's own quiet run, nothing to say)."""

    nb: nbformat.NotebookNode
    note: str | None = None
    committed: bool = False


def quiet_run(
    path: Path,
    run: Callable[[Path], nbformat.NotebookNode],
    rerun: Callable[[Path], nbformat.NotebookNode] | None,
    say: Callable[[str], None] = print,
) -> Chosen:
    """The run of chapter ``path`` to publish: ``run`` (the build's, maybe cached), ``rerun`` (a fresh one; None:
    none, step 2 is skipped)."""
    nb = run(path)
    found = quietness_of(nb)
    if found is None or found[1]:
        return Chosen(nb)
    if rerun is not None:
        say(
            f"site: {path.name}: its run says the machine was not quiet (ceiling {found[0]:.2f}×); running it once more"
        )
        nb = rerun(path)
    again = quietness_of(nb)
    if again is None or again[1]:
        return Chosen(nb)
    committed = nbformat.read(path, as_version=4)
    kept = quietness_of(committed)
    times = "twice" if rerun is not None else "in its one run"
    if kept is not None and kept[1]:
        say(f"site: {path.name}: not quiet {times}; the page shows the committed quiet run (ceiling {kept[0]:.2f}×)")
        return Chosen(
            committed,
            note=(
                "This page shows the chapter's committed run, saved from a quiet machine: the machine that built "
                f"the site was busy (ceiling {again[0]:.2f}× {times}), so its timings would not be the lesson's. "
                "The committed run keeps text only: run the chapter to see its figures."
            ),
            committed=True,
        )
    say(f"site: {path.name}: not quiet, and no quiet committed run to show instead: the page is labelled")
    return Chosen(
        nb,
        note=(
            f"This run was not quiet (ceiling {again[0]:.2f}×): another program shared the machine, so the timings "
            "below measure that machine's load, not the lesson. Read the verdicts as this run's only."
        ),
    )


def with_note(nb: nbformat.NotebookNode, note: str) -> nbformat.NotebookNode:
    """``nb`` with ``note`` as an admonition right after its title cell."""
    cell = nbformat.v4.new_markdown_cell(f"```{{admonition}} Which run this page shows\n:class: note\n{note}\n```")
    nb.cells.insert(1 if nb.cells and nb.cells[0].cell_type == "markdown" else 0, cell)
    return nb
