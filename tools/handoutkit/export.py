"""A printable chapter as one self-contained HTML file: nbconvert's cells, local styles, MathML, sized code.

Nothing is loaded from the network: the template (``templates/gpulab_handout``) drops nbconvert's MathJax, RequireJS,
Mermaid and widget scripts; math in Markdown becomes MathML (``latex2mathml``), which Chromium draws natively; the
styles are ``handout.css`` and the page size is set by an ``@page`` rule for A4 or US Letter.

Code and text outputs are fitted to the page width by font size, per cell: the longest line that must not wrap
decides the size, between ``MAX_PT`` and ``MIN_PT`` (``MIN_OUT_PT`` for outputs); longer lines wrap — code anywhere,
text only between words. In code every line counts; in outputs, only lines laid out in columns (two spaces inside
them: tables) or short enough to fit at full size, so a long sentence wraps instead of shrinking its whole block.
The sizes are computed here, from the characters, because a printed page cannot scroll.

Why nbconvert by hand and not the website's engine (Sphinx with myst-nb, ``tools/sitekit``): a handout is one
self-contained file per chapter, laid out for paper (``@page``, per-cell font sizes, page breaks) and checked page by
page once printed; the site's pages are screen pages that share a theme, scripts and a search index.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import nbformat
from jinja2 import pass_context
from mistune import BlockParser
from nbconvert import HTMLExporter
from nbconvert.filters.markdown_mistune import IPythonRenderer, MarkdownWithMath, MathBlockParser

__all__ = ["Paper", "PAPERS", "to_html", "markdown_page", "font_pt_for", "HandoutExporter"]

HERE = Path(__file__).resolve().parent
MAX_PT, MIN_PT, MIN_OUT_PT = 8.5, 6.5, 5.5
CHAR_EM = 0.61  # advance of DejaVu Sans Mono / Menlo (0.602 em), rounded up; Consolas is narrower
PT_MM = 25.4 / 72
LONG_INPUT_LINES = 30
WRAP_FROM_CHARS = 200  # a longer line is prose or a long list: it wraps rather than shrinking its whole block


@dataclass(frozen=True)
class Paper:
    name: str
    css_size: str
    width_mm: float
    height_mm: float
    margin_mm: float = 12.0

    @property
    def text_width_mm(self) -> float:
        return self.width_mm - 2 * self.margin_mm - 6.5  # the code box's padding and border, the free band


PAPERS = {"a4": Paper("A4", "A4", 210.0, 297.0), "letter": Paper("US Letter", "letter", 215.9, 279.4)}


def font_pt_for(longest_line: int, paper: Paper, smallest: float = MIN_PT) -> float:
    """The largest size (quarter points, ``smallest``..MAX_PT) at which ``longest_line`` characters fit the width."""
    if longest_line <= 0:
        return MAX_PT
    pt = paper.text_width_mm / (longest_line * CHAR_EM * PT_MM)
    return max(smallest, min(MAX_PT, int(pt * 4) / 4))


def chars_at(pt: float, paper: Paper) -> int:
    return int(paper.text_width_mm / (pt * CHAR_EM * PT_MM))


def _longest(text: str, paper: Paper | None = None) -> int:
    """The longest line that should not wrap: every line of code; in output (``paper`` given), table lines only."""
    lines = [line.expandtabs(4).rstrip() for line in text.splitlines()]
    if paper is not None:
        full = chars_at(MAX_PT, paper)
        lines = [ln for ln in lines if len(ln) <= full or "  " in ln.strip()]
    return max((len(ln) for ln in lines if len(ln) <= WRAP_FROM_CHARS), default=0)


def _output_text(cell: nbformat.NotebookNode) -> str:
    parts = []
    for out in cell.get("outputs", []):
        if out.get("output_type") == "stream":
            parts.append(out.get("text", ""))
        elif out.get("output_type") == "error":
            parts.append("\n".join(out.get("traceback", [])))
        elif "text/html" not in out.get("data", {}) and not any(k.startswith("image/") for k in out.get("data", {})):
            parts.append(out.get("data", {}).get("text/plain", ""))
    return re.sub(r"\x1b\[[0-9;]*m", "", "\n".join(parts))


def size_tags(nb: nbformat.NotebookNode, paper: Paper) -> set[str]:
    """Tag each code cell with its input and output font sizes (``fit-in-775`` = 7.75 pt); return the tags used."""
    used = set()
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        tags = [t for t in cell.metadata.get("tags", []) if not t.startswith("fit-") and t != "long-input"]
        tags.append(f"fit-in-{round(font_pt_for(_longest(cell.source), paper) * 100)}")
        out_pt = font_pt_for(_longest(_output_text(cell), paper), paper, MIN_OUT_PT)
        tags.append(f"fit-out-{round(out_pt * 100)}")
        used.update(tags[-2:])
        if cell.source.count("\n") >= LONG_INPUT_LINES:
            tags.append("long-input")  # may break across pages (a shorter one moves whole to the next page)
        cell.metadata["tags"] = tags
    return used


def size_css(tags: set[str]) -> str:
    rules = []
    for tag in sorted(tags):
        where, hundredths = tag.removeprefix("fit-").split("-")
        target = ".jp-InputArea pre" if where == "in" else ".jp-OutputArea pre"
        rules.append(f".celltag_{tag} {target} {{ font-size: {int(hundredths) / 100}pt; }}")
    return "\n".join(rules)


class _MathMLRenderer(IPythonRenderer):
    """Markdown math as MathML (drawn by the browser itself), instead of ``$...$`` left for MathJax."""

    @staticmethod
    def _mathml(tex: str, display: str) -> str:
        from latex2mathml.converter import convert

        return convert(tex, display=display)

    def inline_math(self, body: str) -> str:
        return self._mathml(body, "inline")

    def block_math(self, body: str) -> str:
        return f"<div class='math-block'>{self._mathml(body, 'block')}</div>"

    def latex_environment(self, name: str, body: str) -> str:
        return self.block_math(f"\\begin{{{name}}}{body}\\end{{{name}}}")


class _LabBlockParser(MathBlockParser):
    """Headings as JupyterLab reads them: ``#`` then a space. nbconvert also takes ``#9158, …`` at the start of a
    wrapped line for a heading (classic Notebook's rule), which JupyterLab, and so the room, shows as text."""

    SPECIFICATION = {**MathBlockParser.SPECIFICATION, "atx_heading": BlockParser.SPECIFICATION["atx_heading"]}


class HandoutExporter(HTMLExporter):
    """nbconvert's HTML exporter with the handout template, no prompts, and MathML for math."""

    def __init__(self, **kw: object) -> None:
        super().__init__(
            template_name="gpulab_handout",
            extra_template_basedirs=[str(HERE / "templates")],
            exclude_input_prompt=True,
            exclude_output_prompt=True,
            **kw,
        )

    @pass_context
    def markdown2html(self, context, source):  # type: ignore[override]  # a Jinja filter, as nbconvert's
        cell = context.get("cell", {})
        renderer = _MathMLRenderer(
            escape=False,
            attachments=cell.get("attachments", {}),
            embed_images=True,
            path=context.get("resources", {}).get("metadata", {}).get("path", ""),
            anchor_link_text=self.anchor_link_text,
            exclude_anchor_links=True,
        )
        return MarkdownWithMath(renderer=renderer, block=_LabBlockParser()).render(source)


def page_css(paper: Paper, footer: str) -> str:
    quoted = footer.replace("\\", "\\\\").replace('"', '\\"')
    return (
        f"@page {{ size: {paper.css_size}; margin: 12mm {paper.margin_mm}mm 14mm; "
        f'@bottom-left {{ content: "{quoted}"; font: 7pt sans-serif; color: #777; }} '
        '@bottom-right { content: "page " counter(page) " of " counter(pages); font: 7pt sans-serif; '
        "color: #777; } }"
    )


def to_html(nb: nbformat.NotebookNode, *, title: str, made: str, edition: str, paper: Paper) -> str:
    """The handout page for an executed (and frozen, see ``static``) notebook."""
    nb = nbformat.from_dict(nb)  # a copy: the size tags stay out of the caller's notebook
    nb.metadata["gpulab_handout"] = {"title": title, "made": made, "edition": edition}
    tags = size_tags(nb, paper)
    css = "\n".join(
        [
            (HERE / "handout.css").read_text(encoding="utf-8"),
            size_css(tags),
            page_css(paper, f"{title} · {edition} edition"),
        ]
    )
    body, _ = HandoutExporter().from_notebook_node(nb, resources={"handout_css": css})
    return body


_CELL_LINK = re.compile(r"\]\((\d{2}_[a-z0-9_]+)\.ipynb#cell-id=")
_PAGE_STYLE = "<style>td:first-child { white-space: nowrap; }</style>\n"  # a row's number stays on one line


def markdown_page(text: str) -> tuple[nbformat.NotebookNode, str]:
    """A Markdown page of ``notebooks/`` (the claims ledger) as a one-cell notebook for ``to_html``, and its title.

    Links to a chapter's cell, ``NN_x.ipynb#cell-id=ID`` (what JupyterLab opens), become ``NN_x.html#cell-id=ID``:
    the chapter's handout beside it, where nbconvert gives every cell the HTML id ``cell-id=ID``.
    """
    title = next((line[2:].strip() for line in text.splitlines() if line.startswith("# ")), "")
    source = _PAGE_STYLE + _CELL_LINK.sub(r"](\1.html#cell-id=", text)
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(source)])
    return nb, title
