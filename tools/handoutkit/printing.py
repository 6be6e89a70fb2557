"""Print a handout page to PDF with Chromium, and look at the printed pages as a reader would.

nbconvert's own ``webpdf`` exporter drives a browser that Playwright downloads, which fails offline; Debian's
``chromium`` (or any Chrome) prints the same HTML with ``--print-to-pdf``, using the page's ``@page`` size.
The check renders every page with ``pdftoppm`` (poppler-utils) and measures ink: nothing in the right margin nor in
a ``GUARD_MM`` band just inside it (Chromium clips a line that runs past the text width at the margin, so a clipped
line shows as ink touching the edge: the handout styles keep ``GUARD_MM`` and more free on the right of every
page), every page but the last at least ``MIN_FILL`` full (no half-empty page before a long cell), and the paper
size asked for.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

__all__ = ["find_chromium", "print_pdf", "render_pages", "check_pages", "PrintCheck", "PrintFailed"]

CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
MIN_FILL = 0.45  # a big figure (110 mm at most) with its code can leave a page this full, not less
GUARD_MM = 1.5  # handout.css and cheatsheet.css leave 2.5 mm free inside the right margin
INK = 160  # grey level (0-255) darker than this counts as ink: text, rules and plots, not light backgrounds
MM_PER_INCH = 25.4


class PrintFailed(RuntimeError):
    """Chromium or pdftoppm did not produce what was asked."""


def find_chromium() -> str | None:
    """``GPULAB_CHROMIUM`` if set, else the first Chromium or Chrome on ``PATH``."""
    forced = os.environ.get("GPULAB_CHROMIUM")
    if forced:
        return forced
    return next((p for p in map(shutil.which, CHROMIUM_NAMES) if p), None)


def print_pdf(html: Path, pdf: Path, chromium: str, timeout_s: float = 120) -> Path:
    """Chromium (headless, no network, a throw-away profile) prints ``html`` to ``pdf``."""
    with tempfile.TemporaryDirectory(prefix="gpulab-chromium-") as profile:
        cmd = [
            chromium,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-extensions",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            f"--user-data-dir={profile}",
            "--no-pdf-header-footer",
            "--generate-pdf-document-outline",
            f"--print-to-pdf={pdf}",
            html.resolve().as_uri(),
        ]
        try:
            done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s)
        except subprocess.TimeoutExpired:
            raise PrintFailed(f"Chromium did not finish printing {html.name} in {timeout_s:.0f} s.") from None
    if done.returncode != 0 or not pdf.is_file() or pdf.stat().st_size == 0:
        raise PrintFailed(f"Chromium could not print {html.name} (exit {done.returncode}):\n{done.stderr[-2000:]}")
    return pdf


def render_pages(pdf: Path, dpi: int = 40) -> list[np.ndarray]:
    """Every page of ``pdf`` as a grey image (uint8, 0 = black), rendered by pdftoppm."""
    if shutil.which("pdftoppm") is None:
        raise PrintFailed(
            "pdftoppm is not installed, so the pages cannot be looked at: install poppler-utils "
            "(Debian/Ubuntu: apt-get install poppler-utils)."
        )
    from PIL import Image

    with tempfile.TemporaryDirectory(prefix="gpulab-pages-") as tmp:
        subprocess.run(
            ["pdftoppm", "-r", str(dpi), "-gray", "-png", str(pdf), f"{tmp}/page"],
            check=True,
            capture_output=True,
            timeout=120,
        )
        files = sorted(Path(tmp).glob("page-*.png"), key=lambda p: int(p.stem.rsplit("-", 1)[1]))
        return [np.asarray(Image.open(f).convert("L")) for f in files]


@dataclass
class PrintCheck:
    """What the printed pages look like: their count and size, how full each is, and what is wrong."""

    pages: int
    page_mm: tuple[float, float]
    fills: list[float]
    problems: list[str] = field(default_factory=list)

    def __str__(self) -> str:
        fills = " ".join(f"{f:.0%}" for f in self.fills)
        head = f"{self.pages} page(s) of {self.page_mm[0]:.0f}×{self.page_mm[1]:.0f} mm, filled {fills}"
        return head + "".join(f"\n  problem: {p}" for p in self.problems)


def check_pages(
    pdf: Path,
    paper_mm: tuple[float, float],
    margin_mm: float,
    *,
    dpi: int = 40,
    top_mm: float = 12.0,
    bottom_mm: float = 14.0,
) -> PrintCheck:
    """Render ``pdf`` and check it against the paper it was printed for (see the module docstring)."""
    images = render_pages(pdf, dpi)
    px = dpi / MM_PER_INCH
    problems: list[str] = []
    fills: list[float] = []
    size_mm = (images[0].shape[1] / px, images[0].shape[0] / px) if images else (0.0, 0.0)
    if images and max(abs(size_mm[0] - paper_mm[0]), abs(size_mm[1] - paper_mm[1])) > 3:
        problems.append(f"pages are {size_mm[0]:.0f}×{size_mm[1]:.0f} mm, not {paper_mm[0]:.0f}×{paper_mm[1]:.0f}")
    for n, page in enumerate(images, 1):
        h, w = page.shape
        top, bottom = int(top_mm * px), h - int(bottom_mm * px)
        right_band = page[:, w - int((margin_mm + GUARD_MM) * px) :]
        if (right_band < INK).any():
            problems.append(
                f"page {n}: ink at or past the right edge of the text (a line runs past the text width and is cut off)"
            )
        rows = np.flatnonzero((page[top:bottom] < INK).any(axis=1))
        fill = (rows[-1] + 1) / (bottom - top) if rows.size else 0.0
        fills.append(float(fill))
        if n < len(images) and fill < MIN_FILL:
            problems.append(f"page {n}: only {fill:.0%} full before the next page starts")
    if not images:
        problems.append("the PDF has no pages")
    return PrintCheck(len(images), size_mm, fills, problems)
