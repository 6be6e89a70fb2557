"""What a cell shows for a gpulab object that is a widget: the widget for JupyterLab, plain text for the rest (pure).

Built from the widget model's id rather than taken from the widget's own ``_repr_mimebundle_``, which ipywidgets 8 has
and ipywidgets 7.7 (Colab's) lacks: ``'VBox' object has no attribute '_repr_mimebundle_'``. Front ends of both render
this view message (widget protocol 2.0, unchanged from ipywidgets 7.0 to 8.x); a front end without widgets (nbconvert,
GitHub, a terminal) shows ``text/plain``, so the text says everything the widget shows.
"""

from __future__ import annotations

__all__ = ["WIDGET_VIEW_MIME", "widget_bundle"]

WIDGET_VIEW_MIME = "application/vnd.jupyter.widget-view+json"


def widget_bundle(model_id: str, text: str) -> dict[str, object]:
    """The display bundle for widget ``model_id`` with ``text`` as its plain-text form."""
    return {"text/plain": text, WIDGET_VIEW_MIME: {"version_major": 2, "version_minor": 0, "model_id": model_id}}
