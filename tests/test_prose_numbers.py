"""Prose never restates its own run's measurement: a re-run would make it false, and nothing would fail.

Every Markdown cell of every chapter and every row of the claims ledger is scanned for numbers with units (%, ×, ms,
µs, s, GB/s, MiB, MB, samples, ...). A number *quotes the chapter's own measurement* when the chapter's committed
outputs print numbers of that unit at the same precision (CLARIFICATIONS.md, "Every number a learner reads"); such a
number must be one of:

- a **constant** of ``CONSTANTS``: a short, reviewed list, each entry naming its source (a data sheet, a specification,
  the arithmetic of a fixed size) and the cell that uses it, with the value recomputed here; or one of the two
  speed-ups that are definitions (``DEFINITIONS``: 1× and 2×);
- a **bound** of ``BOUNDS``: a number the prose states as a bound ("about 1 %, at most 3 %"), checked here against
  the committed output of the cell that measures it;
- in the ledger, a number within the bound its row's evidence states (``{≤ 3}``), which ``test_claims_ledger.py``
  checks against the committed output;
- a figure of a GPU evidence record that the same cell names (``evidence/<date>-<gpu>.json``), which
  ``test_evidence_citations.py`` checks equal to the record's value.

Anything else is a measured number pasted into prose: point at the output instead ("the line printed above"), or let
the cell print the sentence.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from gpulab.scaling.cost import mlp_parameters
from gpulab.scaling.run_verdicts import NEAR_ONE, QUIET_CEILING
from tests.test_claims_ledger import BOUND
from tests.test_evidence_citations import FILES as RECORDS
from tests.test_evidence_citations import QUANTITY as RECORD_QUANTITY

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
LEDGER = NOTEBOOKS / "claims_ledger.md"
UNITS = r"%|×|ms|µs|s|GB/s|MB/s|TFLOP/s|GFLOP/s|GiB|MiB|KiB|GB|MB|kB|samples/s|samples"
QUOTE = re.compile(rf"(?<![\w.,/-])(\d{{1,3}}(?:,\d{{3}})+|\d+(?:\.\d+)?) ?({UNITS})(?![\w/])")
RECORD_NAME = re.compile(r"(?<![\w/])evidence/(" + "|".join(map(re.escape, RECORDS or ["-"])) + r")(?![\w.-])")


def decimals(number: str) -> int:
    return len(number.split(".")[1]) if "." in number else 0


def printed_as(value: float, number: str) -> bool:
    """``value`` rounds to ``number`` at the precision ``number`` is written with."""
    return f"{value:.{decimals(number)}f}" == number.replace(",", "")


@dataclass(frozen=True)
class Constant:
    """A number in prose that is no measurement of this run: its source, and its value recomputed from it."""

    chapter: str
    cell: str
    quote: str  # as the prose writes it: "7.45 GiB"
    source: str
    value: float


@dataclass(frozen=True)
class Bound:
    """Numbers in prose that state a bound on a measurement; ``check`` reads the measuring cell's committed output."""

    chapter: str
    cell: str
    quotes: tuple[str, ...]
    measured_in: str  # the cell whose output holds the measurement
    pattern: str  # captures the measured number in that output
    check: Callable[[float], bool]
    said: str


CONSTANTS = [
    Constant("01_cpu_gpu_transfer.ipynb", "1d714ab9", "7.45 GiB", "2×10⁹ float32 = 8·10⁹ bytes", 8e9 / 2**30),
    Constant("01_cpu_gpu_transfer.ipynb", "1d714ab9", "14.9 GiB", "two such parameters", 16e9 / 2**30),
    Constant(
        "01_cpu_gpu_transfer.ipynb",
        "6c6019fe",
        "17 ms",
        "NVIDIA T4 data sheet, FP32 8.1 TFLOPS, 2·4096³ FLOPs",
        2 * 4096**3 / 8.1e12 * 1e3,
    ),
    Constant(
        "01_cpu_gpu_transfer.ipynb",
        "6c6019fe",
        "2 ms",
        "NVIDIA H100 SXM data sheet, FP32 67 TFLOPS",
        2 * 4096**3 / 67e12 * 1e3,
    ),
    Constant(
        "05_live_monitor.ipynb", "54727f2f", "80 %", "load_digits' split: 1,437 of 1,797 images", 1437 / 1797 * 100
    ),
    Constant("05_live_monitor.ipynb", "fc87b62a", "100 %", "the utilisation panel's full scale", 100),
    Constant(
        "06_lightning.ipynb",
        "52c5910f",
        "312.5 MiB",
        "Linear(12800, 6400) in float32",
        (12800 * 6400 + 6400) * 4 / 2**20,
    ),
    Constant(
        "06_lightning.ipynb",
        "52c5910f",
        "1.2 GiB",
        "that layer's weights, gradients and Adam's two averages",
        4 * (12800 * 6400 + 6400) * 4 / 2**30,
    ),
    Constant(
        "07_scaling.ipynb",
        "67eae800",
        "0.8 ms",
        "12.6 MB over PCIe 3.0 ×16 (PCI-SIG: 15.75 GB/s each way)",
        4 * mlp_parameters(1024, 3) / 15.75e9 * 1e3,
    ),
    Constant("04_ddp.ipynb", "0451b614", "3 s", "a setting: timeout_s=3 in the cell below", 3),
    Constant("04_ddp.ipynb", "d4f1a0e3", "2 s", "a setting: rank 0 sleeps args=(2,) seconds in the cell below", 2),
    Constant("07_scaling.ipynb", "c5884de5", "15 %", "gpulab.scaling.run_verdicts.NEAR_ONE", NEAR_ONE * 100),
    Constant("07_scaling.ipynb", "7d9e09be", "4×", "a setting: the knob '4 micro-batches, no_sync()'", 4),
    Constant("07_scaling.ipynb", "c5884de5", "1.7×", "gpulab.scaling.run_verdicts.QUIET_CEILING", QUIET_CEILING),
    Constant(
        "07_scaling.ipynb",
        "67eae800",
        "15.75 GB/s",
        "PCI-SIG PCIe 3.0: 8 GT/s per lane, 128b/130b, ×16",
        8 * 16 * 128 / 130 / 8,
    ),
]

# Speed-ups that are definitions, not readings: the break-even and the most that 2 processes can do. The outputs print
# them too, in the verdicts' reasons ("not within 15 % of 1×", "above the 2× that two processes can reach").
DEFINITIONS = {
    "1×": "break-even: 2 ranks exactly as fast as 1, the line every speed-up is read against",
    "2×": "twice the work of one: the most that 2 processes or ranks can reach",
}

ONE_CORE = r"of watched training = ([\d.]+) % of one core"
BOUNDS = [
    Bound("05_live_monitor.ipynb", "3ebe4e4e", ("3 %",), "a928a6ce", ONE_CORE, lambda v: v <= 3, "≤ 3 %"),
]


@dataclass(frozen=True)
class RecordBound:
    """A bound that prose states on figures of the GPU evidence record the same cell names, checked on the record."""

    chapter: str
    cell: str
    quote: str
    check: Callable[[dict], bool]  # the record's figures -> whether the bound holds
    said: str


def _share_of_link(figures: dict, name: str) -> float:
    return figures[name]["value"] / figures[name]["peak"]


RECORD_BOUNDS = [
    RecordBound(
        "01_cpu_gpu_transfer.ipynb",
        "h100-copies",
        "80 %",
        lambda f: min(_share_of_link(f, "h2d_pinned_gbps"), _share_of_link(f, "d2h_pinned_gbps")) > 0.8,
        "pinned copies above 80 % of the link's peak, both ways",
    ),
]


def _outputs(cells: list[dict]) -> dict[str, str]:
    return {
        c.get("id", ""): "\n".join(
            "".join(o.get("text", "")) + "".join(o.get("data", {}).get("text/plain", "")) for o in c.get("outputs", [])
        )
        for c in cells
        if c["cell_type"] == "code"
    }


def measured_kinds(text: str) -> set[tuple[str, int]]:
    """(unit, decimals) of every number with a unit that ``text`` prints."""
    return {(unit, decimals(number)) for number, unit in QUOTE.findall(text)}


def quoted_measurements(chapter: Path) -> list[tuple[str, str, str]]:
    """(cell id, number with unit, its sentence) for each number of the chapter's prose that its outputs print at
    that unit and precision, less the constants, the bounds, and the figures of a cited evidence record."""
    cells = json.loads(chapter.read_text())["cells"]
    printed = measured_kinds("\n".join(_outputs(cells).values()))
    constants = {(c.cell, c.quote) for c in CONSTANTS if c.chapter == chapter.name}
    bounded = {(b.cell, q) for b in BOUNDS if b.chapter == chapter.name for q in b.quotes}
    bounded |= {(b.cell, b.quote) for b in RECORD_BOUNDS if b.chapter == chapter.name}
    found = []
    for cell in cells:
        if cell["cell_type"] != "markdown":
            continue
        text, cid = "".join(cell["source"]), cell.get("id", "")
        cites_record = bool(RECORD_NAME.search(text))
        for m in QUOTE.finditer(text):
            number, unit = m.groups()
            quote = f"{number} {unit}" if unit != "×" else f"{number}×"
            if (unit, decimals(number)) not in printed or quote in DEFINITIONS:
                continue
            if (cid, quote) in constants or (cid, quote) in bounded:
                continue
            if cites_record and RECORD_QUANTITY.fullmatch(m.group(0)):  # test_evidence_citations checks it
                continue
            found.append((cid, quote, text[max(0, m.start() - 60) : m.end() + 20].replace("\n", " ")))
    return found


CHAPTERS = sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))


@pytest.mark.parametrize("chapter", CHAPTERS, ids=[c.stem[:2] for c in CHAPTERS])
def test_no_chapter_prose_restates_its_own_measurement(chapter):
    found = quoted_measurements(chapter)
    assert not found, "\n".join(
        f"{chapter.name} cell {cid}: {q} quotes this chapter's own measurement (…{ctx}…): point at the output, let the "
        "cell print the sentence, or state a bound that BOUNDS checks"
        for cid, q, ctx in found
    )


def test_every_constant_is_quoted_where_it_says_and_equals_its_source():
    for c in CONSTANTS:
        cells = {x.get("id"): "".join(x["source"]) for x in json.loads((NOTEBOOKS / c.chapter).read_text())["cells"]}
        assert c.quote in cells.get(c.cell, ""), f"{c.chapter} cell {c.cell} no longer says {c.quote}: drop the entry"
        number = QUOTE.match(c.quote).group(1)
        assert printed_as(c.value, number), f"{c.quote} is not {c.source} ({c.value:g})"


def test_the_quiet_threshold_in_prose_is_the_codes():
    # chapter 07 names the quiet threshold in prose; it is QUIET_CEILING, which the run's verdicts use
    text = "".join(
        "".join(c["source"])
        for c in json.loads((NOTEBOOKS / "07_scaling.ipynb").read_text())["cells"]
        if c["cell_type"] == "markdown"
    )
    assert f"{QUIET_CEILING}×" in text


@pytest.mark.parametrize("bound", BOUNDS, ids=[f"{b.chapter[:2]}-{b.cell}" for b in BOUNDS])
def test_every_bound_in_prose_holds_for_the_committed_output(bound):
    cells = json.loads((NOTEBOOKS / bound.chapter).read_text())["cells"]
    prose = next("".join(c["source"]) for c in cells if c.get("id") == bound.cell)
    assert all(q in prose for q in bound.quotes), f"cell {bound.cell} no longer states {bound.quotes}"
    found = re.search(bound.pattern, _outputs(cells)[bound.measured_in])
    assert found, f"cell {bound.measured_in} printed nothing that {bound.pattern!r} reads"
    assert bound.check(float(found.group(1))), f"{found.group(0)} breaks the bound {bound.said} the prose states"


@pytest.mark.parametrize("bound", RECORD_BOUNDS, ids=[f"{b.chapter[:2]}-{b.cell}" for b in RECORD_BOUNDS])
def test_every_bound_on_a_cited_record_holds_for_that_record(bound):
    cells = json.loads((NOTEBOOKS / bound.chapter).read_text())["cells"]
    prose = next("".join(c["source"]) for c in cells if c.get("id") == bound.cell)
    cited = RECORD_NAME.findall(prose)
    assert bound.quote in prose and cited, f"cell {bound.cell} no longer states {bound.quote} about a record"
    for name in cited:
        figures = json.loads((ROOT / "evidence" / name).read_text())["figures"]
        assert bound.check(figures), f"{name} breaks what cell {bound.cell} states: {bound.said}"


def ledger_quotes(ledger: str, outputs_of: Callable[[str], str]) -> list[str]:
    """Numbers in the ledger's rows (outside their code spans) that the chapters they cite print at that unit and
    precision, other than the limits of the bound the row's evidence states and "about" numbers within it."""
    found = []
    for line in ledger.splitlines():
        chapters = set(re.findall(r"\((\d\d_[a-z0-9_]+\.ipynb)#", line))
        if not chapters or not line.startswith("|"):
            continue
        evidence = line.rstrip(" |").rsplit("|", 1)[-1]
        bounds = [m.groups() for m in BOUND.finditer(evidence)]
        printed = set().union(*(measured_kinds(outputs_of(c)) for c in chapters))
        text = re.sub(r"`[^`]*`", "", line.rsplit("|", 2)[0])
        for m in QUOTE.finditer(text):
            number, unit = m.groups()
            if (unit, decimals(number)) not in printed:
                continue
            value = float(number.replace(",", ""))
            about = text[max(0, m.start() - 6) : m.start()] == "about "
            if any(value in _limits(b) or (about and _within(value, b)) for b in bounds):
                continue
            found.append(f"{m.group(0)} in {line[:60]}…")
    return found


def _limits(bound: tuple) -> set[float]:
    op, limit, low, high = bound
    return {float(limit)} if op else {float(low), float(high)}


def _within(value: float, bound: tuple) -> bool:
    op, limit, low, high = bound
    if op:
        return value <= float(limit) if op in ("≤", "<") else value >= float(limit)
    return float(low) <= value <= float(high)


def test_the_ledger_states_measured_numbers_only_as_checked_bounds():
    outs = {nb.name: "\n".join(_outputs(json.loads(nb.read_text())["cells"]).values()) for nb in CHAPTERS}
    found = ledger_quotes(LEDGER.read_text(), lambda name: outs.get(name, ""))
    assert not found, "\n".join(found)


def _chapter(tmp_path: Path, prose: str, printed: str) -> Path:
    nb = {
        "cells": [
            {"cell_type": "code", "id": "m", "source": "", "outputs": [{"output_type": "stream", "text": printed}]},
            {"cell_type": "markdown", "id": "p", "source": prose},
        ]
    }
    path = tmp_path / "09_example.ipynb"
    path.write_text(json.dumps(nb))
    return path


def test_a_stale_quote_is_found_as_chapter_05_had_it(tmp_path):
    # chapter 05 once said "the copy saved here measured 1.04 % in this cell" while that cell printed 1.07 %: the
    # number matches what the outputs print at that unit and precision, whatever its value, so it is found
    stale = _chapter(tmp_path, "the copy saved here measured 1.04 % in this cell", "= 1.07 % of one core")
    assert [q for _, q, _ in quoted_measurements(stale)] == ["1.04 %"]
    exact = _chapter(tmp_path, "it measured 1.07 % here", "= 1.07 % of one core")
    assert [q for _, q, _ in quoted_measurements(exact)] == ["1.07 %"]  # right today, wrong after the next run
    other = _chapter(tmp_path, "a 4096×4096 matmul, 2 ms on paper, 80 % for training", "= 1.07 % of one core")
    assert quoted_measurements(other) == []  # no unit and precision the outputs print


def test_a_ledger_number_outside_its_rows_bound_is_found():
    # the ledger's row 001-10 once said "about 1 % of one core (1.04 % in the saved run ...)" beside its bound {≤ 3}
    row = "| 001-10 | claim | {0} (up to 3 %) | [05](05_live_monitor.ipynb#cell-id=a) ran here | `x {{≤ 3}} %` |"
    outputs = lambda name: "= 1.07 % of one core; RAM 9 % of its limit"  # noqa: E731
    assert ledger_quotes(row.format("about 1 %"), outputs) == []  # an approximation within the checked bound
    assert len(ledger_quotes(row.format("about 1 % (1.04 % in the saved run)"), outputs)) == 1
    assert len(ledger_quotes(row.format("about 4 %"), outputs)) == 1  # outside the bound
    assert len(ledger_quotes(row.replace("{{≤ 3}}", "").format("about 1 %"), outputs)) == 2  # no bound: quotes
