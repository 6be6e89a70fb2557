"""The package's layers point one way, checked from the source (every import, at any depth in a module)."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parents[1] / "gpulab"
PURE = ["units", "readings", "tables", "config", "visible", "selection", "monitoring/history", "monitoring/limits",
        "monitoring/png", "monitoring/decimate"]
HEAVY = {"torch", "pynvml", "ipywidgets", "matplotlib", "psutil", "IPython", "lightning"}


def _imports(path: Path) -> set[str]:
    """Top-level names of every module imported anywhere in ``path`` (relative imports as ``.name``)."""
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            out.add("." * node.level + (node.module or "").split(".")[0])
    return out


def _modules() -> list[Path]:
    return sorted(p for p in PKG.rglob("*.py") if "__pycache__" not in p.parts)


@pytest.mark.parametrize("name", PURE)
def test_pure_modules_import_nothing_heavy_and_only_pure_siblings(name):
    imports = _imports(PKG / f"{name}.py")
    assert not imports & HEAVY, f"{name} imports {imports & HEAVY}"
    siblings = {i.lstrip(".") for i in imports if i.startswith(".") and i.strip(".")}
    assert siblings <= {p.split("/")[-1] for p in PURE}, f"{name} imports non-pure {siblings}"


def test_only_nvml_imports_pynvml():
    users = [p.relative_to(PKG).as_posix() for p in _modules() if "pynvml" in _imports(p)]
    assert users == ["nvml.py"]


def test_one_ipywidgets_importer_per_view():
    users = [p.relative_to(PKG).as_posix() for p in _modules() if "ipywidgets" in _imports(p)]
    assert users == ["monitoring/view.py", "picker.py"]


def test_modules_stay_small():
    big = {p.relative_to(PKG).as_posix(): n for p in _modules() if (n := len(p.read_text().splitlines())) > 350}
    assert big == {}, "split these into one concept per module"
