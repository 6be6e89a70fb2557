"""Handouts for instructors: HTML from nbconvert, opened in a real headless Chromium (Playwright), and PDF."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import handouts  # noqa: E402

CHROMIUM = handouts.find_chromium()
needs_chromium = pytest.mark.skipif(CHROMIUM is None, reason="no Chromium installed (Debian: apt-get install chromium)")


@pytest.fixture(scope="module")
def chapter00_html(tmp_path_factory):
    handouts.OUT = tmp_path_factory.mktemp("handouts")
    return handouts.to_html(ROOT / "notebooks" / "00_setup.ipynb")


@pytest.mark.browser
@needs_chromium
def test_the_report_reads_in_a_browser(chapter00_html, tmp_path):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu",
                                                                    "--disable-background-networking"])
        try:
            page = browser.new_page()
            page.goto(chapter00_html.as_uri())
            report = page.locator(".gpulab-report")
            assert report.count() == 1
            text = report.inner_text()
            assert "gpulab environment report" in text and "Checklist" in text
            assert "✔ gloo backend" in text
            assert page.locator(".gpulab-report table").count() >= 3
            page.screenshot(path=str(tmp_path / "report.png"), full_page=True)
            assert (tmp_path / "report.png").stat().st_size > 10_000
        finally:
            browser.close()


@pytest.mark.browser
@needs_chromium
def test_pdf_handout_is_printed(chapter00_html):
    pdf = handouts.to_pdf(chapter00_html, CHROMIUM)
    data = pdf.read_bytes()
    assert data[:5] == b"%PDF-"
    assert len(re.findall(rb"/Type\s*/Page\b", data)) >= 2, "chapter 00 with its report fills more than one page"


def test_a_missing_notebook_is_reported():
    out = subprocess.run([sys.executable, str(ROOT / "tools" / "handouts.py"), "notebooks/99_nope.ipynb"],
                         capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert out.returncode == 2 and "no such notebook: notebooks/99_nope.ipynb" in out.stderr
