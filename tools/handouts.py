"""Workshop handouts: every chapter run again, with its figures, as HTML and PDF; and a one-page cheat sheet.

    .venv/bin/python tools/handouts.py [notebooks/NN_x.ipynb ...] [--paper a4|letter] [--edition student|instructor]
                                       [--size auto|fast|full] [--no-pdf] [--no-ledger] [--out handouts]
                                       [--gpu-edition] [--cache build/executed | --no-cache]
                                       (or: make handouts, make handouts GPU_EDITION=1)

Each chapter is executed in a temporary copy (fast sizes on a machine without a GPU, full sizes where NVML sees GPUs;
``--size`` decides otherwise; the run is kept in ``build/executed/`` for the website, ``make site``, to reuse), so the
handout shows the figures the room saw while the committed notebooks stay image-free. Widgets are drawn in their final
state; the maintainers' settings lines are left out and a line at the top says how the run was made. Two editions:
``student/`` (cells tagged ``solution`` left out) and ``instructor/``. HTML is self-contained and offline; Chromium
prints the PDF (A4 unless ``--paper letter``) and every printed page is checked (``handoutkit.printing``). The claims
ledger (``notebooks/claims_ledger.md``) is printed beside the chapters, its links to chapter cells pointing at their
handouts. Writes into the ignored ``handouts/`` folder.
``--gpu-edition``: for a room with no GPUs, each GPU cell that skipped shows the output its code printed in the newest
recorded GPU run (``evidence/<date>-<gpu>/``, ``make test-gpu``), labelled "recorded on <GPU>, torch <version>,
<date>; not run here" (``handoutkit.editions.recorded_edition``).
"""

from __future__ import annotations

import argparse
import datetime as dt
import importlib.metadata
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path[:0] = [str(HERE), str(ROOT)]

from handoutkit import cheatsheet, editions, export, printing, run, static  # noqa: E402

OUT = ROOT / "handouts"
LEDGER = ROOT / "notebooks" / "claims_ledger.md"
find_chromium = printing.find_chromium


def _version(dist: str) -> str:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def machine_line() -> tuple[str, bool]:
    """How this machine will run the chapters, in words, and whether it has GPUs (NVML; never starts CUDA)."""
    from gpulab.machine.inventory import devices
    from gpulab.machine.nvml import default_reader

    reader = default_reader()
    inv = devices(reader, processes=False)
    real = inv.gpus if not getattr(reader, "simulated", False) else ()
    gpus = ", ".join(f"GPU {g.physical_index} {g.name}" for g in real) if real else "no GPU"
    return (
        f"{inv.host.cpu_model} ({inv.host.usable_cores} usable cores), {gpus}; "
        f"PyTorch {_version('torch')}, Lightning {_version('lightning')}"
    ), bool(real)


def made_line(ran_on: str, fast: bool, when: dt.date, recorded: bool | None = False) -> str:
    """Where and how the pages were run; ``recorded``: whether GPU cells show recordings (None: say nothing of them,
    for a caller that counts what they show, as the site does)."""
    sizes = (
        "small data sizes and few epochs (fast mode), so each chapter runs in seconds: numbers and curves are "
        "smaller than in the full lesson"
        if fast
        else "the lesson's full data sizes"
    )
    gpu = (
        "GPU cells that could not run here show what a recorded GPU run printed, labelled with that GPU and date."
        if recorded
        else "Cells marked “GPU cell” say on this page why they skipped where there is no GPU."
    )
    if recorded is None:
        return f"Printed from a run on {when:%Y-%m-%d} on {ran_on}; {sizes}."
    return f"Printed from a run on {when:%Y-%m-%d} on {ran_on}; {sizes}. {gpu}"


def chapter_title(nb) -> str:
    for cell in nb.cells:
        if cell.cell_type == "markdown" and cell.source.lstrip().startswith("# "):
            return cell.source.lstrip()[2:].splitlines()[0].strip()
    return ""


def missing_font_warning(notebooks: list[Path]) -> str | None:
    """Chinese text (the chapters cite their source articles) prints as empty boxes where no font covers it."""
    import re
    import shutil
    import subprocess

    if not shutil.which("fc-list") or not any(
        re.search("[\u4e00-\u9fff]", n.read_text(encoding="utf-8")) for n in notebooks
    ):
        return None
    if subprocess.run(["fc-list", ":lang=zh"], capture_output=True, text=True).stdout.strip():
        return None
    return (
        "The chapters quote Chinese titles, and no installed font has Chinese characters: they will print as "
        "boxes. Install one (Debian/Ubuntu: apt-get install fonts-wqy-microhei or fonts-noto-cjk)."
    )


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="handouts.py", description=__doc__.split("\n\n")[0])
    p.add_argument("notebooks", nargs="*", type=Path, help="chapters to print (default: notebooks/*.ipynb)")
    p.add_argument("--paper", choices=sorted(export.PAPERS), default="a4")
    p.add_argument(
        "--edition",
        choices=[e.value for e in editions.Edition],
        action="append",
        help="student and/or instructor (default: both)",
    )
    p.add_argument(
        "--size",
        choices=["auto", "fast", "full"],
        default="auto",
        help="auto: full sizes where GPUs are present, fast sizes elsewhere",
    )
    p.add_argument("--no-pdf", action="store_true", help="HTML only")
    p.add_argument("--no-cheatsheet", action="store_true")
    p.add_argument("--no-ledger", action="store_true", help="leave out the claims ledger page")
    p.add_argument("--out", type=Path, default=OUT)
    p.add_argument(
        "--cache",
        type=Path,
        default=run.CACHE,
        help="where each chapter's run is kept for the website to reuse (default: build/executed)",
    )
    p.add_argument("--no-cache", dest="cache", action="store_const", const=None, help="run every chapter afresh")
    p.add_argument(
        "--gpu-edition",
        action="store_true",
        help="GPU cells that skip here show their recorded GPU output, labelled (evidence/<date>-<gpu>/)",
    )
    return p.parse_args(argv)


def main(argv: list[str]) -> int:
    from tqdm import tqdm

    args = parse_args(argv)
    notebooks = args.notebooks or sorted((ROOT / "notebooks").glob("[0-9]*.ipynb"))
    missing = [str(n) for n in notebooks if not n.is_file()]
    if missing:
        print(f"handouts: no such notebook: {', '.join(missing)}", file=sys.stderr)
        return 2
    paper = export.PAPERS[args.paper]
    chosen = [editions.Edition(e) for e in (args.edition or ["student", "instructor"])]
    chromium = None if args.no_pdf else find_chromium()
    machine, has_gpus = machine_line()
    if chromium and (warning := missing_font_warning(notebooks)):
        print(f"warning: {warning}", file=sys.stderr)
    fast = args.size == "fast" or (args.size == "auto" and not has_gpus)
    made = made_line(machine, fast, dt.date.today(), recorded=args.gpu_edition)
    started, written = time.perf_counter(), []
    import nbformat

    cells = sum(run.code_cells(nbformat.read(n, as_version=4)) for n in notebooks)
    pages = (len(notebooks) + (not args.no_ledger and LEDGER.is_file())) * len(chosen) + (not args.no_cheatsheet)
    # Chromium prints one handout while the next chapter runs: one worker, so printing never competes with itself.
    with (
        tqdm(
            total=cells + pages * (2 if chromium else 1),
            unit="step",
            dynamic_ncols=True,
            bar_format="{desc:<28} {bar} {n_fmt}/{total_fmt} [{elapsed}<{remaining}]",
        ) as bar,
        ThreadPoolExecutor(1, thread_name_prefix="handout-print") as printer,
    ):
        printing_jobs = []

        def page_written(html: Path, one_page: bool = False) -> None:
            written.append(html)
            bar.update(1)
            if chromium:
                job = printer.submit(_print_and_check, html, chromium, paper, written, one_page)
                job.add_done_callback(lambda _: bar.update(1))
                printing_jobs.append(job)

        for path in notebooks:
            bar.set_description(f"{path.stem}: running")
            try:
                nb = run.executed(path, fast=fast, cache=args.cache, on_cell=lambda: bar.update(1))
            except run.ChapterFailed as exc:
                tqdm.write(str(exc), file=sys.stderr)
                return 1
            static.freeze_widgets(nb)
            static.drop_settings_lines(nb)
            if args.gpu_edition:
                nb, _ = editions.recorded_edition(nb, path.name)
            for edition in chosen:
                folder = args.out / edition.value
                folder.mkdir(parents=True, exist_ok=True)
                html = folder / f"{path.stem}.html"
                html.write_text(
                    export.to_html(
                        editions.edition_of(nb, edition),
                        title=chapter_title(nb) or path.stem,
                        made=made,
                        edition=edition.value,
                        paper=paper,
                    ),
                    encoding="utf-8",
                )
                page_written(html)
        if not args.no_ledger and LEDGER.is_file():
            ledger, title = export.markdown_page(LEDGER.read_text(encoding="utf-8"))
            for edition in chosen:
                html = args.out / edition.value / "claims_ledger.html"
                html.parent.mkdir(parents=True, exist_ok=True)
                html.write_text(
                    export.to_html(ledger, title=title, made=made, edition=edition.value, paper=paper), encoding="utf-8"
                )
                page_written(html)
        if not args.no_cheatsheet:
            page_written(cheatsheet.write_html(args.out / "cheatsheet.html", paper), one_page=True)
        bar.set_description("printing")
        problems = [p for job in printing_jobs for p in job.result()]
    for f in sorted(written):
        print(f.relative_to(args.out.parent) if f.is_relative_to(args.out.parent) else f)
    print(
        f"{len(written)} file(s) in {args.out} in {time.perf_counter() - started:.0f} s "
        f"({'fast' if fast else 'full'} sizes, {paper.name})."
    )
    if not chromium and not args.no_pdf:
        print(
            "No Chromium found, so no PDFs: install one (Debian/Ubuntu: `sudo apt-get install chromium`), set "
            "GPULAB_CHROMIUM to its path, or print the HTML files from any browser."
        )
    for problem in problems:
        print(f"problem: {problem}", file=sys.stderr)
    return 3 if problems else 0


def _print_and_check(
    html: Path, chromium: str, paper: export.Paper, written: list[Path], one_page: bool = False
) -> list[str]:
    """Print ``html`` to PDF beside it and check the pages; return the problems found, one sentence each."""
    try:
        pdf = printing.print_pdf(html, html.with_suffix(".pdf"), chromium)
        written.append(pdf)
        margins = cheatsheet.MARGINS_MM if one_page else (paper.margin_mm, 12.0, 14.0)
        check = printing.check_pages(
            pdf, (paper.width_mm, paper.height_mm), margins[0], top_mm=margins[1], bottom_mm=margins[2]
        )
    except printing.PrintFailed as exc:
        return [str(exc)]
    found = [f"{pdf.name}: {p}" for p in check.problems]
    if one_page and check.pages != 1:
        found.append(f"{pdf.name}: {check.pages} pages, but the cheat sheet must fit on one")
    return found


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
