"""How the website's pages are made (``tools/sitekit``, ``tools/website.py``): the repository's URL and the Open in
Colab / Kaggle links, Colab's first cell, links rewritten to where their targets are on the site, a chapter's bar,
anchors and folded solutions, the run shared with the handouts, the errors a user can cause, and lint with the build
folders present. The built site in a browser: tests/test_site.py."""

from __future__ import annotations

import importlib.util
import re
import shutil
import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
from gpulab.checkup.recorded_cells import NO_RECORDING  # noqa: E402
from gpulab.checkup.recorded_cells import SKIP_LINE as GPU_SKIP  # noqa: E402
from handoutkit import editions, run  # noqa: E402
from sitekit import links, pages  # noqa: E402
from tests.process_group import run as run_in_group  # noqa: E402
from tests.small_notebooks import write_notebook  # noqa: E402


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
    return write_notebook(folder / "notebooks" / name, cells)


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
    from gpulab.checkup.recorded_cells import find

    nb = nbformat.from_dict(nb)
    for cell in nb.cells:
        if cell.cell_type == "code" and cell.source.startswith("%%gpu"):
            none = find([], source=cell.source, needs=1).note
            text = f"{GPU_SKIP} needs 1 GPU, and no GPU is here. {none}\n"
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
    assert text.count(NO_RECORDING) == 1  # the magic printed it; not again
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

    engine = all(importlib.util.find_spec(m) is not None for m in website.ENGINE)  # make install installs the extra
    assert (website.missing_engine() is None) == engine, website.missing_engine()  # test-compat's venv lacks it
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


def test_the_home_page_promises_colab_links_only_where_the_build_makes_them(tmp_path):
    src = _sources(tmp_path)
    titles = {p: p.stem for p in src.chapters} | ({src.guide: "Guide"} if src.guide else {})
    titles |= {src.ledger: "Claims ledger"} if src.ledger else {}
    without = pages.home_page(src, titles, None)
    assert "links at the top of its page" not in without
    assert "carry no Colab or Kaggle links" in without
    assert "Colab or Kaggle from the links at the top of its page" in pages.home_page(
        src, titles, "https://github.com/o/r"
    )
