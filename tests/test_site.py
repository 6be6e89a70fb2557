"""The course's website (``make site``, ``tools/website.py``): how its pages are made (links, anchors, the chapter's
bar, Colab's first cell, the run shared with the handouts), and the built site in headless Chromium: every page opens,
no link inside the site is broken, no image fails, nothing is requested from outside the site, the search finds a
chapter by a word of its text, a figure shows, a GPU cell shows its recording's label or its one line.

The site is built once for the module into a temporary folder, from every chapter (``GPULAB_SITE_TEST_CHAPTERS``,
a glob such as ``0[01]_*``, builds fewer while working on the site), with the network cut off where this machine can
(``unshare -rn``: a namespace with loopback only). It reuses the chapters' runs in ``build/executed/`` (CI runs
``make site`` first, so the runs are there; on a fresh checkout the fixture makes them, a few minutes in fast mode).
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
from handoutkit import editions, run  # noqa: E402
from handoutkit.printing import find_chromium  # noqa: E402
from sitekit import links, pages  # noqa: E402
from tests.process_group import run as run_in_group  # noqa: E402

CHROMIUM = find_chromium()
GPU_SKIP = "Skipped on this machine:"
SHOTS = ROOT / "build" / "site-screenshots"
# The first test that uses the site waits for its build: every chapter's run where build/executed/ has none.
pytestmark = pytest.mark.timeout(1800)


# ---- how the pages are made ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "url, repo",
    [
        ("https://github.com/owner/gpulab.git", ("owner", "gpulab")),
        ("https://github.com/owner/gpulab", ("owner", "gpulab")),
        ("git@github.com:owner/gpulab.git", ("owner", "gpulab")),
        ("ssh://git@github.com/owner/gpulab.git", ("owner", "gpulab")),
        ("https://token@github.com/owner/gpulab.git", ("owner", "gpulab")),
        ("https://gitlab.com/owner/gpulab.git", None),
        ("/srv/git/gpulab", None),
    ],
)
def test_a_github_remote_is_read_in_each_of_its_forms(url, repo):
    assert links.github_repo(url) == repo


def test_the_links_are_left_out_with_a_reason_where_there_is_no_github_url():
    none = links.launch_links(None, "gh-pages", "colab/01_x.ipynb")
    assert none.colab is none.kaggle is None and "--repo-url" in none.why_not
    other = links.launch_links("https://gitlab.com/o/r.git", "gh-pages", "colab/01_x.ipynb")
    assert other.colab is None and "GitHub only" in other.why_not
    gh = links.launch_links("git@github.com:o/r.git", "gh-pages", "colab/01_x.ipynb")
    assert gh.why_not is None
    assert gh.colab == "https://colab.research.google.com/github/o/r/blob/gh-pages/colab/01_x.ipynb"
    assert gh.kaggle == (
        "https://www.kaggle.com/kernels/welcome?src=https%3A%2F%2Fgithub.com%2Fo%2Fr%2Fblob%2Fgh-pages%2Fcolab%2F01_x.ipynb"
    )


def test_the_repository_url_comes_from_the_git_remote(tmp_path):
    run_in_group(["git", "init", "-q", str(tmp_path)], check=True, timeout=60)
    assert links.repo_url_from_git(tmp_path) is None
    run_in_group(
        ["git", "-C", str(tmp_path), "remote", "add", "origin", "git@github.com:o/r.git"], check=True, timeout=60
    )
    assert links.repo_url_from_git(tmp_path) == "git@github.com:o/r.git"


def _chapter(folder: Path, name: str, cells: list[tuple[str, str, list[str]]]) -> Path:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    for kind, source, tags in cells:
        cell = nbformat.v4.new_markdown_cell(source) if kind == "markdown" else nbformat.v4.new_code_cell(source)
        cell.metadata["tags"] = tags
        nb.cells.append(cell)
    (folder / "notebooks").mkdir(parents=True, exist_ok=True)
    path = folder / "notebooks" / name
    nbformat.write(nb, path)
    return path


def test_colabs_first_cell_clones_installs_keeping_torch_and_runs_from_the_chapters(tmp_path):
    """The README's Colab route: clone, install (constraints-server.txt keeps the runtime's torch: its dry run is in
    tests/test_install_lines.py), then the chapter runs from notebooks/; Lightning's extra where the chapter uses it."""
    plain = _chapter(tmp_path, "01_x.ipynb", [("markdown", "# 01 · X", []), ("code", "import torch", [])])
    light = _chapter(tmp_path, "06_y.ipynb", [("code", "import torch\nimport lightning as L", [])])
    nb = links.colab_edition(plain, "git@github.com:o/r.git")
    first = nb.cells[0]
    assert first.metadata["tags"] == [links.COLAB_TAG] and nb.cells[1].source == "# 01 · X"
    lines = first.source.splitlines()
    assert "git clone --depth 1 https://github.com/o/r.git gpulab" in first.source  # https: Colab has no ssh key
    (pip,) = [ln for ln in lines if "pip install" in ln]
    assert "-c ./gpulab/constraints-server.txt" in pip and pip.endswith("-e './gpulab'") and "torch" not in pip
    assert lines[-1] == "%cd gpulab/notebooks"
    assert "-e './gpulab[lightning]'" in links.colab_edition(light, "https://github.com/o/r").cells[0].source


def _sources(tmp_path: Path) -> pages.Sources:
    ch = _chapter(
        tmp_path,
        "01_first.ipynb",
        [
            (
                "markdown",
                "# 01 · First\n\nIntro with [a test file](../tests/t.py) and [the web](https://pytorch.org).",
                [],
            ),
            ("code", "%%gpu\nprint('on a GPU')", []),
            ("code", "answer = 42", ["solution"]),
        ],
    )
    _chapter(tmp_path, "02_second.ipynb", [("markdown", "# 02 · Second", [])])
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "t.py").write_text("")
    nb = nbformat.read(ch, as_version=4)
    (tmp_path / "notebooks" / "claims_ledger.md").write_text(
        "# Ledger\n\n| # | shown in |\n|---|---|\n"
        f"| 1 | [01 · `first` cell](01_first.ipynb#cell-id={nb.cells[1].id}) and [02](02_second.ipynb) |\n"
    )
    return pages.find_sources(tmp_path)


def test_ledger_cell_links_point_at_the_cells_place_on_the_chapter_page(tmp_path):
    src = _sources(tmp_path)
    cell_id = nbformat.read(src.chapters[0], as_version=4).cells[1].id
    out = pages.rewrite_links(src.ledger.read_text(), src.ledger, src, None)
    assert f'<a class="cell-link" href="01_first.html#cell-id={cell_id}">01 · <code>first</code> cell</a>' in out
    assert "[02](02_second.ipynb)" in out  # a page of the site: Sphinx resolves it


def test_a_link_to_a_file_that_is_no_page_goes_to_the_repository_or_becomes_words(tmp_path):
    src = _sources(tmp_path)
    text = "see [a test file](../tests/t.py), [the web](https://pytorch.org) and [gone](../nope.py)"
    where = src.chapters[0]
    assert pages.rewrite_links(text, where, src, "https://github.com/o/r") == (
        "see [a test file](https://github.com/o/r/blob/HEAD/tests/t.py), [the web](https://pytorch.org) and "
        "[gone](../nope.py)"  # a broken link stays for the site's link check to report
    )
    assert pages.rewrite_links(text, where, src, None).startswith("see a test file, [the web]")


def _executed(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """``nb`` as if run here without a GPU: the %%gpu cell printed its skip and the one line (what the magic does)."""
    from gpulab.core.recorded_cells import find

    nb = nbformat.from_dict(nb)
    for cell in nb.cells:
        if cell.cell_type == "code" and cell.source.startswith("%%gpu"):
            none = find([], source=cell.source, needs=1).note
            text = f"{GPU_SKIP} this cell needs 1 CUDA GPU(s).\n{none}\n"
            cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=text)]
    return nb


def test_a_chapter_page_has_its_bar_under_the_title_anchors_and_folded_solutions(tmp_path):
    src = _sources(tmp_path)
    nb = nbformat.read(src.chapters[0], as_version=4)
    launch = links.launch_links("https://github.com/o/r", "gh-pages", "colab/01_first.ipynb")
    order = [("01_first", "01 · First"), ("02_second", "02 · Second")]
    bar = pages.launch_bar(index=0, order=order, launch=launch, download="../files/01_first.ipynb")
    page = pages.chapter_page(_executed(nb), src.chapters[0], src, None, bar)
    title = page.cells[0].source
    assert title.index("# 01 · First") < title.index("Open in Colab") < title.index("Intro with")
    assert "1 of 2 chapters" in title and "href='02_second.html'>02 · Second →" in title and "← " not in title
    assert 'href="../files/01_first.ipynb" download>Download the notebook' in title
    for cell in nb.cells:  # every cell of the chapter can be linked to
        assert sum(f'id="cell-id={cell.id}"' in c.source for c in page.cells if c.cell_type == "markdown") == 1
    (solution,) = [c for c in page.cells if editions.SOLUTION_TAG in c.metadata.get("tags", [])]
    assert pages.SOLUTION_FOLD in solution.metadata["tags"]
    (gpu,) = [c for c in page.cells if c.cell_type == "code" and c.source.startswith("%%gpu")]
    text = "".join(o.get("text", "") for o in gpu.outputs)
    assert text.count("No GPU recording of this cell's code yet") == 1  # the magic printed it; not again
    assert "a test file" in title and "../tests/t.py" not in title  # no repository URL: the words stay


def test_without_a_repository_the_build_says_why_and_the_pages_have_no_launch_links(tmp_path, capsys):
    src = _sources(tmp_path)
    said: list[str] = []
    pages.stage(tmp_path / "stage", src, lambda p: _executed(nbformat.read(p, as_version=4)), repo_url=None,
                branch="gh-pages", made="made", say=said.append)  # fmt: skip
    assert len(said) == 1 and "no Open in Colab / Open in Kaggle links" in said[0]
    page = (tmp_path / "stage" / "notebooks" / "01_first.ipynb").read_text()
    assert "Open in Colab" not in page and "Download the notebook" in page
    assert not (tmp_path / "stage" / "_extra" / "colab").exists()
    pages.stage(tmp_path / "stage", src, lambda p: _executed(nbformat.read(p, as_version=4)),
                repo_url="https://github.com/o/r", branch="gh-pages", made="made", say=said.append)  # fmt: skip
    assert len(said) == 1
    assert (
        "colab.research.google.com/github/o/r/blob/gh-pages/colab/01_first.ipynb"
        in (tmp_path / "stage" / "notebooks" / "01_first.ipynb").read_text()
    )
    colab = nbformat.read(tmp_path / "stage" / "_extra" / "colab" / "01_first.ipynb", as_version=4)
    assert colab.cells[0].metadata["tags"] == [links.COLAB_TAG]
    home = (tmp_path / "stage" / "index.md").read_text()
    assert "notebooks/01_first.ipynb" in home and "notebooks/claims_ledger.md" in home


def test_one_run_feeds_the_handouts_and_the_site(tmp_path):
    """handoutkit.run.executed runs a chapter once and hands the same run to the next reader; a changed chapter runs
    again."""
    path = _chapter(tmp_path, "01_x.ipynb", [("code", "import os\nprint(os.getpid())", [])])
    cache = tmp_path / "runs"
    first = run.executed(path, fast=True, cache=cache)
    again = run.executed(path, fast=True, cache=cache)
    assert again.cells[0].outputs[0]["text"] == first.cells[0].outputs[0]["text"]  # the same process's pid: one run
    nb = nbformat.read(path, as_version=4)
    nb.cells[0].source += "\nprint('changed')"
    nbformat.write(nb, path)
    changed = run.executed(path, fast=True, cache=cache)
    assert "changed" in changed.cells[0].outputs[0]["text"]
    assert len(list(cache.glob("01_x.*.ipynb"))) == 1  # only the newest run is kept


def test_lint_does_not_depend_on_the_build_folders(tmp_path):
    """With handouts/ and _site/ present and no ruff cache, the import order ruff wants is the same as without them
    (before, handouts/ made ruff take ``import handouts`` for first-party). The same check with the project's
    first-party list taken out fails, so it can fail."""
    ruff = shutil.which("ruff", path=str(Path(sys.executable).parent)) or shutil.which("ruff")
    if ruff is None:
        pytest.skip("ruff is not installed (make install installs it)")
    work = tmp_path / "checkout"
    (work / "tests").mkdir(parents=True)
    shutil.copy2(ROOT / "tests" / "test_handouts.py", work / "tests" / "test_handouts.py")
    (work / "tests" / "__init__.py").write_text("")
    for build in ("handouts", "_site"):
        (work / build).mkdir()
        (work / build / "index.html").write_text("<html></html>")
    pyproject = (ROOT / "pyproject.toml").read_text()
    cmd = [ruff, "check", "--no-cache", "--select", "I", "tests"]
    (work / "pyproject.toml").write_text(pyproject)
    done = run_in_group(cmd, cwd=work, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    without = re.sub(r"known-first-party = \[[^\]]*\]", "known-first-party = []", pyproject)
    (work / "pyproject.toml").write_text(without.replace('"handouts", "_site", ', ""))
    assert run_in_group(cmd, cwd=work, capture_output=True, text=True, timeout=120).returncode != 0


def test_a_missing_notebook_or_engine_is_reported():
    out = run_in_group(
        [sys.executable, str(ROOT / "tools" / "website.py"), "notebooks/99_nope.ipynb"],
        capture_output=True, text=True, cwd=ROOT, timeout=120,
    )  # fmt: skip
    assert out.returncode == 2 and "no such notebook: notebooks/99_nope.ipynb" in out.stderr
    import website

    assert website.missing_engine() is None  # make install installs the site extra
    why = website.missing_engine(lambda module: None if module == "myst_nb" else object())
    assert why.startswith("myst-nb is not installed") and "-e '.[site]'" in why


def test_a_broken_link_in_a_page_fails_the_build_and_says_what_to_do(tmp_path, capfd):
    pytest.importorskip("myst_nb", reason="the site extra is not installed (make install installs it)")
    import website

    _sources(tmp_path)  # two chapters and a ledger
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "guide.md").write_text("# Guide\n\nSee [the setup](setup.md#nowhere).\n")
    src = pages.find_sources(tmp_path)
    pages.stage(tmp_path / "work" / "src", src, lambda p: _executed(nbformat.read(p, as_version=4)), repo_url=None,
                branch="gh-pages", made="made", say=lambda _: None)  # fmt: skip
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "kept.html").write_text("the last good site")
    assert website.build_html(tmp_path / "work" / "src", tmp_path / "out") == 1
    err = capfd.readouterr().err
    assert "guide.md" in err and "left as it was" in err and "run make site again" in err
    assert (tmp_path / "out" / "kept.html").read_text() == "the last good site"
    (tmp_path / "docs" / "guide.md").write_text("# Guide\n\nSee [the ledger](../notebooks/claims_ledger.md).\n")
    pages.stage(tmp_path / "work" / "src", pages.find_sources(tmp_path),
                lambda p: _executed(nbformat.read(p, as_version=4)), repo_url=None, branch="gh-pages", made="made",
                say=lambda _: None)  # fmt: skip
    assert website.build_html(tmp_path / "work" / "src", tmp_path / "out") == 0
    assert (tmp_path / "out" / "docs" / "guide.html").is_file() and not (tmp_path / "out" / "kept.html").exists()


# ---- the built site, in a browser -------------------------------------------------------------------------------


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
    cmd += ["--size", "fast", "--out", str(tmp / "site"), "--stage", str(tmp / "work" / "src")]
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
    assert not outside
    page.close()


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
                assert "recorded on" in after or "No GPU recording of this cell's code yet" in after, text
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
