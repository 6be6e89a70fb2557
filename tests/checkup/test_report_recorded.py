"""Chapter 00's recorded environment report agrees with the chapters it is committed beside.

The report lists every chapter with its GPU and multi-GPU cells, counted from the cells' tags when chapter 00 ran.
A chapter whose GPU cells change after that leaves the recorded table stale (it once counted 2 GPU cells in chapter
02, which had 3). The expected rows are computed here from the chapters themselves, so the check holds whoever
re-executes chapter 00 last.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from gpulab.checkup.chapters import chapters

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"
HEADING = "Chapters here, and what they will do:"
ROW = re.compile(r"^\s+(\d\d_\S+)\s+(.+?)\s{2,}(\S.*)$")
COUNT = re.compile(r"(\d+) (multi-GPU|GPU) cell\(s\)")


def recorded_rows(nb_path: Path) -> dict[str, tuple[str, int, int]]:
    """The chapter table as chapter 00's report printed it: name -> (title, GPU cells, multi-GPU cells)."""
    cells = json.loads(nb_path.read_text(encoding="utf-8"))["cells"]
    for cell in cells:
        for out in cell.get("outputs", []):
            text = "".join(out.get("text") or out.get("data", {}).get("text/plain") or "")
            if HEADING in text:
                return _parse(text.split(HEADING, 1)[1])
    raise AssertionError(f"{nb_path.name} has no recorded output holding {HEADING!r}: execute it again.")


def _parse(table: str) -> dict[str, tuple[str, int, int]]:
    rows = {}
    for line in table.splitlines()[3:]:  # the blank rest of the heading's line, the header, the rule
        if not line.strip():
            break
        m = ROW.match(line)
        assert m, f"a row of the chapter table that does not parse: {line!r}"
        counts = {kind: int(n) for n, kind in COUNT.findall(m.group(3))}
        rows[m.group(1)] = (m.group(2).strip(), counts.get("GPU", 0), counts.get("multi-GPU", 0))
    return rows


def test_the_recorded_chapter_table_matches_the_chapters_tags() -> None:
    expected = {c.name: (c.title, c.gpu_cells, c.multigpu_cells) for c in chapters(NOTEBOOKS)}
    recorded = recorded_rows(NOTEBOOKS / "00_setup.ipynb")
    stale = {
        name: f"recorded {recorded.get(name)}, the chapter has {want}"
        for name, want in expected.items()
        if recorded.get(name) != want
    }
    stale.update({name: "recorded, but no such chapter" for name in recorded.keys() - expected.keys()})
    assert not stale, f"chapter 00's report is stale (re-execute 00_setup.ipynb): {stale}"


def test_a_stale_table_is_found(tmp_path: Path) -> None:
    table = (
        f"{HEADING}\n  chapter   question   on this machine\n  --------  ---------  ---------------\n"
        "  02_choosing_gpus  02 · Choosing GPUs  2 GPU cell(s) skip, saying why; 2 multi-GPU cell(s) skip, saying why\n"
        "  07_scaling        07 · When           1 multi-GPU cell(s) skip, saying why\n\nGPU recordings:\n"
    )
    nb = tmp_path / "00_setup.ipynb"
    nb.write_text(json.dumps({"cells": [{"cell_type": "code", "outputs": [{"text": table}]}]}))
    assert recorded_rows(nb) == {
        "02_choosing_gpus": ("02 · Choosing GPUs", 2, 2),
        "07_scaling": ("07 · When", 0, 1),
    }
    nb.write_text(json.dumps({"cells": [{"cell_type": "code", "outputs": [{"text": "no report here"}]}]}))
    with pytest.raises(AssertionError, match="execute it again"):
        recorded_rows(nb)
