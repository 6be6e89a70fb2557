"""Handouts: a chapter run again into a copy (figures kept, widgets frozen, settings lines out), exported offline,
printed by Chromium, and its printed pages looked at; the two editions; the one-page cheat sheet and its facts."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import handouts  # noqa: E402
from handoutkit import cheatsheet, editions, export, printing, run, static  # noqa: E402
from tests import process_group  # noqa: E402
from tests.small_notebooks import write_notebook  # noqa: E402

CHROMIUM = printing.find_chromium()
needs_chromium = pytest.mark.skipif(CHROMIUM is None, reason="no Chromium installed (Debian: apt-get install chromium)")
needs_pdftoppm = pytest.mark.skipif(
    not __import__("shutil").which("pdftoppm"), reason="no pdftoppm (Debian: apt-get install poppler-utils)"
)
A4 = export.PAPERS["a4"]

CELLS = [
    ("markdown", "# 99 · A small chapter\n\nSquares: $x^2 + y^2$.\n#9158, a wrapped line that starts with a hash.", []),
    (
        "code",
        '%load_ext gpulab\nimport gpulab\nprint("fast mode:", gpulab.fast_mode(), "| sizes ok")\nprint(\'kept line\')',
        [],
    ),
    (
        "code",
        "import ipywidgets as w\nbox = w.VBox([w.Checkbox(value=True, description='GPU 1'), "
        "w.FloatProgress(value=0.5, max=1.0, bar_style='warning'), w.HTML('<p>cuda:0 → physical 1</p>'), "
        "w.Button(description='Apply', button_style='primary')])\nbox",
        [],
    ),
    ("code", "w.Image(value=b'')", []),
    (
        "code",
        "import time\nwith gpulab.monitor('a short wait') as mon:\n    for _ in range(3):\n"
        "        time.sleep(0.1)\n        mon.step(samples=8)",
        [],
    ),
    ("code", "import matplotlib.pyplot as plt\nplt.plot([1, 2, 3], [1, 4, 9]);", []),
    ("code", "answer = 42  # the worked answer\nprint('SOLUTION', answer)", ["solution"]),
    ("code", "raise ValueError('on purpose')", ["raises-exception"]),
    ("code", "print('x' * 150)\nprint('a  table  row ' * 6)", []),
]


def small_chapter(folder: Path, cells=CELLS) -> Path:
    return write_notebook(folder / "99_small.ipynb", cells)


@pytest.fixture(scope="module")
def executed(tmp_path_factory):
    path = small_chapter(tmp_path_factory.mktemp("chapter"))
    before = path.read_text()
    nb = run.execute(path, fast=True)
    assert path.read_text() == before, "the committed notebook must not change"
    return nb


@pytest.fixture(scope="module")
def frozen(executed):
    nb = nbformat.from_dict(executed)
    assert static.freeze_widgets(nb) == 1  # the VBox; the empty Image widget has no picture to show
    assert static.drop_settings_lines(nb) == 1
    return nb


@pytest.fixture(scope="module")
def pages(frozen):
    return {
        e: export.to_html(editions.edition_of(frozen, e), title="99 · small", made="made here", edition=e, paper=A4)
        for e in ("student", "instructor")
    }


def test_the_run_keeps_figures_and_widget_state(executed):
    outputs = [o for c in executed.cells for o in c.get("outputs", [])]
    assert sum("image/png" in o.get("data", {}) for o in outputs) == 2, "the monitor's figure and the plot"
    assert "widgets" in executed.metadata and any("widget-view" in k for o in outputs for k in o.get("data", {}))


def test_widgets_are_drawn_in_their_final_state(pages):
    page = pages["student"]
    assert "☑ GPU 1" in page and "cuda:0 → physical 1" in page and "w-button w-primary" in page
    assert "width:50.0%;background:#f0ad4e" in page  # the progress bar at its value, in its colour
    assert "Image(value=" not in page and "VBox(children" not in page and "widget-view" not in page


def test_the_page_loads_nothing_from_the_network(pages):
    page = pages["student"]
    assert "<script" not in page
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", page), "every style, image and font must be local"
    assert "<math" in page and "$x^2" not in page, "math is MathML, drawn without MathJax"


def test_the_monitor_leaves_its_figure_and_summary(pages):
    page = pages["student"]
    assert page.count("data:image/png;base64,") == 2
    assert "Monitor summary: a short wait" in page


def test_settings_lines_are_left_out_and_the_rest_kept(pages):
    page = pages["student"]
    assert "fast mode" not in page and "fast_mode" not in page
    assert "kept line" in page and "made here" in page


def test_a_hash_at_a_line_start_is_text_as_in_jupyterlab(pages):
    assert "<h1" in pages["student"] and "9158, a wrapped line" in pages["student"]
    assert not re.search(r"<h1[^>]*>\s*9158", pages["student"])


def test_student_edition_leaves_out_solutions(pages, frozen):
    assert "SOLUTION" not in pages["student"] and "the worked answer" not in pages["student"]
    assert "SOLUTION" in pages["instructor"] and "celltag_solution" in pages["instructor"]
    assert editions.solution_cells(frozen) == [6]
    assert "on purpose" in pages["student"], "cells that fail on purpose stay in both editions"


def test_the_header_says_how_the_run_was_made(frozen):
    import datetime as dt

    assert handouts.chapter_title(frozen) == "99 · A small chapter"
    line = handouts.made_line("a 2-core CPU, no GPU", True, dt.date(2026, 1, 2))
    assert line.startswith("Printed from a run on 2026-01-02 on a 2-core CPU, no GPU; small data sizes")
    assert "fast mode" in line and "GPU cell" in line
    assert "full data sizes" in handouts.made_line("x", False, dt.date(2026, 1, 2))


def test_unknown_edition_is_refused(frozen):
    with pytest.raises(ValueError, match="unknown edition 'teacher'.*'student'.*'instructor'"):
        editions.edition_of(frozen, "teacher")


def test_code_is_sized_to_the_page():
    assert export.font_pt_for(60, A4) == export.MAX_PT
    assert export.font_pt_for(118, A4) < export.MAX_PT
    assert export.font_pt_for(400, A4) == export.MIN_PT
    assert export.chars_at(export.MIN_PT, A4) >= 120, "the house line length (120) fits at the smallest size"
    prose, table = "word " * 40, "a  b  " * 20
    assert export._longest(prose, A4) == 0, "a sentence in an output wraps instead of shrinking the block"
    assert export._longest(table, A4) == len(table.rstrip())


def test_a_chapter_that_fails_unexpectedly_makes_no_handout(tmp_path):
    path = small_chapter(tmp_path, [("code", "1 / 0", [])])
    with pytest.raises(run.ChapterFailed, match="99_small.ipynb raised in a cell not tagged raises-exception"):
        run.execute(path, fast=True)


def test_a_missing_notebook_is_reported():
    out = process_group.run(
        [sys.executable, str(ROOT / "tools" / "handouts.py"), "notebooks/99_nope.ipynb"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
    )
    assert out.returncode == 2 and "no such notebook: notebooks/99_nope.ipynb" in out.stderr


@pytest.mark.browser
@needs_chromium
@needs_pdftoppm
@pytest.mark.parametrize("paper", ["a4", "letter"])
def test_printed_pages_fit_the_paper(pages, tmp_path, paper):
    chosen = export.PAPERS[paper]
    html = tmp_path / "small.html"
    html.write_text(pages["student"].replace("size: A4", f"size: {chosen.css_size}"), encoding="utf-8")
    pdf = printing.print_pdf(html, tmp_path / "small.pdf", CHROMIUM)
    check = printing.check_pages(pdf, (chosen.width_mm, chosen.height_mm), chosen.margin_mm)
    assert check.problems == [], str(check)
    assert 1 <= check.pages <= 3, str(check)


def _print(tmp_path: Path, body: str, paper: export.Paper = A4) -> printing.PrintCheck:
    html = tmp_path / "page.html"
    html.write_text(
        f"<html><head><style>@page {{ size: {paper.css_size}; margin: 12mm; }}</style></head><body>{body}</body></html>"
    )
    pdf = printing.print_pdf(html, tmp_path / "page.pdf", CHROMIUM)
    return printing.check_pages(pdf, (paper.width_mm, paper.height_mm), 12)


@pytest.mark.browser
@needs_chromium
@needs_pdftoppm
def test_the_page_check_sees_clipped_code_and_half_empty_pages(tmp_path):
    clipped = _print(tmp_path, f"<pre style='white-space:pre;font-size:9pt'>{'x = 1  ' * 60}</pre>")
    assert any("is cut off" in p for p in clipped.problems), str(clipped)
    gap = _print(tmp_path, "<p>one line</p><p style='break-before:page'>the next page</p>")
    assert any(re.match(r"page 1: only \d+% full", p) for p in gap.problems), str(gap)
    letter = _print(tmp_path, "<p>text</p>", export.PAPERS["letter"])
    assert letter.problems == [] and letter.pages == 1
    wrong_size = printing.check_pages(tmp_path / "page.pdf", (210, 297), 12)
    assert any("not 210×297" in p for p in wrong_size.problems), str(wrong_size)


@pytest.mark.browser
@needs_chromium
@needs_pdftoppm
@pytest.mark.parametrize("paper", ["a4", "letter"])
def test_the_cheat_sheet_fits_one_page(tmp_path, paper):
    chosen = export.PAPERS[paper]
    html = cheatsheet.write_html(tmp_path / "cheatsheet.html", chosen)
    check = printing.check_pages(
        printing.print_pdf(html, tmp_path / "cheatsheet.pdf", CHROMIUM),
        (chosen.width_mm, chosen.height_mm),
        *cheatsheet.MARGINS_MM[:1],
        top_mm=cheatsheet.MARGINS_MM[1],
        bottom_mm=cheatsheet.MARGINS_MM[2],
    )
    assert check.pages == 1 and check.problems == [], str(check)
    assert check.fills[0] > 0.6, "one page, and well used"


def test_every_fact_on_the_cheat_sheet_holds_on_the_installed_versions():
    results = cheatsheet.run_checks(sys.executable)
    wrong = [f"{c.shown!r}: missing {missing} in\n{out[-1500:]}" for c, missing, out in results if missing]
    assert not wrong, "\n\n".join(wrong)
    page = cheatsheet.render()
    for _, fix in cheatsheet.ERRORS:
        assert fix in page
    assert len(cheatsheet.ERRORS) >= 8 and len(cheatsheet.SECTIONS) == 6


def test_a_cheat_sheet_check_can_fail():
    ((check, missing, out),) = cheatsheet.run_checks(
        sys.executable, [cheatsheet.Check("shown … absent", "print('shown')")]
    )
    assert missing == ["absent"] and "shown" in out


@pytest.mark.slow  # chapter 02 runs once more here (nbval, the site and the browser are the others)
@pytest.mark.browser
@needs_chromium
@needs_pdftoppm
def test_a_real_chapter_builds_and_its_pages_pass(tmp_path):
    """Chapter 02 has the picker (a widget), long outputs and many code cells; handouts.py checks every page and
    exits 3 on a problem."""
    out = process_group.run(
        [
            sys.executable,
            str(ROOT / "tools" / "handouts.py"),
            "notebooks/02_choosing_gpus.ipynb",
            "--edition",
            "student",
            "--no-cheatsheet",
            "--out",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=600,
    )
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-3000:]
    page = (tmp_path / "student" / "02_choosing_gpus.html").read_text(encoding="utf-8")
    # the pickers drawn from their saved widget state: a ticked row, and the by-hand picker's mapping (quoted value)
    assert 'class="gpulab-widget"' in page and "☑ GPU" in page and "CUDA_VISIBLE_DEVICES='5,1'" in page
    assert "fast mode: True" not in page and "fast_mode()" not in page, "the settings line is left out"
    assert (tmp_path / "student" / "02_choosing_gpus.pdf").stat().st_size > 50_000


def test_chapter_cells_carry_the_ids_the_ledger_links_to():
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# 99"), nbformat.v4.new_code_cell("1")])
    page = export.to_html(nb, title="99", made="made here", edition="student", paper=A4)
    assert f'id="cell-id={nb.cells[1].id}"' in page


@pytest.fixture(scope="module")
def ledger_page():
    nb, title = export.markdown_page(handouts.LEDGER.read_text(encoding="utf-8"))
    assert title.startswith("Claims ledger")
    return export.to_html(nb, title=title, made="made here", edition="student", paper=A4)


def test_the_ledger_page_links_to_the_chapters_handouts(ledger_page):
    assert "02_choosing_gpus.html#cell-id=f44774f1" in ledger_page
    assert ".ipynb#cell-id=" not in ledger_page
    assert ledger_page.count("<tr>") > 50 and "<h2" in ledger_page
    assert "<script" not in ledger_page and not re.search(r"""(src|href)=["']?(https?:)?//""", ledger_page)


def test_the_handout_build_writes_the_ledger_beside_the_chapters(tmp_path):
    chapter = small_chapter(tmp_path, [("markdown", "# 99 · tiny", []), ("code", "print('ran')", [])])
    code = handouts.main(
        [
            str(chapter),
            "--no-pdf",
            "--no-cheatsheet",
            "--size",
            "fast",
            "--edition",
            "student",
            "--out",
            str(tmp_path / "out"),
            "--cache",
            str(tmp_path / "runs"),  # not the checkout's build/executed: a test chapter is no chapter of the course
        ]
    )
    assert code == 0
    page = (tmp_path / "out" / "student" / "claims_ledger.html").read_text(encoding="utf-8")
    assert "04_ddp.html#cell-id=" in page and (tmp_path / "out" / "student" / "99_small.html").is_file()
    handouts.main(
        [
            str(chapter),
            "--no-pdf",
            "--no-cheatsheet",
            "--no-ledger",
            "--size",
            "fast",
            "--edition",
            "student",
            "--out",
            str(tmp_path / "without"),
            "--cache",
            str(tmp_path / "runs"),
        ]
    )
    assert not (tmp_path / "without" / "student" / "claims_ledger.html").exists()


@pytest.mark.browser
@needs_chromium
@needs_pdftoppm
def test_the_printed_ledger_passes_the_page_check(ledger_page, tmp_path):
    html = tmp_path / "claims_ledger.html"
    html.write_text(ledger_page, encoding="utf-8")
    check = printing.check_pages(
        printing.print_pdf(html, tmp_path / "claims_ledger.pdf", CHROMIUM), (A4.width_mm, A4.height_mm), A4.margin_mm
    )
    assert check.problems == [], str(check)


def test_a_chapters_run_prints_no_kernel_transport_warning(tmp_path):
    # make site and make handouts printed ipykernel's "Kernel is running over TCP without encryption" once per chapter
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("print(6 * 7)")]), tmp_path / "t.ipynb")
    code = (
        f"import sys; sys.path[:0] = [{str(ROOT / 'tools')!r}, {str(ROOT)!r}]\n"
        "from pathlib import Path\nfrom handoutkit import run\n"
        f"print(run.execute(Path({str(tmp_path / 't.ipynb')!r}), fast=True).cells[0].outputs[0]['text'])"
    )
    done = process_group.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and done.stdout.strip() == "42", done.stderr[-2000:]
    assert "without encryption" not in done.stderr
