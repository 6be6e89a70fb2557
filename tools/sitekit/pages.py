"""The site's pages, staged as a Sphinx project: each chapter's run, the workshop guide, ``docs/``, the claims ledger
and a home page, laid out as in the repository (``notebooks/…``, ``docs/…``) so that links between them keep working.

Which pages there are is read from the checkout, never listed here: ``notebooks/[0-9][0-9]_*.ipynb`` (the chapters,
in the order of their numbers), ``notebooks/workshop_guide.ipynb``, ``docs/*.md`` and ``notebooks/claims_ledger.md``
where they exist. A chapter page is its run (``handoutkit.run.executed``, shared with the handouts) made static as
for the handouts (widgets in their final state, the settings lines left out) and as the GPU edition (a skipped GPU cell
shows its recording, labelled, or the one line that says none exists), plus a bar under its title: Open in Colab,
Open in Kaggle, the notebook to download, and its place in the order. Solution cells are folded (a click opens them).

Links are rewritten by hand because they point at the repository, not at a site: ``NN_x.ipynb#cell-id=ID`` (as
JupyterLab opens a cell) becomes the cell's anchor on the chapter page (each cell gets ``id="cell-id=ID"``, the id
nbconvert gives it in the handouts); a link to a file that is not a page goes to the repository (or, with no known
repository URL, becomes plain text), so no link on the site is broken.
"""

from __future__ import annotations

import html
import json
import os
import re
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import nbformat

from handoutkit import editions, static

from . import links

__all__ = ["Sources", "find_sources", "chapter_page", "rewrite_links", "stage", "SOLUTION_FOLD", "HERE"]

HERE = Path(__file__).resolve().parent
SOLUTION_FOLD = "hide-cell"  # myst-nb folds a cell with this tag behind "Show code cell content"
_LINK = re.compile(r"(?<!!)\[((?:[^\[\]]|\[[^\]]*\])*)\]\(([^)\s]+)\)")
_SCHEME = re.compile(r"^[a-z][a-z0-9+.-]*:", re.I)


@dataclass(frozen=True)
class Sources:
    root: Path
    chapters: list[Path]
    guide: Path | None
    docs: list[Path]
    ledger: Path | None

    def pages(self) -> list[Path]:
        return [*self.chapters, *filter(None, [self.guide, self.ledger]), *self.docs]


def find_sources(root: Path, chapters: list[Path] | None = None) -> Sources:
    nbs = root / "notebooks"
    guide, ledger = nbs / "workshop_guide.ipynb", nbs / "claims_ledger.md"
    return Sources(
        root=root,
        chapters=sorted(chapters) if chapters else sorted(nbs.glob("[0-9][0-9]_*.ipynb")),
        guide=guide if guide.is_file() else None,
        docs=sorted((root / "docs").glob("*.md")),
        ledger=ledger if ledger.is_file() else None,
    )


def title_of(nb: nbformat.NotebookNode, fallback: str) -> str:
    for cell in nb.cells:
        if cell.cell_type == "markdown" and cell.source.lstrip().startswith("# "):
            return cell.source.lstrip()[2:].splitlines()[0].strip()
    return fallback


def _cell_link(text: str, href: str) -> str:
    inner = re.sub(r"`([^`]+)`", r"<code>\1</code>", html.escape(text, quote=False))
    return f'<a class="cell-link" href="{html.escape(href)}">{inner}</a>'


def rewrite_links(text: str, where: Path, src: Sources, repo_web: str | None) -> str:
    """``text`` (Markdown of the file ``where`` in the checkout) with its relative links pointed at the site."""
    staged = {p.resolve() for p in src.pages()}

    def fix(m: re.Match) -> str:
        label, target = m.group(1), m.group(2)
        if _SCHEME.match(target) or target.startswith(("#", "<")):
            return m.group(0)
        path, _, frag = target.partition("#")
        file = (where.parent / path).resolve()
        if file in staged:
            if frag.startswith("cell-id=") and file.suffix == ".ipynb":
                rel = os.path.relpath(file.with_suffix(".html"), where.parent.resolve())
                return _cell_link(label, f"{rel}#{frag}")
            return m.group(0)  # a page of the site: Sphinx resolves it (and its heading anchor)
        if not file.is_relative_to(src.root.resolve()) or not file.exists():
            return m.group(0)  # a broken link in the source: left for the link check to report
        if repo_web:
            kind = "tree" if file.is_dir() else "blob"
            rel = file.relative_to(src.root.resolve()).as_posix()
            return f"[{label}]({repo_web}/{kind}/HEAD/{rel}{'#' + frag if frag else ''})"
        return label  # no repository URL to send the reader to: the words stay, the link goes

    return _LINK.sub(fix, text)


def _anchor_html(cell_id: str) -> str:
    return f'<div class="cell-anchor" id="cell-id={html.escape(cell_id)}"></div>'


def _anchor(cell_id: str) -> nbformat.NotebookNode:
    cell = nbformat.v4.new_markdown_cell(_anchor_html(cell_id))
    cell.metadata["gpulab_site"] = "anchor"
    return cell


def _after_title(source: str, bar: str) -> str:
    """``bar`` right under the cell's first heading (or first, where it has none)."""
    lines = source.split("\n")
    at = next((i + 1 for i, ln in enumerate(lines) if ln.startswith("# ")), 0)
    return "\n".join([*lines[:at], "", bar, "", *lines[at:]])


def launch_bar(*, index: int, order: list[tuple[str, str]], launch: links.LaunchLinks, download: str) -> str:
    """The bar under a chapter's title: where to run it, the file, and its place in the order (``order``: (page
    name, title) of every chapter)."""
    runs = [f'<a class="launch colab" href="{html.escape(launch.colab)}">Open in Colab</a>'] if launch.colab else []
    if launch.kaggle:
        runs.append(f'<a class="launch kaggle" href="{html.escape(launch.kaggle)}">Open in Kaggle</a>')
    runs.append(f'<a class="launch download" href="{html.escape(download)}" download>Download the notebook</a>')
    place = [f"<span class='place'>{index + 1} of {len(order)} chapters</span>"]
    if index > 0:
        name, title = order[index - 1]
        place.append(f"<a class='prev' href='{name}.html'>← {html.escape(title)}</a>")
    if index + 1 < len(order):
        name, title = order[index + 1]
        place.append(f"<a class='next' href='{name}.html'>{html.escape(title)} →</a>")
    return (
        f'<div class="gpulab-launch">{" ".join(runs)}</div>\n'
        f'<nav class="gpulab-order" aria-label="chapters">{" · ".join(place)}</nav>'
    )


def chapter_page(
    nb: nbformat.NotebookNode, path: Path, src: Sources, repo_web: str | None, bar: str | None
) -> nbformat.NotebookNode:
    """The executed chapter ``nb`` as its page: static widgets, recorded GPU outputs, anchors, links, the bar."""
    nb = nbformat.from_dict(json.loads(json.dumps(nb)))  # a copy: the run is shared with the handouts
    static.freeze_widgets(nb)
    static.drop_settings_lines(nb)
    nb, _ = editions.recorded_edition(nb, path.name)
    cells = []
    for i, cell in enumerate(nb.cells):
        if cell.cell_type == "markdown":
            cell.source = rewrite_links(cell.source, path, src, repo_web)
            if i == 0 and bar:
                cell.source = _after_title(cell.source, bar)
            if cell.get("id"):
                cell.source = f"{_anchor_html(cell.id)}\n\n{cell.source}"
        elif cell.get("id"):
            cells.append(_anchor(cell.id))
        tags = cell.metadata.setdefault("tags", [])
        if editions.SOLUTION_TAG in tags and cell.cell_type == "code":
            tags.append(SOLUTION_FOLD)
            cell.metadata["mystnb"] = {"code_prompt_show": "Show the worked answer", "code_prompt_hide": "Hide it"}
        cells.append(cell)
        if i == 0 and bar and cell.cell_type != "markdown":
            cells.append(nbformat.v4.new_markdown_cell(bar))
    nb.cells = cells
    return nb


def gpu_cell_counts(page: nbformat.NotebookNode) -> dict[str, int]:
    """A chapter page's GPU cells that did not run here: those showing a recorded GPU run, and those with none yet."""
    from gpulab.checkup.recorded_cells import magic_line, skipped_here

    counts = {"recorded": 0, "waiting": 0}
    for cell in page.cells:
        if cell.cell_type != "code" or magic_line(cell.source) is None:
            continue
        text = "".join(o.get("text", "") for o in cell.get("outputs", []) if o.get("output_type") == "stream")
        if "recorded" in cell.metadata.get("tags", []):
            counts["recorded"] += 1
        elif skipped_here(text):
            counts["waiting"] += 1
    return counts


def gpu_footer(recorded: int, waiting: int) -> str:
    """The footer's sentence on the GPU cells that did not run where the site was built, true to what it shows."""
    if recorded == 0 and waiting == 0:
        return "Every GPU cell ran on this machine."
    if recorded == 0:
        return f"The {waiting} GPU cells did not run here and have no recorded GPU output yet: each says what it needs."
    many = recorded > 1
    shown = f"{recorded} GPU cell{'s' if many else ''} that could not run here show{'' if many else 's'} what a "
    shown += "recorded GPU run printed, labelled with that GPU and date"
    if waiting == 0:
        return shown + "."
    return f"{shown}; {waiting} more have no recorded GPU output yet and say what they need."


def home_page(src: Sources, titles: dict[Path, str], repo_web: str | None) -> str:
    """The home page: the README's opening (what the course is), how to start, and the table of contents."""
    readme = src.root / "README.md"
    intro, title = "", "gpulab"
    if readme.is_file():
        text = readme.read_text(encoding="utf-8")
        head = re.split(r"^## ", text, maxsplit=1, flags=re.M)[0]
        lines = head.splitlines()
        if lines and lines[0].startswith("# "):
            title, lines = lines[0][2:].strip(), lines[1:]
        intro = rewrite_links("\n".join(lines).strip(), readme, src, repo_web)
    rel = {p: p.relative_to(src.root).as_posix() for p in src.pages()}
    first = src.chapters[0] if src.chapters else None
    start = [
        "## How to start",
        "",
        f"- **Read** each chapter here as it ran, with its figures (the foot of each page says where): start with "
        f"[{titles[first]}]({rel[first]})."
        if first
        else "- **Read** the chapters here.",
        "- **Run** a chapter in Colab or Kaggle from the links at the top of its page, or download it."
        if repo_web
        else "- **Run** a chapter: download it from the top of its page and open it in Jupyter (this build names "
        "no GitHub repository, so its pages carry no Colab or Kaggle links).",
        "- **On your own machine**: clone the repository and run `make lab`; it installs what the course needs.",
    ]
    if src.guide:
        start.append(f"- **Teaching a workshop?** Read [{titles[src.guide]}]({rel[src.guide]}).")
    if src.ledger:
        start.append(
            f"- **What the source articles claim**, and what each chapter's run says: "
            f"[the claims ledger]({rel[src.ledger]})."
        )
    tocs = [
        ("Chapters", src.chapters),
        ("For workshops", [p for p in [src.guide, src.ledger] if p]),
        ("Guides", src.docs),
    ]
    toc = []
    for caption, pages in tocs:
        if pages:
            toc += ["", "```{toctree}", f":caption: {caption}", ":maxdepth: 1", "", *[rel[p] for p in pages], "```"]
    return "\n".join([f"# {title}", "", intro, "", *start, *toc, ""])


def stage(
    out: Path,
    src: Sources,
    runs: Callable[[Path], nbformat.NotebookNode],
    *,
    repo_url: str | None,
    branch: str,
    made: str | Callable[[], str],
    say: Callable[[str], None] = print,
) -> None:
    """Write the Sphinx project for ``src`` into ``out`` (emptied first); ``runs(chapter)`` is a chapter's run.

    ``made`` (or the function that gives it, once every chapter ran) opens every page's footer; the footer then says
    what the GPU cells show across the site: how many show a recorded GPU run, and how many none yet."""
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    gh = links.github_repo(repo_url) if repo_url else None
    repo_web = f"https://github.com/{gh[0]}/{gh[1]}" if gh else None
    titles = {
        p: title_of(nbformat.read(p, as_version=4), p.stem) for p in src.chapters + ([src.guide] if src.guide else [])
    }
    if src.ledger:
        titles[src.ledger] = "Claims ledger"
    order = [(p.stem, titles[p]) for p in src.chapters]
    extra = out / "_extra"
    told = False
    gpu_cells = {"recorded": 0, "waiting": 0}
    for i, path in enumerate(src.chapters):
        rel = path.relative_to(src.root)
        (extra / "files").mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, extra / "files" / path.name)
        launch = links.launch_links(repo_url, branch, f"colab/{path.name}")
        if repo_url:
            (extra / "colab").mkdir(parents=True, exist_ok=True)
            nbformat.write(links.colab_edition(path, repo_url), extra / "colab" / path.name)
        if launch.why_not and not told:
            say(f"site: {launch.why_not}.")
            told = True
        bar = launch_bar(index=i, order=order, launch=launch, download=f"../files/{path.name}")
        page = chapter_page(runs(path), path, src, repo_web, bar)
        for kind, n in gpu_cell_counts(page).items():
            gpu_cells[kind] += n
        (out / rel).parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(page, out / rel)
    if src.guide:
        rel = src.guide.relative_to(src.root)
        nb = nbformat.read(src.guide, as_version=4)
        for cell in nb.cells:
            if cell.cell_type == "markdown":
                cell.source = rewrite_links(cell.source, src.guide, src, repo_web)
        (out / rel).parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(nb, out / rel)  # not run: the guide is read, its cells are for the instructor's machine
    for md in [*src.docs, *([src.ledger] if src.ledger else [])]:
        rel = md.relative_to(src.root)
        (out / rel).parent.mkdir(parents=True, exist_ok=True)
        (out / rel).write_text(rewrite_links(md.read_text(encoding="utf-8"), md, src, repo_web), encoding="utf-8")
    (out / "index.md").write_text(home_page(src, titles, repo_web), encoding="utf-8")
    shutil.copy2(HERE / "conf.py", out / "conf.py")
    (out / "_static").mkdir(exist_ok=True)
    for name in ("site.css", "favicon.svg", "search.js"):
        shutil.copy2(HERE / name, out / "_static" / name)
    footer = f"{made() if callable(made) else made} {gpu_footer(**gpu_cells)}".strip()
    settings = {"made": footer, "repo_web": repo_web, "kit": str(HERE.parent)}
    (out / "site.json").write_text(json.dumps(settings, indent=1), encoding="utf-8")
