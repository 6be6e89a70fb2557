"""The one table object every single-table result renders through, as text and as HTML."""

from __future__ import annotations

from gpulab.core.tables import Table, TableView


def test_text_has_title_aligned_columns_and_notes():
    t = Table(("name", "GiB"), [["T4", 15], ["A100 80GB", 80]], title="GPUs", notes=["note: described"])
    assert str(t).splitlines() == [
        "GPUs",
        "  name       GiB",
        "  ---------  ---",
        "  T4         15",
        "  A100 80GB  80",
        "note: described",
    ]


def test_html_escapes_and_captions_and_an_empty_table_says_so():
    t = Table(("a",), [["<b>"]], title="x & y", notes=["1 < 2"])
    html = t._repr_html_()
    assert "&lt;b&gt;" in html and "x &amp; y</caption>" in html and "<p>1 &lt; 2</p>" in html
    empty = Table(("a",), [], title="map", empty="no GPU visible")
    assert str(empty) == "map\n  no GPU visible" and "<p>no GPU visible</p>" in empty._repr_html_()


def test_a_result_gets_both_renderings_from_its_table():
    class Result(TableView):
        def table(self) -> Table:
            return Table(("k",), [[1]], title="r")

    assert str(Result()) == "r\n  k\n  -\n  1" and "<caption" in Result()._repr_html_()


def test_a_dataclass_result_shows_its_table_as_text_in_ipython():
    """IPython picks the first class in the MRO with _repr_pretty_ or __repr__; @dataclass adds a __repr__."""
    from dataclasses import dataclass

    from IPython.lib.pretty import pretty

    from gpulab.core.tables import Table, TableView

    @dataclass(frozen=True)
    class Result(TableView):
        value: int

        def table(self) -> Table:
            return Table(["value"], [[self.value]], title="a result")

    shown = pretty(Result(7))
    assert shown.startswith("a result") and "value" in shown and "Result(value=7)" not in shown
    assert repr(Result(7)).endswith("Result(value=7)"), "repr() still shows the fields"
