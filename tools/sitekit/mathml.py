"""Sphinx math as MathML, drawn by the browser itself: no page loads MathJax (Sphinx's default fetches it from a CDN,
and a site that must open offline cannot). The handouts do the same for print (``handoutkit.export``)."""

from __future__ import annotations

from docutils import nodes
from latex2mathml.converter import convert


def _inline(self, node: nodes.Element) -> None:
    self.body.append(convert(node.astext(), display="inline"))
    raise nodes.SkipNode


def _block(self, node: nodes.Element) -> None:
    self.body.append(f"<div class='math-block'>{convert(node.astext(), display='block')}</div>")
    raise nodes.SkipNode


def setup(app):  # a Sphinx extension
    app.add_html_math_renderer("mathml", (_inline, None), (_block, None))
    return {"parallel_read_safe": True, "parallel_write_safe": True}
