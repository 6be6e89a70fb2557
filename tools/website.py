"""The course as a static website: every chapter with its figures and its GPU outputs, readable without installing.

    .venv/bin/python tools/website.py [notebooks/NN_x.ipynb ...] [--out _site] [--size auto|fast|full]
                                      [--repo-url URL] [--pages-branch gh-pages] [--no-cache] [--once]
                                      (or: make site)

Sphinx with myst-nb and sphinx-book-theme (Jupyter Book 1's engine) builds the site from the package index alone:
nothing is downloaded at build time and no page loads anything from elsewhere (``tests/test_site.py`` checks both).
Each chapter's run is the handouts' (``handoutkit.run.executed``: ``make handouts`` then ``make site`` runs every
chapter once), shown as the GPU edition: a GPU cell that skipped here shows what a recorded GPU run printed, labelled,
or the one line saying none exists yet. Pages: the chapters (those named, else every ``notebooks/NN_*.ipynb``), the
workshop guide, ``docs/*.md``, the claims ledger, a home page (``sitekit.pages``). Open in Colab / Kaggle links need
a GitHub URL: ``--repo-url``, else the git remote ``origin``; without one they are left out and the build says why.
Writes into the ignored ``_site/``; Sphinx works in ``build/site/`` (the staged project, its output and myst-nb's
files beside it, which it always puts next to its output folder). Publishing: docs/publishing.md.
"""

from __future__ import annotations

import argparse
import datetime as dt
import importlib.util
import shutil
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path[:0] = [str(HERE), str(ROOT)]

from handoutkit import run  # noqa: E402
from sitekit import links, pages, quiet  # noqa: E402

OUT = ROOT / "_site"
STAGE = ROOT / "build" / "site" / "src"


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="website.py", description=__doc__.split("\n\n")[0])
    p.add_argument("notebooks", nargs="*", type=Path, help="chapters to publish (default: notebooks/NN_*.ipynb)")
    p.add_argument("--out", type=Path, default=OUT)
    p.add_argument("--stage", type=Path, default=STAGE, help="where the Sphinx project is written (its output beside)")
    p.add_argument("--size", choices=["auto", "fast", "full"], default="auto")
    p.add_argument("--repo-url", help="the repository's URL (default: git remote origin)")
    p.add_argument(
        "--pages-branch", default="gh-pages", help="the branch the site is published on (Colab opens from it)"
    )
    p.add_argument("--cache", type=Path, default=run.CACHE, help="the chapters' runs, shared with the handouts")
    p.add_argument("--no-cache", dest="cache", action="store_const", const=None, help="run every chapter afresh")
    p.add_argument(
        "--once",
        action="store_true",
        help="never run a chapter a second time because its run was not quiet (show the committed quiet run instead)",
    )
    return p.parse_args(argv)


ENGINE = {"sphinx": "sphinx", "myst_nb": "myst-nb", "sphinx_book_theme": "sphinx-book-theme"}


def missing_engine(find=importlib.util.find_spec) -> str | None:
    """Why the site cannot be built here, where Sphinx, myst-nb or the theme is not installed; else None."""
    absent = [dist for module, dist in ENGINE.items() if find(module) is None]
    if not absent:
        return None
    return (
        f"{', '.join(absent)} {'is' if len(absent) == 1 else 'are'} not installed, and the site is built with "
        "Sphinx, myst-nb and sphinx-book-theme (the site extra): run make install, or pip install -c constraints.txt "
        "-e '.[site]' in the environment that runs this."
    )


def build_html(stage: Path, out: Path) -> int:
    """Sphinx builds the staged project beside it (``stage``/../html) and the result replaces ``out``; 1 where Sphinx
    warned (a warning is an error here: a broken cross-reference is a broken page), having said what to do."""
    html = stage.parent / "html"
    built = subprocess.run(
        [sys.executable, "-m", "sphinx", "-b", "html", "-q", "-E", "-W", "--keep-going", str(stage), str(html)]
    )
    if built.returncode != 0:
        print(
            f"site: Sphinx reported the problems above (in the staged copy of each page, {stage}), so {out} was left "
            "as it was. Fix them in the page of the checkout that has the same path (a link to a page or heading that "
            "does not exist, or Markdown Sphinx cannot read), then run make site again.",
            file=sys.stderr,
        )
        return 1
    shutil.rmtree(out, ignore_errors=True)
    shutil.copytree(
        html, out, ignore=shutil.ignore_patterns(".buildinfo", ".doctrees", "_sources", "*webpack-macros.html")
    )
    return 0


def main(argv: list[str]) -> int:
    import handouts

    args = parse_args(argv)
    missing = [str(n) for n in args.notebooks if not n.is_file()]
    if missing:
        print(f"site: no such notebook: {', '.join(missing)}", file=sys.stderr)
        return 2
    if why := missing_engine():
        print(f"site: {why}", file=sys.stderr)
        return 2
    started = time.perf_counter()
    src = pages.find_sources(ROOT, [n.resolve() for n in args.notebooks] or None)
    machine, has_gpus = handouts.machine_line()
    fast = args.size == "fast" or (args.size == "auto" and not has_gpus)
    made = handouts.made_line(machine, fast, dt.date.today(), recorded=None).replace("Printed from", "Built from")
    repo_url = args.repo_url or links.repo_url_from_git(ROOT)
    committed: list[str] = []  # the chapters whose page shows the committed quiet run (sitekit.quiet)

    def runs(path: Path):
        print(f"site: {path.name}: {'running' if args.cache is None else 'running (or reusing its run)'}", flush=True)
        try:
            chosen = quiet.quiet_run(
                path,
                run=lambda p: run.executed(p, fast=fast, cache=args.cache),
                rerun=None if args.once else (lambda p: run.execute(p, fast=fast)),
            )
        except run.ChapterFailed as exc:
            raise SystemExit(f"site: {exc}") from None
        if chosen.committed:
            committed.append(path.name[:2])
        return quiet.with_note(chosen.nb, chosen.note) if chosen.note else chosen.nb

    def footer() -> str:
        if not committed:
            return made
        return f"{made} Chapter(s) {', '.join(committed)}: the committed quiet run, as the page says at its top."

    pages.stage(args.stage, src, runs, repo_url=repo_url, branch=args.pages_branch, made=footer)
    if build_html(args.stage, args.out) != 0:
        return 1
    print(
        f"site: {len(src.pages()) + 1} page(s) in {args.out} in {time.perf_counter() - started:.0f} s "
        f"({'fast' if fast else 'full'} sizes). Open {args.out / 'index.html'}, or publish the folder as it is "
        "(docs/publishing.md)."
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
