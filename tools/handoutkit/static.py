"""Make an executed chapter printable: widgets become their final state as plain HTML; maintainers' lines go.

Why by hand: nbconvert shows widgets by loading ``@jupyter-widgets/html-manager`` from a CDN and running it as
JavaScript, which an offline handout cannot do and a printed page cannot show; without it, a reader sees the
placeholder text (``Image(value=b'')``, ``VBox(children=...)``). The widget state that nbclient saved
(``store_widget_state``) already holds every model's final values, so each widget is drawn from it as static HTML:
boxes as rows and columns, a checkbox as ☑/☐, a progress bar as a bar, an image as its PNG. A widget whose model is
gone (closed when its cell ended, as the live monitor's image is) has nothing left to show and is left out.

The maintainers' settings (``fast mode: True``) mean nothing on paper: the statement that prints them and the lines
it printed are left out, and the handout's header says in words how the run was made.
"""

from __future__ import annotations

import ast
import html
import re
from collections.abc import Mapping
from typing import Any

import nbformat

__all__ = ["freeze_widgets", "widget_html", "drop_settings_lines", "WIDGET_VIEW", "WIDGET_STATE"]

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"
_REF = "IPY_MODEL_"
_BAR_COLOURS = {"success": "#5cb85c", "info": "#5bc0de", "warning": "#f0ad4e", "danger": "#d9534f", "": "#2196f3"}
SETTINGS_CALL = re.compile(r"\bfast_mode\(\)")
SETTINGS_TEXT = re.compile(r"\bfast mode: (True|False)\b")


def _e(text: Any) -> str:
    return html.escape(str(text))


class _Renderer:
    def __init__(self, state: Mapping[str, Any]) -> None:
        self.state = state

    def model(self, ref: str) -> dict[str, Any] | None:
        return self.state.get(ref.removeprefix(_REF))

    def style(self, s: Mapping[str, Any]) -> str:
        layout = self.model(s.get("layout") or "")
        width = (layout or {}).get("state", {}).get("width")
        return f" style='width:{_e(width)};flex:0 1 auto'" if width else ""  # shrinks on a narrow page

    def render(self, ref: str) -> str:
        entry = self.model(ref)
        if entry is None:
            return ""
        name = entry.get("model_name", "")
        s = entry.get("state", {})
        desc = (
            f"<span class='w-desc'>{_e(s['description'])}</span> "
            if s.get("description") and not name.startswith(("Checkbox", "Button", "ToggleButton"))
            else ""
        )
        body = self._body(name.removesuffix("Model"), s, entry)
        if not body and name == "ImageModel":
            return ""  # an image widget that never got a picture shows nothing, not a placeholder
        return f"<div class='w w-{_e(name.removesuffix('Model').lower())}'{self.style(s)}>{desc}{body}</div>"

    def _body(self, kind: str, s: Mapping[str, Any], entry: Mapping[str, Any]) -> str:
        if kind in ("Box", "VBox", "HBox", "GridBox", "Accordion", "Tab", "Stack"):
            inner = "".join(self.render(c) for c in s.get("children", []))
            return f"<div class='w-{'row' if kind == 'HBox' else 'col'}'>{inner}</div>"
        if kind in ("HTML", "HTMLMath"):
            return str(s.get("value", ""))
        if kind == "Label":
            return _e(s.get("value", ""))
        if kind in ("Checkbox", "ToggleButton", "Valid"):
            mark = "☑" if s.get("value") else "☐"
            off = " w-off" if s.get("disabled") else ""
            return f"<span class='w-check{off}'>{mark} {_e(s.get('description', ''))}</span>"
        if kind == "Button":
            cls = f"w-button w-{_e(s.get('button_style') or 'plain')}{' w-off' if s.get('disabled') else ''}"
            return f"<span class='{cls}'>{_e(s.get('description', ''))}</span>"
        if kind in ("FloatProgress", "IntProgress"):
            lo, hi, v = float(s.get("min", 0)), float(s.get("max", 100)), float(s.get("value", 0))
            frac = 0.0 if hi <= lo else min(max((v - lo) / (hi - lo), 0.0), 1.0)
            colour = _BAR_COLOURS.get(s.get("bar_style") or "", _BAR_COLOURS[""])
            return f"<span class='w-bar'><span style='width:{frac * 100:.1f}%;background:{colour}'></span></span>"
        if kind == "Image":
            data = next((b["data"] for b in entry.get("buffers", []) if b.get("path") == ["value"]), None)
            if not data:
                return ""
            return f"<img alt='' src='data:image/{_e(s.get('format', 'png'))};base64,{data}'>"
        if kind in ("Dropdown", "Select", "RadioButtons", "ToggleButtons", "SelectionSlider"):
            labels, index = s.get("_options_labels", []), s.get("index")
            chosen = labels[index] if isinstance(index, int) and 0 <= index < len(labels) else "—"
            return f"<span class='w-value'>{_e(chosen)}</span>"
        if kind == "Output":
            return "".join(_output_html(o) for o in s.get("outputs", []))
        if "value" in s and not isinstance(s["value"], (dict, list)):  # sliders, text fields, numbers
            return f"<span class='w-value'>{_e(s['value'])}</span>"
        return f"<span class='w-value'>({_e(kind)})</span>"


def _output_html(out: Mapping[str, Any]) -> str:
    if out.get("output_type") == "stream":
        return f"<pre>{_e(out.get('text', ''))}</pre>"
    data = out.get("data", {})
    if "text/html" in data:
        return "".join(data["text/html"]) if isinstance(data["text/html"], list) else data["text/html"]
    if "image/png" in data:
        return f"<img alt='' src='data:image/png;base64,{data['image/png']}'>"
    return f"<pre>{_e(data.get('text/plain', ''))}</pre>" if "text/plain" in data else ""


def widget_html(model_id: str, state: Mapping[str, Any]) -> str:
    """The final state of widget ``model_id`` (and its children) as static HTML; "" if its model was not saved."""
    return _Renderer(state).render(model_id)


def freeze_widgets(nb: nbformat.NotebookNode) -> int:
    """Replace every widget view by its saved final state (HTML), drop views with no saved model; return how many
    were drawn. The notebook's widget metadata is removed, so no exporter adds widget JavaScript."""
    state = nb.metadata.get("widgets", {}).get(WIDGET_STATE, {}).get("state", {})
    drawn = 0
    for cell in (c for c in nb.cells if c.cell_type == "code"):
        kept = []
        for out in cell.outputs:
            view = out.get("data", {}).get(WIDGET_VIEW)
            if view is None:
                kept.append(out)
                continue
            body = widget_html(view.get("model_id", ""), state)
            if body:
                out["data"] = {
                    "text/html": f"<div class='gpulab-widget'>{body}</div>",
                    "text/plain": out["data"].get("text/plain", ""),
                }
                kept.append(out)
                drawn += 1
        cell.outputs = kept
    nb.metadata.pop("widgets", None)
    return drawn


def _is_statement(line: str) -> bool:
    try:
        tree = ast.parse(line.strip())
    except SyntaxError:
        return False
    return len(tree.body) == 1 and isinstance(tree.body[0], ast.Expr)


def drop_settings_lines(nb: nbformat.NotebookNode) -> int:
    """Leave out the one-line ``print(... fast_mode() ...)`` statements and the lines they printed; return how many
    source lines went. A statement over several lines is kept whole (cutting it would show broken code)."""
    dropped = 0
    for cell in nb.cells:
        if cell.cell_type != "code" or not SETTINGS_CALL.search(cell.source):
            continue
        lines = cell.source.split("\n")
        keep = [ln for ln in lines if not (SETTINGS_CALL.search(ln) and _is_statement(ln))]
        dropped += len(lines) - len(keep)
        cell.source = "\n".join(keep)
        for out in cell.get("outputs", []):
            if out.get("output_type") == "stream":
                out["text"] = "".join(
                    ln for ln in out["text"].splitlines(keepends=True) if not SETTINGS_TEXT.search(ln)
                )
        cell["outputs"] = [o for o in cell["outputs"] if o.get("output_type") != "stream" or o["text"]]
    return dropped
