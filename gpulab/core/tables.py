"""Plain-text and HTML tables (pure). Every gpulab result renders both ways: ``__str__`` and ``_repr_html_``."""
from __future__ import annotations

import html
from collections.abc import Sequence

__all__ = ["text_table", "html_table"]


def text_table(headers: Sequence[str], rows: Sequence[Sequence[object]], *, indent: str = "") -> str:
    """Columns padded to width, a rule under the header; cells are ``str()``-ed."""
    cells = [[str(h) for h in headers]] + [[str(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(indent + line for line in lines)


def html_table(headers: Sequence[str], rows: Sequence[Sequence[object]], *, caption: str | None = None) -> str:
    """A small self-styled ``<table>`` (escaped), readable in JupyterLab, nbconvert HTML and printed handouts."""
    head = "".join(f"<th style='text-align:left;padding:2px 8px'>{html.escape(str(h))}</th>" for h in headers)
    body = "".join(
        "<tr>" + "".join(f"<td style='text-align:left;padding:2px 8px'>{html.escape(str(c))}</td>" for c in r) + "</tr>"
        for r in rows
    )
    cap = f"<caption style='text-align:left;font-weight:bold'>{html.escape(caption)}</caption>" if caption else ""
    return f"<table style='border-collapse:collapse'>{cap}<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
