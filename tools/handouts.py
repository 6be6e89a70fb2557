"""Printable handouts of the chapters: HTML always, PDF when a Chromium is installed.

    .venv/bin/python tools/handouts.py [notebooks/NN_*.ipynb ...]     (default: every chapter)   →  handouts/

HTML comes from nbconvert with the committed (text) outputs. PDF is Chromium printing that HTML headless
(nbconvert's own ``webpdf`` wants a browser download that fails offline; Debian's ``chromium`` package works).
"""
from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from nbconvert import HTMLExporter

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "handouts"
CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome")


def find_chromium() -> str | None:
    return next((p for p in map(shutil.which, CHROMIUM_NAMES) if p), None)


def to_html(notebook: Path) -> Path:
    body, _ = HTMLExporter().from_filename(str(notebook))
    out = OUT / (notebook.stem + ".html")
    out.write_text(body, encoding="utf-8")
    return out


def to_pdf(html: Path, chromium: str) -> Path:
    pdf = html.with_suffix(".pdf")
    with tempfile.TemporaryDirectory() as profile:
        subprocess.run(
            [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
             "--disable-component-update", "--disable-sync", f"--user-data-dir={profile}", "--no-pdf-header-footer",
             f"--print-to-pdf={pdf}", html.as_uri()],
            check=True, capture_output=True, timeout=120,
        )
    return pdf


def main(args: list[str]) -> int:
    notebooks = [Path(a) for a in args] or sorted((ROOT / "notebooks").glob("*.ipynb"))
    missing = [str(n) for n in notebooks if not n.is_file()]
    if missing:
        print(f"handouts: no such notebook: {', '.join(missing)}", file=sys.stderr)
        return 2
    OUT.mkdir(exist_ok=True)
    chromium = find_chromium()
    for nb in notebooks:
        html = to_html(nb)
        print(f"{html.relative_to(ROOT)}", end="")
        print(f"  +  {to_pdf(html, chromium).relative_to(ROOT)}" if chromium else "")
    if not chromium:
        print("No Chromium found, so no PDFs: install one (Debian/Ubuntu: `sudo apt-get install chromium`) or print "
              "the HTML files from any browser.")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
