"""The course's website (``make site``, ``tools/website.py``) built and opened in headless Chromium: every page opens,
no link inside the site is broken, no image fails, nothing is requested from outside the site, the search finds a
chapter by a word of its text, a figure shows, a GPU cell shows its recording's label or its one line, and the pages
fit a desktop and a phone. How the pages are made: tests/test_site_pages.py.

The site is built once for the module into a temporary folder, from every chapter (``GPULAB_SITE_TEST_CHAPTERS``,
a glob such as ``0[01]_*``, builds fewer while working on the site), with the network cut off where this machine can
(``unshare -rn``: a namespace with loopback only), by ``tools/website.py``, the program ``make site`` runs. It reuses
the chapters' runs in ``build/executed/`` where ``make site`` or ``make handouts`` left them; otherwise (CI, a fresh
checkout) the fixture makes them, a few minutes in fast mode, while the other pytest worker runs other tests. CI has
no ``make site`` leg of its own: this build is its site build.
"""

from __future__ import annotations

import functools
import http.server
import os
import re
import shutil
import sys
import threading
from pathlib import Path
from urllib.parse import unquote, urldefrag, urlparse

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
from gpulab.checkup.recorded_cells import NO_RECORDING  # noqa: E402
from gpulab.checkup.recorded_cells import SKIP_LINE as GPU_SKIP  # noqa: E402
from handoutkit.printing import find_chromium  # noqa: E402
from sitekit import links  # noqa: E402
from tests.process_group import run as run_in_group  # noqa: E402

CHROMIUM = find_chromium()

SHOTS = ROOT / "build" / "site-screenshots"
# The first test that uses the site waits for its build: every chapter's run where build/executed/ has none.
pytestmark = pytest.mark.timeout(1800)


def _offline_prefix() -> list[str]:
    """A command prefix that runs with no network but loopback (the kernels talk to nbclient over it), or []."""
    if not shutil.which("unshare") or not shutil.which("ip"):
        return []
    probe = run_in_group(["unshare", "-rn", "ip", "link", "set", "lo", "up"], capture_output=True, timeout=60)
    return ["unshare", "-rn", "sh", "-c", 'ip link set lo up && exec "$@"', "offline"] if probe.returncode == 0 else []


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    pytest.importorskip("myst_nb", reason="the site extra is not installed (make install installs it)")
    chapters = sorted((ROOT / "notebooks").glob(os.environ.get("GPULAB_SITE_TEST_CHAPTERS", "[0-9][0-9]_*") + ".ipynb"))
    chapters = [c for c in chapters if re.match(r"\d\d_", c.name)]
    tmp = tmp_path_factory.mktemp("site")
    offline = _offline_prefix()
    cmd = [*offline, sys.executable, str(ROOT / "tools" / "website.py"), *map(str, chapters)]
    # --once: this build shares the machine with the other worker's tests, so a timing chapter's second run would be
    # as busy as its first; its page shows the committed quiet run instead (tools/sitekit/quiet.py).
    cmd += ["--size", "fast", "--once", "--out", str(tmp / "site"), "--stage", str(tmp / "work" / "src")]
    env = {**os.environ, "OMP_WAIT_POLICY": os.environ.get("OMP_WAIT_POLICY", "PASSIVE")}
    done = run_in_group(cmd, capture_output=True, text=True, timeout=1500, env=env, cwd=ROOT)
    assert done.returncode == 0, f"the site did not build:\n{done.stdout[-4000:]}\n{done.stderr[-4000:]}"
    return {"out": tmp / "site", "stdout": done.stdout, "offline": bool(offline), "chapters": chapters}


def _html_pages(out: Path) -> list[Path]:
    return sorted(p for p in out.rglob("*.html") if p.name not in ("genindex.html",))


def test_the_build_says_why_the_launch_links_are_missing_and_ran_offline(site):
    if links.repo_url_from_git(ROOT) is None:
        assert "no Open in Colab / Open in Kaggle links" in site["stdout"]
    if not site["offline"]:
        pytest.skip("unshare -rn is not allowed here, so the build ran with the network on (the page checks stand)")


def test_every_page_is_there(site):
    out = site["out"]
    for chapter in site["chapters"]:
        assert (out / "notebooks" / f"{chapter.stem}.html").is_file()
        assert (out / "files" / chapter.name).read_bytes() == chapter.read_bytes()  # the download: the chapter
    for extra in [ROOT / "notebooks" / "workshop_guide.ipynb", ROOT / "notebooks" / "claims_ledger.md"]:
        if extra.is_file():
            assert (out / "notebooks" / f"{extra.stem}.html").is_file()
    for doc in (ROOT / "docs").glob("*.md"):
        assert (out / "docs" / f"{doc.stem}.html").is_file()
    assert (out / "index.html").is_file() and (out / "search.html").is_file()


_REF = re.compile(r"""\b(?:href|src)\s*=\s*["']([^"']+)["']""")


def test_no_internal_link_is_broken_and_nothing_is_loaded_from_elsewhere(site):
    """Every href/src of every page: a link inside the site names a file that exists and, with a #fragment, an id on
    that page; what a page loads (script, style, image, font) is on the site."""
    out = site["out"]
    ids: dict[Path, set[str]] = {}
    broken, loads = [], []
    for page in _html_pages(out):
        text = page.read_text(encoding="utf-8")
        for tag in re.finditer(r"<(script|link|img|source|iframe)\b[^>]*>", text):
            for ref in _REF.findall(tag.group(0)):
                if urlparse(ref).scheme in ("http", "https") or ref.startswith("//"):
                    rel = re.search(r"""\brel=["']([^"']+)""", tag.group(0))
                    if tag.group(1) != "link" or (rel and rel.group(1) in ("stylesheet", "preload", "icon")):
                        loads.append(f"{page.relative_to(out)} loads {ref}")
        for ref in _REF.findall(text):
            url, frag = urldefrag(ref)
            if urlparse(url).scheme or ref.startswith(("//", "mailto:", "data:", "javascript:")):
                continue
            target = (page.parent / unquote(url.split("?")[0])).resolve() if url else page
            if target.is_dir():
                target = target / "index.html"
            if not target.is_file() or not target.is_relative_to(out.resolve()):
                broken.append(f"{page.relative_to(out)} → {ref}")
                continue
            if frag and target.suffix == ".html":
                if target not in ids:
                    ids[target] = set(re.findall(r"""\bid=["']([^"']+)["']""", target.read_text(encoding="utf-8")))
                if unquote(frag) not in ids[target]:
                    broken.append(f"{page.relative_to(out)} → {ref} (no such id)")
    assert not broken, "broken links:\n" + "\n".join(broken[:30])
    assert not loads, "loaded from outside the site:\n" + "\n".join(loads[:30])


def needs_browser(test):
    skip = pytest.mark.skipif(
        CHROMIUM is None,
        reason="no Chromium installed (Debian: apt-get install chromium; .ci/run installs it when it runs as root)",
    )
    return pytest.mark.browser(skip(test))


@pytest.fixture(scope="module")
def served(site):
    handler = functools.partial(_Quiet, directory=str(site["out"]))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}/"
    finally:
        server.shutdown()
        server.server_close()


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args) -> None:
        pass


@pytest.fixture(scope="module")
def browser():
    pytest.importorskip("playwright.sync_api", reason="playwright is not installed (pip install playwright)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
        try:
            yield b
        finally:
            b.close()


def _open(browser, url: str, base: str, width: int = 1280):
    """The page at ``url``, every image loaded; and the requests it made that left the site or failed."""
    page = browser.new_page(viewport={"width": width, "height": 900})
    outside, failed = [], []
    page.on("request", lambda r: None if r.url.startswith((base, "data:", "blob:")) else outside.append(r.url))
    page.on("requestfailed", lambda r: failed.append(r.url))
    page.on("response", lambda r: failed.append(f"{r.url} ({r.status})") if r.status >= 400 else None)
    response = page.goto(url, wait_until="load")
    assert response is not None and response.ok, f"{url}: {response and response.status}"
    page.evaluate(
        "() => Promise.all([...document.images].map(i => { i.loading = 'eager'; return i.decode().catch(() => 0); }))"
    )
    return page, outside, failed


@needs_browser
def test_chromium_opens_every_page_with_its_images_and_nothing_from_elsewhere(site, served, browser):
    problems = []
    for path in _html_pages(site["out"]):
        rel = path.relative_to(site["out"]).as_posix()
        page, outside, failed = _open(browser, served + rel, served)
        bad = page.evaluate("() => [...document.images].filter(i => !i.complete || i.naturalWidth === 0).length")
        problems += [f"{rel}: {n}" for n in (*[f"requested {u}" for u in outside], *[f"failed {u}" for u in failed])]
        if bad:
            problems.append(f"{rel}: {bad} image(s) did not load")
        page.close()
    assert not problems, "\n".join(problems[:30])


def _rare_word(chapter: Path, others: list[Path]) -> str:
    """A word of ``chapter``'s text that no other page has: the search must find this chapter by it."""
    nb = nbformat.read(chapter, as_version=4)
    text = " ".join(c.source for c in nb.cells if c.cell_type == "markdown")
    elsewhere = " ".join(p.read_text(encoding="utf-8", errors="replace") for p in others).lower()
    for word in sorted(set(re.findall(r"\b[a-z]{7,}\b", text.lower())), key=lambda w: (-len(w), w)):
        if word not in elsewhere:
            return word
    pytest.skip(f"{chapter.name} has no word of its own to search for")


@needs_browser
def test_the_search_finds_a_chapter_by_a_word_in_its_text(site, served, browser):
    chapter = site["chapters"][-1]
    others = [p for p in (ROOT / "notebooks").glob("*") if p.suffix in (".ipynb", ".md") and p != chapter]
    word = _rare_word(chapter, [*others, *(ROOT / "docs").glob("*.md"), ROOT / "README.md"])
    page, outside, _ = _open(browser, f"{served}search.html?q={word}", served)
    page.wait_for_selector("#search-results ul.search li", timeout=30_000)
    found = page.eval_on_selector_all("#search-results ul.search li a", "els => els.map(e => e.href)")
    assert any(f"{chapter.stem}.html" in h for h in found), f"searching {word!r} found {found}"
    # the snippet is the text around the word, not the header's buttons ("System Settings Light Dark")
    page.wait_for_selector("#search-results ul.search li p.context", timeout=30_000)
    snippets = page.eval_on_selector_all("#search-results ul.search li p.context", "els => els.map(e => e.textContent)")
    assert all("System Settings" not in s for s in snippets), snippets
    assert any(word in s.lower() for s in snippets), f"no snippet shows {word!r}: {snippets}"
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / "search.png"), full_page=True)
    # a result lands on the section that holds the word
    page.click(f"#search-results ul.search li a[href*='{chapter.stem}.html']")
    page.wait_for_load_state("load")
    first_match_top = """(w) => {
        const walker = document.createTreeWalker(document.querySelector('article.bd-article'), NodeFilter.SHOW_TEXT);
        while (walker.nextNode()) {
            const n = walker.currentNode, i = n.textContent.toLowerCase().indexOf(w);
            if (i > -1) { const r = document.createRange(); r.setStart(n, i); r.setEnd(n, i + w.length);
                          return r.getBoundingClientRect().top; }
        }
        return null;
    }"""
    page.wait_for_function(f"(w) => {{ const t = ({first_match_top})(w); return t !== null && t >= 0 && t < 900; }}",
                           arg=word, timeout=10_000)  # fmt: skip
    assert not outside
    page.close()


def test_no_page_shows_a_run_its_chapter_calls_not_quiet_without_saying_so(site):
    for chapter in site["chapters"]:
        text = (site["out"] / "notebooks" / f"{chapter.stem}.html").read_text(encoding="utf-8")
        if "→ not quiet" in text:
            assert "Which run this page shows" in text and "This run was not quiet" in text, chapter.name


@needs_browser
def test_a_chapter_shows_its_figure_and_a_gpu_cell_its_recording_or_its_one_line(site, served, browser):
    shown_figure = shown_gpu = False
    SHOTS.mkdir(parents=True, exist_ok=True)
    for chapter in site["chapters"]:
        page, _, _ = _open(browser, f"{served}notebooks/{chapter.stem}.html", served)
        figure = page.query_selector("div.cell_output img")
        if figure and not shown_figure:
            figure.scroll_into_view_if_needed()
            box = figure.bounding_box()
            assert box and box["width"] > 100 and box["height"] > 50, f"{chapter.name}: the figure is not shown"
            assert page.evaluate("(i) => i.naturalWidth", figure) > 100
            page.screenshot(path=str(SHOTS / f"figure-{chapter.stem}.png"))
            shown_figure = True
        for out in page.query_selector_all("div.cell_output"):
            text = out.inner_text()
            if GPU_SKIP in text and not shown_gpu:
                after = text.split(GPU_SKIP, 1)[1]
                assert "recorded on" in after or NO_RECORDING in after, text
                assert out.is_visible()
                out.scroll_into_view_if_needed()
                page.screenshot(path=str(SHOTS / f"gpu-cell-{chapter.stem}.png"))
                shown_gpu = True
        page.close()
    if not shown_figure or not shown_gpu:
        pytest.skip(f"no chapter built here has a {'figure' if not shown_figure else 'GPU cell'}")


@needs_browser
@pytest.mark.parametrize("width", [1280, 390], ids=["desktop", "phone"])
def test_the_chapter_bar_and_the_ledger_fit_the_screen(site, served, browser, width):
    """At desktop and phone widths: the page does not scroll sideways (a wide table scrolls in its own box), the
    chapter's bar is in view under its title, and a ledger's cell link opens the chapter at that cell."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    chapter = site["chapters"][0]
    page, _, _ = _open(browser, f"{served}notebooks/{chapter.stem}.html", served, width)
    assert page.evaluate("() => document.documentElement.scrollWidth <= window.innerWidth + 1")
    bar = page.query_selector(".gpulab-launch a.download")
    assert bar and bar.is_visible() and bar.bounding_box()["y"] < 900
    page.screenshot(path=str(SHOTS / f"chapter-{width}.png"))
    page.close()
    ledger = site["out"] / "notebooks" / "claims_ledger.html"
    if not ledger.is_file():
        pytest.skip("no claims ledger in this checkout")
    page, _, _ = _open(browser, f"{served}notebooks/claims_ledger.html", served, width)
    assert page.evaluate("() => document.documentElement.scrollWidth <= window.innerWidth + 1")
    page.screenshot(path=str(SHOTS / f"ledger-{width}.png"))
    built = {f"{c.stem}.html" for c in site["chapters"]}
    hrefs = page.eval_on_selector_all("a.cell-link", "els => els.map(e => e.getAttribute('href'))")
    href = next((h for h in hrefs if h.split("#")[0] in built), None)
    page.close()
    if href is None:
        pytest.skip("the ledger links no cell of the chapters built here")
    page, _, _ = _open(browser, f"{served}notebooks/{href}", served, width)
    target = page.query_selector(f"[id='{unquote(href.split('#', 1)[1])}']")
    assert target is not None
    page.wait_for_function("(e) => Math.abs(e.getBoundingClientRect().top) < 900", arg=target)
    page.close()
