"""Plain-text and HTML tables (pure). Every gpulab result renders both ways: ``__str__`` and ``_repr_html_``."""

from __future__ import annotations

import html
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["text_table", "html_table", "html_with_code", "Table", "TableView"]


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


def html_with_code(text: str) -> str:
    """``text`` as escaped HTML in which each `backticked` span is set as code, instead of showing its backticks."""
    return re.sub(r"`([^`]+)`", r"<code>\1</code>", html.escape(text))


@dataclass(frozen=True)
class Table:
    """A titled table with notes under it, rendered as plain text (``str``) and HTML (``_repr_html_``) alike.

    ``empty`` replaces the table when there are no rows (``"no GPU visible"``). Results that are one table return it
    from ``table()`` and inherit their two renderings from ``TableView``.
    """

    headers: Sequence[str]
    rows: Sequence[Sequence[object]]
    title: str | None = None
    notes: Sequence[str] = ()
    empty: str | None = None

    def _is_empty(self) -> bool:
        return self.empty is not None and not self.rows

    def __str__(self) -> str:
        body = f"  {self.empty}" if self._is_empty() else text_table(self.headers, self.rows, indent="  ")
        return "\n".join(([self.title] if self.title else []) + [body, *self.notes])

    def _repr_html_(self) -> str:
        if self._is_empty():
            head = f"<p><b>{html.escape(self.title)}</b></p>" if self.title else ""
            body = head + f"<p>{html.escape(self.empty or '')}</p>"
        else:
            body = html_table(self.headers, self.rows, caption=self.title)
        return body + "".join(f"<p>{html.escape(n)}</p>" for n in self.notes)


class TableView:
    """Mixin for a result that is one table: define ``table()``; ``print`` and Jupyter both show it."""

    def table(self) -> Table:
        """The result as one ``Table``; each result class defines it, and ``print`` and Jupyter show it."""
        raise NotImplementedError

    def __str__(self) -> str:
        return str(self.table())

    def _repr_html_(self) -> str:
        return self.table()._repr_html_()

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:
        p.text(str(self))

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """IPython's text/plain is the table, not the fields: IPython takes the first class in the MRO that defines
        ``_repr_pretty_`` or ``__repr__``, and ``@dataclass`` gives each subclass its own ``__repr__``, so every
        subclass gets ``_repr_pretty_`` in its own namespace (``repr()`` still shows the fields)."""
        super().__init_subclass__(**kwargs)
        if "_repr_pretty_" not in cls.__dict__:
            cls._repr_pretty_ = TableView._repr_pretty_
