"""The chapters and the claims ledger cite GPU evidence (evidence/<date>-<gpu>.json, written by make test-gpu, and
chapter 05's recorded monitor run beside it) only as files that exist, a record by the newest one for its GPU; and a
figure cited from a record in prose equals the record's value at the precision printed (CLARIFICATIONS.md).

A Markdown cell that names a record may state its figures: each number with a unit there (GB/s, MiB, ms, TFLOP/s)
must be one of that record's quantities (a figure, its peak, or a number of its note) rounded as printed. Chapters 00
and 01 must cite the H100's context size, pinned against pageable copies and the non_blocking overlap (``CITED``).
When a newer record for the same GPU arrives, the citations fail until they name it, and the numbers then follow it.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))

from gpukit.evidence import NAME_RE, citation_problems  # noqa: E402
from gpulab.monitoring.recorded import FORMAT as RECORDING  # noqa: E402

EVIDENCE = ROOT / "evidence"


def _kind(path: Path) -> str | None:
    try:
        data = json.loads(path.read_text())
    except ValueError:
        return None
    return (
        "recording"
        if isinstance(data, dict) and data.get("format") == RECORDING
        else "record"
        if NAME_RE.match(path.name)
        else None
    )


def _files(kind: str) -> list[str]:
    return sorted(p.name for p in EVIDENCE.glob("*.json") if _kind(p) == kind) if EVIDENCE.is_dir() else []


FILES, RECORDINGS = _files("record"), _files("recording")
RECORDING_RE = (
    re.compile(r"(?<![\w/])evidence/(" + "|".join(map(re.escape, RECORDINGS)) + r")(?![\w.-])") if RECORDINGS else None
)
QUANTITY = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?) ?(GB/s|MiB|ms|TFLOP/s)(?![\w/])")
# cells that must cite these figures of the newest record for their GPU (figure name, or figure.note-number)
CITED = {
    ("00_setup.ipynb", "5283655c"): ["cuda_context_bytes"],
    ("01_cpu_gpu_transfer.ipynb", "07689b0f"): ["cuda_context_bytes"],
    ("01_cpu_gpu_transfer.ipynb", "h100-copies"): [
        "h2d_pinned_gbps",
        "h2d_pageable_gbps",
        "d2h_pinned_gbps",
        "d2h_pageable_gbps",
    ],
    ("01_cpu_gpu_transfer.ipynb", "h100-overlap"): ["non_blocking_overlap.copy", "non_blocking_overlap.work"],
}


def _markdown_cells(nb: Path) -> list[tuple[str, str]]:
    return [
        (c.get("id", ""), "".join(c["source"]))
        for c in json.loads(nb.read_text())["cells"]
        if c["cell_type"] == "markdown"
    ]


def _texts() -> dict[str, str]:
    out = {
        "notebooks/claims_ledger.md": (ROOT / "notebooks" / "claims_ledger.md").read_text(),
        "README.md": (ROOT / "README.md").read_text(),
        **{f"docs/{p.name}": p.read_text() for p in sorted((ROOT / "docs").glob("*.md"))},
    }
    for nb in sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")):
        out[nb.name] = "\n".join(src for _, src in _markdown_cells(nb))
    return out


def problems_with(text: str, where: str, files: list[str]) -> list[str]:
    """citation_problems, where naming a recorded monitor run that exists (evidence/ch05-monitor-gpu.json) is fine."""
    return citation_problems(RECORDING_RE.sub("", text) if RECORDING_RE else text, where, files)


def quantities(record: dict) -> dict[str, tuple[float, str]]:
    """A record's numbers as prose states them: figure -> (value, unit); bytes also in MiB; peaks; numbers of notes."""
    out: dict[str, tuple[float, str]] = {}
    for name, fig in record["figures"].items():
        if "value" not in fig:
            continue
        unit = fig["unit"]
        out[name] = (fig["value"] / 2**20, "MiB") if unit == "bytes" else (fig["value"], unit)
        if "peak" in fig:
            out[f"{name}.peak"] = (fig["peak"], unit)
        for i, (label, number, note_unit) in enumerate(
            re.findall(r"(?:([a-z]+) )?(\d+(?:\.\d+)?) ?(ms|MiB|GB/s)", fig.get("note", ""))
        ):
            out[f"{name}.{label or i}"] = (float(number), note_unit)
    return out


def _printed(value: float, text: str) -> bool:
    decimals = len(text.split(".")[1]) if "." in text else 0
    return f"{value:.{decimals}f}" == text


def figure_problems(text: str, where: str, records: dict[str, dict], must: list[str] = ()) -> list[str]:
    """Numbers with units in ``text`` (one cell) that no cited record holds at that precision, and figures of
    ``must`` it does not state. ``records``: file name -> record, for the files the cell cites."""
    held = {f"{name}:{key}": q for name, r in records.items() for key, q in quantities(r).items()}
    out = []
    stated = [(m.group(1), m.group(2)) for m in QUANTITY.finditer(text)]
    for number, unit in stated:
        if not any(u == unit and _printed(v, number) for v, u in held.values()):
            out.append(f"{where}: {number} {unit} is no figure of {', '.join(records)} at that precision")
    for key in must:
        found = [(v, u) for k, (v, u) in held.items() if k.split(":", 1)[1] == key]
        if not found:
            out.append(f"{where}: {', '.join(records)} has no figure {key}")
        elif not any(u == unit and _printed(v, number) for v, u in found for number, unit in stated):
            v, u = found[0]
            out.append(f"{where}: must state {key} of {', '.join(records)} ({v:g} {u}), as printed there")
    return out


def cited_records(text: str) -> dict[str, dict]:
    names = sorted({c.split("/", 1)[1] for c in re.findall(r"(?<![\w/])evidence/[\w.-]*\w", text)} & set(FILES))
    return {n: json.loads((EVIDENCE / n).read_text()) for n in names}


def test_every_evidence_citation_names_the_newest_existing_file():
    problems = [p for where, text in _texts().items() for p in problems_with(text, where, FILES)]
    assert not problems, "\n".join(problems)


def test_the_ledger_cites_the_newest_evidence_of_each_gpu_once_there_is_any():
    newest = {NAME_RE.match(f).group(2): f for f in FILES}
    ledger = _texts()["notebooks/claims_ledger.md"]
    assert [f for f in newest.values() if f not in ledger] == [], "the claims ledger does not cite these"


@pytest.mark.skipif(not FILES, reason="no GPU evidence committed yet: nothing to cite")
def test_every_figure_a_chapter_cites_equals_the_record_at_its_printed_precision():
    problems, checked = [], 0
    for nb in sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")):
        for cell_id, src in _markdown_cells(nb):
            records = cited_records(src)
            must = CITED.get((nb.name, cell_id), [])
            if must and not records:
                problems.append(f"{nb.name} cell {cell_id}: cites no evidence record; it must state {must}")
            elif records:
                checked += 1
                problems += figure_problems(src, f"{nb.name} cell {cell_id}", records, must)
    assert checked >= len(CITED) and not problems, "\n".join(problems) or f"only {checked} cells cite a record"


def test_the_monitor_recording_is_evidence_beside_the_records():
    if RECORDINGS:
        assert problems_with(f"(evidence/{RECORDINGS[0]})", "ch", FILES) == []
    assert citation_problems("evidence/ch05-monitor-gpu.json", "ch", FILES)  # not a record: only as a recording


@pytest.mark.skipif(not RECORDINGS, reason="no recorded monitor run committed yet")
def test_chapter_05_shows_the_recorded_gpu_run_as_text_labelled_as_recorded():
    from gpulab.monitoring.recorded import latest_recorded_run

    run = latest_recorded_run(EVIDENCE)
    cells = json.loads((ROOT / "notebooks" / "05_live_monitor.ipynb").read_text())["cells"]
    shown = [c for c in cells if c["cell_type"] == "code" and "latest_recorded_run()" in "".join(c["source"])]
    assert len(shown) == 1, "chapter 05 draws the recorded run in one cell"
    text = "".join(
        "".join(o.get("text", "")) + "".join(o.get("data", {}).get("text/plain", "")) for o in shown[0]["outputs"]
    )
    assert run.label in text and "Monitor summary: " + run.title in text
    assert all(not k.startswith("image/") and k != "text/html" for o in shown[0]["outputs"] for k in o.get("data", {}))


H100 = {
    "figures": {
        "h2d_pinned_gbps": {"value": 51.76, "unit": "GB/s", "peak": 63.008},
        "cuda_context_bytes": {"value": 648000000.0, "unit": "bytes"},
        "non_blocking_overlap": {"value": 1.0, "unit": "fraction", "note": "copy 1.40 ms, work 21.15 ms"},
        "nccl_allreduce_busbw_gbps": {"not_measured": "one GPU"},
    }
}


@pytest.mark.parametrize(
    "text, problem",
    [
        ("pinned 51.8 GB/s of 63.0 GB/s; a context 618 MiB; copy 1.40 ms under 21.15 ms", None),
        ("pinned 51.76 GB/s, 52 GB/s", None),
        ("pinned 51.7 GB/s", "51.7 GB/s is no figure of h.json at that precision"),
        ("a context 648 MiB", "648 MiB is no figure"),
        ("copy 1.4 ms", None),
        ("copy 1.5 ms", "1.5 ms is no figure"),
        ("nothing stated", "must state h2d_pinned_gbps of h.json (51.76 GB/s)"),
    ],
)
def test_the_figure_check_finds_a_number_the_record_does_not_hold(text, problem):
    found = figure_problems(text, "cell", {"h.json": H100}, ["h2d_pinned_gbps"] if "nothing" in text else [])
    assert (found == []) if problem is None else any(problem in p for p in found), found


def test_the_citation_check_finds_a_wrong_a_missing_and_a_stale_citation():
    files = ["2026-11-01-h100.json", "2026-11-24-h100.json", "2026-11-24-t4.json"]
    text = (
        "measured on an H100, 2026-11-24 (evidence/2026-11-24-h100.json); on a T4 (evidence/2026-11-24-t4.json); "
        "old: evidence/2026-11-01-h100.json; typo: evidence/h100.json; gone: evidence/2026-12-01-a100.json"
    )
    found = citation_problems(text, "ch", files)
    assert len(found) == 3, found
    assert "not the newest evidence for this GPU: cite 2026-11-24-h100.json" in found[0]
    assert "'evidence/h100.json' is not evidence/<YYYY-MM-DD>-<gpu>.json" in found[1]
    assert "2026-12-01-a100.json does not exist" in found[2]
