"""The claims ledger (notebooks/claims_ledger.md) stays true to the chapters it points to.

Each row of the ledger names a claim of a source article, a verdict, the chapter cell that shows it, how that cell
shows it (ran here / predicted here / runs where GPUs exist / full run only / not shown by any cell yet) and a piece
of evidence. This test reads the rows from the Markdown tables and checks them against the committed notebooks: the
cell exists; a cell that ran on the CPU has outputs (it is not a skipped ``%%gpu`` cell) and printed the evidence; a
cell whose output is a prediction on a described machine is not passed off as an observation; a GPU cell is tagged
``gpu``/``multigpu`` and contains the evidence in its code; every link on the page points to a cell that exists.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
LEDGER = NOTEBOOKS / "claims_ledger.md"
ARTICLES = ("000", "001", "002", "003", "004")

STATUSES = ("ran here", "predicted here", "runs where GPUs exist", "full run only", "not shown by any cell yet")
VERDICT = re.compile(
    r"(holds|holds: .+|holds \(.+\)|holds with a condition: .+"
    r"|outdated since (PyTorch|Lightning) \d+\.\d+(\.\d+)?: .+|wrong: .+)"
)
LINK = re.compile(r"\[([^\]]+)\]\((\d{2}_[a-z0-9_]+\.ipynb)#cell-id=([A-Za-z0-9_-]+)\)")
SECTION = re.compile(r"^## (\d{3}) · ")
PREDICTION_MARKS = (
    "Predicted by gpulab.explain",
    "SIMULATED",
    "Predicted by gpulab.translate_trainer",
)  # in an output: not an observation of this machine
PREDICTORS = ("explain(", "SimulatedGpuReader(", "translate_trainer(", "flag_history_table(")  # in a cell's code
SKIP_MARK = "Skipped in fast mode"
# A cell that runs where GPUs exist says where the course's GPU runs executed it, and what that run did with it:
# "(ran on one H100, its output recorded: `evidence/<date>-<gpu>/`)" where the GPU edition's bundle holds what the cell
# printed, or "(ran on one H100, its test passed: `<test id>` in `evidence/<date>-<gpu>.json`)" where the run's record
# names the test that holds the claim as passed. A bare "(ran on one H100: `evidence/….json`)" says neither: a run
# that executed the chapter recorded pass or fail per test, not the cell's output. A cell that needs two GPUs says
# "(needs two GPUs; not yet run on two)"; a cell rewritten since says "(changed since the last GPU run; not yet run
# on one)" (a record names cells by position, not by version); a cell whose run recorded neither its output nor a test
# that holds the claim says "(no GPU run has recorded its output yet)".
GPU_LINK = re.compile(
    r"\]\((\d{2}_[a-z0-9_]+\.ipynb)#cell-id=([A-Za-z0-9_-]+)\) runs where GPUs exist"
    r"(?: \((?:ran on (\w+) [^:(),]+(?:"
    r"(?P<recorded>, its output recorded: `evidence/(?P<bundle>[\w.-]+)/`)"
    r"|(?P<tested>, its test passed: `(?P<test>[^`]+)` in `evidence/(?P<record>[\w.-]+\.json)`)"
    r"|: `evidence/(?P<bare>[\w.-]+\.json)`)"
    r"|(?P<not_yet>needs two GPUs; not yet run on two)"
    r"|(?P<changed>changed since the last GPU run; not yet run on one)"
    r"|(?P<unrecorded>no GPU run has recorded its output yet))\))?"
)
# Rows written before that rule, which say "ran on one H100" bare, by the chapter whose cell they link: each chapter's
# rewrite says which of the two its row means (or drops the claim of a run) and empties its entry.
FAILED_ON_H100 = "tests.placement.test_explain_on_gpus::test_explain_agrees_with_pytorch_on_this_machine_s_gpus"
PASSED_ON_H100 = "notebooks.01_cpu_gpu_transfer.ipynb::Cell 0"  # for the tests of the rule, below
KNOWN_BARE: dict[str, list[str]] = {}
COUNTS = {"one": 1, "two": 2, "four": 4, "eight": 8}
EVIDENCE = ROOT / "evidence"

# A *ran here* row's evidence is the claim's observable, something the cell would print differently had the claim
# failed: a number (a measured one, which moves from run to run, as a bound: {≤ 3}, {< 3}, {≥ 0.5}, {0.5–3}), an
# exception or warning class with its text ("TypeError: ..."), a device (cpu, meta, cuda, cuda:1), the result of a
# check (True / False), or a quote from the library's own docstring or source that the cell reads. A word the cell
# prints whatever happened ("% of one core", "'gloo'") is not evidence.
NUMBER = r"-?\d+(?:\.\d+)?"
BOUND = re.compile(rf"\{{(?:(≤|<|≥|>) ?({NUMBER})|({NUMBER}) ?– ?({NUMBER}))\}}")
OBSERVABLES = {
    "a number": re.compile(r"\d"),
    "an exception with its text": re.compile(r"\b[A-Z][A-Za-z]*(Error|Exception|Warning): \S"),
    "a device": re.compile(r"(?<![A-Za-z])(cpu|meta|cuda(:\d+)?)(?![A-Za-z])"),
    "the result of a check": re.compile(r"\b(True|False)\b"),
}
DOC_READERS = ("__doc__", "inspect.getdoc(", "inspect.getsource(", "inspect.signature(")


def evidence_pattern(evidence: str) -> tuple[re.Pattern, list[tuple[str, float, float | None]]]:
    """The evidence as a regular expression (its bounds become numbers to capture), and the bounds in order."""
    parts, bounds, at = [], [], 0
    for m in BOUND.finditer(evidence):
        parts += [re.escape(evidence[at : m.start()]), f"({NUMBER})"]
        bounds.append((m.group(1), float(m.group(2))) if m.group(1) else ("–", float(m.group(3)), float(m.group(4))))
        at = m.end()
    parts.append(re.escape(evidence[at:]))
    return re.compile("".join(parts)), bounds


def _within(value: float, bound: tuple) -> bool:
    op, a, *b = bound
    return {"≤": value <= a, "<": value < a, "≥": value >= a, ">": value > a}.get(op, b and a <= value <= b[0])


def find_evidence(evidence: str, text: str) -> tuple[bool, list[str]]:
    """Whether ``text`` holds the evidence with every bound met; else the numbers found where the bounds are."""
    pattern, bounds = evidence_pattern(evidence)
    outside = []
    for m in pattern.finditer(text):
        values = [float(v) for v in m.groups()]
        if all(_within(v, b) for v, b in zip(values, bounds)):
            return True, []
        outside.append(m.group(0))
    return False, outside


def observable_kinds(evidence: str) -> list[str]:
    """What in the evidence could only be printed if the claim held (empty: it would print either way)."""
    found = [k for k, p in OBSERVABLES.items() if p.search(evidence)]
    return found if "a number" in found or not BOUND.search(evidence) else ["a number", *found]


@dataclass
class Entry:
    number: str
    article: str  # the section it sits in
    claim: str
    verdict: str
    shown_in: str
    evidence: str
    cell: tuple[str, str] | None = None  # (notebook, cell id) of the first link in "shown in"
    status: str = ""
    links: list[tuple[str, str]] = field(default_factory=list)  # every cell the row links to


def _cells(row: str) -> list[str]:
    parts = re.split(r"(?<!\\)\|", row.strip().strip("|"))
    return [p.strip().replace("\\|", "|") for p in parts]


def parse_ledger(text: str) -> tuple[list[Entry], list[str]]:
    """The ledger's rows, and what is malformed about the page's layout."""
    entries, problems, article = [], [], None
    for n, line in enumerate(text.splitlines(), 1):
        if m := SECTION.match(line):
            article = m.group(1)
            continue
        if not re.match(r"^\| \d{3}-\d{2} ", line):
            continue
        cells = _cells(line)
        if len(cells) != 5:
            problems.append(f"line {n}: {len(cells)} columns, expected 5 (#, claim, verdict, shown in, evidence)")
            continue
        number, claim, verdict, shown_in, evidence = cells
        entry = Entry(number, article or "", claim, verdict, shown_in, evidence.strip().strip("`").strip())
        entry.links = [(nb, cell) for _, nb, cell in LINK.findall(shown_in)]
        first = LINK.search(shown_in)
        if first:
            entry.cell = (first.group(2), first.group(3))
            entry.status = next((s for s in STATUSES if shown_in[first.end() :].lstrip().startswith(s)), "")
        elif shown_in.startswith(STATUSES[-1]):
            entry.status = STATUSES[-1]
        entries.append(entry)
    return entries, problems


def _load(notebook: str, cache: dict) -> nbformat.NotebookNode | None:
    if notebook not in cache:
        path = NOTEBOOKS / notebook
        cache[notebook] = nbformat.read(path, as_version=4) if path.is_file() else None
    return cache[notebook]


def _find(notebook: str, cell_id: str, cache: dict):
    nb = _load(notebook, cache)
    return None if nb is None else next((c for c in nb.cells if c.get("id") == cell_id), None)


def output_text(cell) -> str:
    parts = []
    for out in cell.get("outputs", []):
        if out.output_type == "stream":
            parts.append(out.text)
        elif out.output_type == "error":
            parts.append(f"{out.ename}: {out.evalue}")
        else:
            parts.append(out.get("data", {}).get("text/plain", ""))
    return "\n".join(parts)


def _is_gpu_cell(cell) -> bool:
    return cell.cell_type == "code" and cell.source.lstrip().startswith("%%gpu")


def check_entry(e: Entry, cache: dict) -> list[str]:
    """What is wrong with one row, as sentences naming the row; empty when it holds."""
    where = f"{e.number}"
    problems = []
    if not e.number.startswith(e.article + "-"):
        problems.append(f"{where}: numbered for another article than its section ({e.article})")
    if not VERDICT.fullmatch(e.verdict):
        problems.append(
            f"{where}: verdict {e.verdict[:60]!r} is none of: holds, holds with a condition: …, "
            "outdated since PyTorch|Lightning X.Y: …, wrong: …"
        )
    if not e.status:
        problems.append(
            f"{where}: 'shown in' must start with a cell link followed by one of {STATUSES[:-1]}, "
            f"or say {STATUSES[-1]!r}"
        )
    for notebook, cell_id in e.links:
        if _load(notebook, cache) is None:
            problems.append(f"{where}: links to {notebook}, which is not in notebooks/")
        elif _find(notebook, cell_id, cache) is None:
            problems.append(f"{where}: {notebook} has no cell with id {cell_id}")
    if e.status == STATUSES[-1]:
        if e.links:
            problems.append(f"{where}: says no cell shows it, but links to one")
        return problems
    if e.cell is None or problems:
        return problems
    cell = _find(*e.cell, cache)
    if cell.cell_type != "code":
        return problems + [f"{where}: cell {e.cell[1]} of {e.cell[0]} is Markdown, not a cell that runs"]
    outputs, tags = output_text(cell), set(cell.metadata.get("tags", []))
    if not e.evidence or e.evidence == "—":
        return problems + [f"{where}: no evidence given"]
    if e.status in ("ran here", "predicted here"):
        if _is_gpu_cell(cell):
            problems.append(f"{where}: marked {e.status!r}, but {e.cell[1]} is a %%gpu cell that skips on a CPU")
        elif not cell.get("outputs"):
            problems.append(f"{where}: marked {e.status!r}, but {e.cell[1]} has no committed outputs")
        else:
            found, outside = find_evidence(e.evidence, outputs)
            if outside and not found:
                problems.append(
                    f"{where}: the outputs of {e.cell[1]} in {e.cell[0]} hold {outside[0]!r}, outside "
                    f"the bound of {e.evidence!r}"
                )
            elif not found:
                problems.append(f"{where}: the outputs of {e.cell[1]} in {e.cell[0]} do not contain {e.evidence!r}")
        if (
            e.status == "ran here"
            and not observable_kinds(e.evidence)
            and not any(r in cell.source for r in DOC_READERS)
        ):
            problems.append(
                f"{where}: its evidence {e.evidence!r} would print whether or not the claim held: give "
                f"the claim's observable ({', '.join(OBSERVABLES)}, or a bound on a measured number)"
            )
        # the paragraph of output that holds the evidence must not be one that says it is a prediction
        pattern = evidence_pattern(e.evidence)[0]
        paragraphs = [p for p in re.split(r"\n\s*\n", outputs) if pattern.search(p)]
        predicted = bool(paragraphs) and all(any(m in p for m in PREDICTION_MARKS) for p in paragraphs)
        if e.status == "ran here" and predicted:
            problems.append(
                f"{where}: {e.cell[1]} prints a prediction on a described machine: mark it "
                "'predicted here', not 'ran here'"
            )
        if e.status == "predicted here" and not (
            any(p in cell.source for p in PREDICTORS) or any(m in outputs for m in PREDICTION_MARKS)
        ):
            problems.append(
                f"{where}: marked 'predicted here', but {e.cell[1]} neither calls one of gpulab's "
                f"predictors ({', '.join(PREDICTORS)}) nor prints a prediction: mark it 'ran here'"
            )
    elif e.status == "runs where GPUs exist":
        if not (_is_gpu_cell(cell) and tags & {"gpu", "multigpu"}):
            problems.append(f"{where}: marked 'runs where GPUs exist', but {e.cell[1]} is not a gpu/multigpu cell")
        elif e.evidence not in cell.source:
            problems.append(f"{where}: the code of {e.cell[1]} in {e.cell[0]} does not contain {e.evidence!r}")
    elif e.status == "full run only":
        if SKIP_MARK not in outputs:
            problems.append(
                f"{where}: marked 'full run only', but {e.cell[1]}'s saved output does not say {SKIP_MARK!r}"
            )
        elif e.evidence not in cell.source:
            problems.append(f"{where}: the code of {e.cell[1]} in {e.cell[0]} does not contain {e.evidence!r}")
    return problems


def gpu_records() -> dict[str, dict]:
    """The newest evidence record of each GPU model in evidence/ (file name -> record)."""
    newest: dict[str, str] = {}
    for p in sorted(EVIDENCE.glob("*.json")) if EVIDENCE.is_dir() else ():
        m = re.match(r"^\d{4}-\d{2}-\d{2}-([a-z0-9-]+)\.json$", p.name)
        if m:
            newest[m.group(1)] = p.name
    return {name: json.loads((EVIDENCE / name).read_text()) for name in newest.values()}


def _recorded(bundle: str, notebook: str, cell_id: str) -> bool:
    """Whether the GPU edition's bundle ``evidence/<bundle>/`` holds ``notebook`` as it ran, with ``cell_id``'s
    output."""
    path = EVIDENCE / bundle / notebook
    if not path.is_file():
        return False
    cell = next((c for c in nbformat.read(path, as_version=4).cells if c.get("id") == cell_id), None)
    return cell is not None and bool(cell.get("outputs"))


def gpu_run_problems(e: Entry, cache: dict, records: dict[str, dict]) -> list[str]:
    """Each GPU cell of a row names the record of the run that executed it, when one did, and only such a run."""
    problems = []
    for m in GPU_LINK.finditer(e.shown_in):
        notebook, cell_id, count = m.group(1), m.group(2), m.group(3)
        not_yet, changed, unrecorded = m.group("not_yet"), m.group("changed"), m.group("unrecorded")
        cited = m.group("record") or m.group("bare") or (m.group("bundle") and f"{m.group('bundle')}.json")
        known = e.number in KNOWN_BARE.get(notebook.removesuffix(".ipynb"), [])
        if m.group("bare") and not known:
            problems.append(
                f"{e.number}: says 'ran on {count} …' without saying what that run did with {cell_id}: write "
                f"', its output recorded: `evidence/<bundle>/`' where the GPU edition's bundle holds the cell's "
                f"output, or ', its test passed: `<test id>` in `evidence/{m.group('bare')}`' where a passed test "
                "holds the claim"
            )
        elif known and not m.group("bare"):
            problems.append(f"{e.number}: no longer bare: take it out of KNOWN_BARE")
        if m.group("bundle") and not _recorded(m.group("bundle"), notebook, cell_id):
            problems.append(
                f"{e.number}: evidence/{m.group('bundle')}/ holds no recorded output of {cell_id} in {notebook}"
            )
        if m.group("test") and records.get(m.group("record"), {}).get("tests", {}).get(m.group("test")) != "passed":
            problems.append(f"{e.number}: {m.group('test')} did not pass in evidence/{m.group('record')}")
        cell = _find(notebook, cell_id, cache)
        if cell is None:
            continue
        need = 2 if "multigpu" in cell.metadata.get("tags", []) else 1
        ran = [
            n
            for n, r in records.items()
            if len(r["machine"]["gpus"]) >= need and any(t.startswith(f"notebooks.{notebook}::") for t in r["tests"])
        ]
        if cited:
            r = records.get(cited)
            if r is None:
                problems.append(f"{e.number}: cites evidence/{cited}, which is not the newest record of a GPU here")
            elif len(r["machine"]["gpus"]) < need:
                problems.append(
                    f"{e.number}: {cell_id} needs {need} GPUs, and the machine of {cited} had "
                    f"{len(r['machine']['gpus'])}: it cannot have run there"
                )
            elif COUNTS.get(count) != len(r["machine"]["gpus"]):
                problems.append(f"{e.number}: says it ran on {count} GPU(s); {cited} had {len(r['machine']['gpus'])}")
            elif not any(t.startswith(f"notebooks.{notebook}::") for t in r["tests"]):
                problems.append(f"{e.number}: {cited} did not run {notebook}")
        elif ran and not (changed or unrecorded):
            problems.append(
                f"{e.number}: {cell_id} ran on a GPU machine in evidence/{ran[-1]}: say so, and what ran: "
                f"'(ran on one …, its output recorded: `evidence/<bundle>/`)' or '(ran on one …, its test passed: "
                f"`<test id>` in `evidence/{ran[-1]}`)'"
            )
        elif records and need > 1 and not (not_yet or changed):
            problems.append(
                f"{e.number}: {cell_id} needs two GPUs and no run had them: say '(needs two GPUs; not yet run on two)'"
            )
    return problems


def check_ledger(text: str) -> list[str]:
    entries, problems = parse_ledger(text)
    cache: dict = {}
    numbers = [e.number for e in entries]
    problems += [f"{n}: numbered twice" for n in sorted({n for n in numbers if numbers.count(n) > 1})]
    for article in ARTICLES:
        if not any(e.article == article for e in entries):
            problems.append(f"article {article} has no entries")
    records = gpu_records()
    for e in entries:
        problems += check_entry(e, cache) + gpu_run_problems(e, cache, records)
    for notebook, cell_id in {(nb, cell) for _, nb, cell in LINK.findall(text)}:
        if (
            _load(notebook, cache) is not None
            and _find(notebook, cell_id, cache) is None
            and not any((notebook, cell_id) in e.links for e in entries)
        ):
            problems.append(f"a link on the page points to {notebook} cell {cell_id}, which does not exist")
    return problems


@pytest.fixture(scope="module")
def ledger() -> str:
    return LEDGER.read_text(encoding="utf-8")


def test_the_ledger_holds_against_the_committed_chapters(ledger):
    problems = check_ledger(ledger)
    assert not problems, "\n".join(problems)


def test_every_article_has_claims_and_every_verdict_kind_is_used(ledger):
    entries, problems = parse_ledger(ledger)
    assert not problems
    per_article = {a: sum(e.article == a for e in entries) for a in ARTICLES}
    assert all(n >= 5 for n in per_article.values()), per_article
    kinds = {e.verdict.split(":")[0].split(" (")[0].split(" since")[0] for e in entries}
    assert kinds == {"holds", "holds with a condition", "outdated", "wrong"}, kinds


def test_every_link_on_the_page_opens_a_cell_in_jupyterlab_and_in_the_handout(ledger):
    links = LINK.findall(ledger)
    assert len(links) >= 60
    cache: dict = {}
    missing = [f"{nb}#cell-id={cell}" for _, nb, cell in links if _find(nb, cell, cache) is None]
    assert not missing, missing
    # JupyterLab opens "nb.ipynb#cell-id=ID" at that cell; nbconvert's HTML gives each cell id="cell-id=ID"
    assert not re.search(r"\]\([^)]*\.ipynb#(?!cell-id=)", ledger), "link cells by id, not by heading"


def _row(ledger: str, number: str) -> str:
    return next(line for line in ledger.splitlines() if line.startswith(f"| {number} "))


@pytest.mark.parametrize(
    ("number", "edit", "expected"),
    [
        (
            "002-06",
            lambda r: r.replace("cell-id=2bf5c658", "cell-id=deadbeef"),
            "002-06: 01_cpu_gpu_transfer.ipynb has no cell with id deadbeef",
        ),
        (
            "002-06",
            lambda r: r.replace("'bool' object is not callable", "'int' object is not callable"),
            "002-06: the outputs of 2bf5c658 in 01_cpu_gpu_transfer.ipynb do not contain \"TypeError: 'int' object is "
            'not callable"',
        ),
        (
            "002-06",
            lambda r: r.replace("02_choosing_gpus", "09_nothing").replace("01_cpu_gpu_transfer", "09_nothing"),
            "002-06: links to 09_nothing.ipynb, which is not in notebooks/",
        ),
        (
            "002-05",
            lambda r: r.replace(") runs where GPUs exist", ") ran here", 1),
            "002-05: marked 'ran here', but d812900a is a %%gpu cell that skips on a CPU",
        ),
        (
            "002-06",
            lambda r: r.replace(") ran here", ") runs where GPUs exist"),
            "002-06: marked 'runs where GPUs exist', but 2bf5c658 is not a gpu/multigpu cell",
        ),
        (
            "002-05",
            lambda r: r.replace("`tensor = tensor.cuda()`", "`tensor.cuda(7)`"),
            "002-05: the code of d812900a in 01_cpu_gpu_transfer.ipynb does not contain 'tensor.cuda(7)'",
        ),
        (
            "000-11",
            lambda r: r.replace("predicted here", "ran here", 1),
            "000-11: 335ce22a prints a prediction on a described machine",
        ),
        (
            "002-06",
            lambda r: r.replace(") ran here", ") predicted here"),
            "002-06: marked 'predicted here', but 2bf5c658 neither calls one of gpulab's predictors",
        ),
        ("002-06", lambda r: r.replace("| wrong: ", "| mostly fine: "), "002-06: verdict 'mostly fine:"),
        ("004-13", lambda r: r.replace("outdated since PyTorch 1.9", "outdated since recently"), "004-13: verdict"),
        ("002-06", lambda r: r.replace(") ran here", ") seen somewhere"), "002-06: 'shown in' must start with"),
        (
            "001-16",
            lambda r: r.replace("cell-id=de34643a", "cell-id=9c5abdba"),
            "001-16: marked 'full run only', but 9c5abdba's saved output does not say 'Skipped in fast mode'",
        ),
        (
            "004-09",
            lambda r: r.replace(
                "| not shown by any cell yet, and no cell can:",
                "| [06](06_lightning.ipynb#cell-id=f8da2172) ran here, and no cell can:",
            ),
            "004-09: no evidence given",
        ),
        # evidence that the cell would print whether or not the claim held
        (
            "001-10",
            lambda r: r.replace("`of watched training = {≤ 3} % of one core`", "`% of one core`"),
            "001-10: its evidence '% of one core' would print whether or not the claim held",
        ),
        (
            "004-04",
            lambda r: r.replace("`LOCAL_RANK=1: backend gloo, device cpu`", "`backend gloo, device`"),
            "004-04: its evidence 'backend gloo, device' would print whether or not the claim held",
        ),
        (
            "002-06",
            lambda r: r.replace("`TypeError: 'bool' object is not callable`", "`object is not callable`"),
            "002-06: its evidence 'object is not callable' would print whether or not the claim held",
        ),
        # where the course's GPU run executed a GPU cell (one H100, 2026-11-26)
        (
            "002-12",
            lambda r: re.sub(r" \(ran on one H100, its test passed: [^)]*\)", "", r),
            "002-12: a82f826e ran on a GPU machine in evidence/2026-11-26-h100-80gb-hbm3.json: say so",
        ),
        (
            "000-11",
            lambda r: r.replace(
                "(needs two GPUs; not yet run on two)", "(ran on one H100: `evidence/2026-11-26-h100-80gb-hbm3.json`)"
            ),
            "000-11: 88fc538e needs 2 GPUs, and the machine of 2026-11-26-h100-80gb-hbm3.json had 1",
        ),
        (
            "000-11",
            lambda r: r.replace(" (needs two GPUs; not yet run on two)", ""),
            "000-11: 88fc538e needs two GPUs and no run had them",
        ),
        (
            "000-13",
            lambda r: r.replace(" (changed since the last GPU run; not yet run on one)", ""),
            "000-13: 456e378f ran on a GPU machine in evidence/2026-11-26-h100-80gb-hbm3.json: say so",
        ),
        ("002-12", lambda r: r.replace("ran on one H100", "ran on two H100"), "002-12: says it ran on two GPU(s)"),
        (
            "002-12",
            lambda r: r.replace("2026-11-26-h100", "2026-11-01-h100"),
            "002-12: cites evidence/2026-11-01-h100-80gb-hbm3.json, which is not the newest record",
        ),
        # "ran on one H100" says what that run did with the cell: its output recorded, or the claim's test passed
        (
            "000-01",
            lambda r: r.replace(
                "(changed since the last GPU run; not yet run on one)",
                "(ran on one H100: `evidence/2026-11-26-h100-80gb-hbm3.json`)",
            ),
            "000-01: says 'ran on one …' without saying what that run did with 500e1f51",
        ),
        (
            "000-01",
            lambda r: r.replace(
                "(changed since the last GPU run; not yet run on one)",
                f"(ran on one H100, its test passed: `{FAILED_ON_H100}` in `evidence/2026-11-26-h100-80gb-hbm3.json`)",
            ),
            f"000-01: {FAILED_ON_H100} did not pass in evidence/2026-11-26-h100-80gb-hbm3.json",
        ),
        (
            "000-01",
            lambda r: r.replace(
                "(changed since the last GPU run; not yet run on one)",
                "(ran on one H100, its output recorded: `evidence/2026-11-26-h100-80gb-hbm3/`)",
            ),
            "000-01: evidence/2026-11-26-h100-80gb-hbm3/ holds no recorded output of 500e1f51",
        ),
        (
            "002-05",
            lambda r: r.replace(
                "(no GPU run has recorded its output yet)",
                "(ran on one H100: `evidence/2026-11-26-h100-80gb-hbm3.json`)",
            ),
            "002-05: says 'ran on one …' without saying what that run did with d812900a",
        ),
        # a measured number outside its bound
        (
            "001-10",
            lambda r: r.replace("{≤ 3}", "{≤ 0.1}"),  # five readings a second never cost under 0.1 % of a core
            "001-10: the outputs of a928a6ce in 05_live_monitor.ipynb hold",
        ),
        (
            "001-10",
            lambda r: r.replace("{≤ 3}", "{2–5}"),
            "outside the bound of 'of watched training = {2–5} % of one core'",
        ),
    ],
)
def test_a_wrong_row_is_caught(ledger, number, edit, expected):
    row = _row(ledger, number)
    broken = ledger.replace(row, edit(row))
    assert broken != ledger, "the edit must change the row"
    problems = check_ledger(broken)
    assert any(expected in p for p in problems), "\n".join(problems) or "no problem found"


def test_an_article_without_entries_is_caught(ledger):
    without_004 = ledger.split("## 004 · ")[0]
    assert "article 004 has no entries" in check_ledger(without_004)


def test_a_row_with_a_missing_column_is_caught(ledger):
    row = _row(ledger, "003-01")
    broken = ledger.replace(row, row.rsplit("|", 2)[0] + "|")
    _, problems = parse_ledger(broken)
    assert any("4 columns, expected 5" in p for p in problems), problems


def test_a_cell_that_lost_its_outputs_is_caught(ledger, monkeypatch):
    cache: dict = {}
    nb = _load("01_cpu_gpu_transfer.ipynb", cache)
    cell = next(c for c in nb.cells if c.get("id") == "2bf5c658")
    cell.outputs = []
    entry = next(e for e in parse_ledger(ledger)[0] if e.number == "002-06")
    assert "002-06: marked 'ran here', but 2bf5c658 has no committed outputs" in check_entry(entry, cache)


@pytest.mark.parametrize(
    ("evidence", "text", "found"),
    [
        ("= {≤ 3} % of one core", "training = 1.04 % of one core", True),
        ("= {≤ 3} % of one core", "training = 3.50 % of one core", False),
        ("= {< 1} %", "= 1 %", False),
        ("accuracy {≥ 0.85}", "accuracy 0.9 then accuracy 0.5", True),  # one match within the bound is enough
        ("ratio {1.2–2} on {> 1} ranks", "ratio 1.5 on 2 ranks", True),
        ("ratio {1.2–2} on {> 1} ranks", "ratio 1.5 on 1 ranks", False),
        ("literal (with [regex] characters) 1.0", "a literal (with [regex] characters) 1.0 here", True),
    ],
)
def test_a_bound_matches_a_number_only_within_it(evidence, text, found):
    assert find_evidence(evidence, text)[0] is found


@pytest.mark.parametrize(
    ("evidence", "kinds"),
    [
        ("% of one core", []),
        ("'gloo'", []),
        ("= {≤ 3} % of one core", ["a number"]),
        ("TypeError: 'bool' object is not callable", ["an exception with its text"]),
        ("device cpu", ["a device"]),
        ("DeviceStatsMonitor.on_train_batch_end/cpu_percent", ["a device"]),
        ("shares memory: True", ["the result of a check"]),
    ],
)
def test_what_counts_as_an_observable(evidence, kinds):
    assert observable_kinds(evidence) == kinds


def test_a_row_that_says_which_test_passed_on_the_gpu_is_accepted(ledger):
    row = _row(ledger, "000-01")
    said = row.replace(
        "(changed since the last GPU run; not yet run on one)",
        f"(ran on one H100, its test passed: `{PASSED_ON_H100}` in `evidence/2026-11-26-h100-80gb-hbm3.json`)",
    )
    problems = [p for p in check_ledger(ledger.replace(row, said)) if p.startswith("000-01")]
    assert problems == []


def test_a_known_bare_row_that_says_what_ran_must_leave_the_list(ledger, monkeypatch):
    monkeypatch.setitem(KNOWN_BARE, "01_cpu_gpu_transfer", ["002-12"])
    assert any("002-12: no longer bare: take it out of KNOWN_BARE" in p for p in check_ledger(ledger))


def test_the_known_bare_rows_are_the_other_chapters_not_chapter_02():
    assert "02_choosing_gpus" not in KNOWN_BARE
