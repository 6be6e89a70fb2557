"""No text cell of a chapter states the outcome of a measurement: which setup was faster, by how much, or where a line
crosses. The cell that measures prints that as its verdict, and the text says what to read in it, so that the next run
cannot make the text false (TEACHING.md, "Every number and verdict is the run's own").

How a sentence is judged (markdown cells only; code spans, code blocks and link targets removed first):

1. it compares speed or time: a comparative or superlative (*faster*, *fastest*, *slower*, *quicker*, *beats*,
   *outperforms*, *pays off*, *took longer*, *crosses*, *crossover at*), except where it names a timing method
   (*keeps its fastest step*, *the fastest of 8*) or points at what a verdict names (*the last line names the
   fastest*). *Wins* is left out: in these chapters it is as often a rule of precedence ("the last assignment wins");
2. it reports a run: a word that says something was measured or found (*finds*, *found*, *measured*, *ran*, *timed*,
   *took*, *came out*, *was*, *were*, *shows*, *the table*, *the sweep*, *this run*, a chapter named as the finder);
3. and it does not hold the outcome open: no word that makes it a question, a condition, a rule to test, or a
   prediction (*whether*, *which*, *if*, *where*, *when*, *should*, *would*, *could*, *can*, *may*, *might*, *predict*,
   *expect*, *not measured*, *until*, *unless*).

A sentence with all three states a measured outcome as fact, and fails. The third list is the allow-list; it is kept
to words that leave the outcome to the run by their grammar, so that a sentence naming no result ("the last line says
whether 2 ranks were faster") passes, and one that names it ("the run found 2 ranks faster") does not.
"""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
CHAPTERS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))

SPEED = re.compile(
    r"\b(faster|fastest|slower|slowest|quicker|quickest|beats?|beating|outperform\w*|pays? off|"
    r"took longer|crosses|crossed|crossover at)\b",
    re.IGNORECASE,
)
REPORT = re.compile(
    r"\b(finds|found|measured|ran|timed|took|came out|was|were|shows|showed|the table|the sweep|this run|"
    r"chapter \d\d (finds|found|shows|measured))\b",
    re.IGNORECASE,
)
OPEN = re.compile(
    r"\b(whether|which|if|where|when|should|would|could|can|may|might|predict\w*|expect\w*|not measured|until|"
    r"unless)\b",
    re.IGNORECASE,
)


# a superlative that names how a time is taken (the minimum of repeats), or a verdict that names the winner, compares
# nothing itself: removed before the search for a comparison
METHOD = re.compile(
    r"\b((keeps?|its|the|each) fastest (step|steps|of|time|round|run)|names? the (fast|slow)(er|est))\b", re.I
)


def _prose(markdown: str) -> str:
    text = re.sub(r"```.*?```", " ", markdown, flags=re.DOTALL)
    text = re.sub(r"`[^`]*`", "CODE", text)
    text = re.sub(r"\]\([^)]*\)", "]", text)
    return " ".join(text.split())


def _sentences(markdown: str) -> list[str]:
    return [s for s in re.split(r"(?<=[.!?:;])\s+(?=[A-Z*(\[])|\s+-\s+|\s+\*\s+", _prose(markdown)) if s]


def states_a_measured_outcome(sentence: str) -> bool:
    """True when ``sentence`` compares speed or time, reports a run, and leaves neither open (the module's rule)."""
    compared = METHOD.sub(" ", sentence)
    return bool(SPEED.search(compared) and REPORT.search(sentence) and not OPEN.search(sentence))


def measured_outcomes(nb: nbformat.NotebookNode) -> list[str]:
    """Each sentence of ``nb``'s text cells that states a measured outcome, with its cell id."""
    return [
        f"{cell.get('id')}: {sentence}"
        for cell in nb.cells
        if cell.cell_type == "markdown"
        for sentence in _sentences(cell.source)
        if states_a_measured_outcome(sentence)
    ]


@pytest.mark.parametrize("path", CHAPTERS, ids=[p.stem for p in CHAPTERS])
def test_no_text_cell_states_a_measured_outcome(path):
    found = measured_outcomes(nbformat.read(path, as_version=4))
    assert found == [], "say what to read in the measuring cell's verdict instead:\n" + "\n".join(found)


# Chapter 01's sentence as it was (it restated chapter 07's result, which the next run of 07 contradicted)
ITEM_2 = (
    "**Threads or ranks?** Chapter 07 finds one process with one thread fastest for its small DDP step, even on an "
    "idle machine. Both hold: a second thread pays only when one operation is large enough to amortise handing out its "
    "work, and a core is free to run it (the lines under the table name the sizes where it did not)."
)

PLANTED = [
    ("04_ddp.ipynb", "7769b3b1", "In this run 2 ranks were faster at batch 128 than at batch 32."),
    ("07_scaling.ipynb", "835eadc7", "The sweep shows that 2 ranks beat 1 from batch 64 on."),
    ("05_live_monitor.ipynb", "3ebe4e4e", "Watched training took longer than unwatched training, by 10 %."),
    ("03_dataparallel.ipynb", "2d101735", "On the CPU, one device was faster than DataParallel."),
    ("02_choosing_gpus.ipynb", "cb52b1a3", "The table measured the 2-GPU run as the fastest."),
]


def test_chapter_01s_old_sentence_fails():
    found = [s for s in _sentences(ITEM_2) if states_a_measured_outcome(s)]
    assert len(found) == 1 and "finds one process with one thread fastest" in found[0]


@pytest.mark.parametrize("chapter, cell_id, sentence", PLANTED, ids=[p[0][:2] for p in PLANTED])
def test_a_planted_outcome_in_a_chapter_fails_it(chapter, cell_id, sentence):
    nb = nbformat.read(ROOT / "notebooks" / chapter, as_version=4)
    cell = next(c for c in nb.cells if c.get("id") == cell_id)
    cell.source += "\n\n" + sentence
    found = measured_outcomes(nb)
    assert len(found) == 1 and sentence.split()[1] in found[0], found


@pytest.mark.parametrize(
    "sentence",
    [
        "The last line says whether 2 ranks were faster in this run.",
        "Where it beats 2 ranks, that is threads against ranks on shared cores.",
        "We predict the CPU is faster there, and the GPU above some size.",
        "Two threads split each matmul in halves that meet at a barrier.",
        "The table measured each point twice.",
    ],
)
def test_a_sentence_that_leaves_the_outcome_to_the_run_passes(sentence):
    assert not states_a_measured_outcome(sentence)
