"""The package's layers point one way, checked from the source (every import, at any depth in a module).

pure (imports nothing heavy, and of gpulab only other pure modules) <- probes (the machine, processes) <- views.
A probe never imports a view; exactly one module talks to NVML, one imports ipywidgets for each view, one imports
Lightning. Subpackages are named by topic; these lists say which layer each module is in.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parents[1] / "gpulab"
PURE = ["core/units", "core/readings", "core/arguments", "core/tables", "core/settings", "core/widget_view", "placement/visible",
        "placement/selection", "placement/steps", "monitoring/history", "monitoring/limits", "monitoring/png",
        "monitoring/decimate", "monitoring/panels", "monitoring/room",
        "lightning/call", "lightning/history", "lightning/draft", "lightning/devices", "lightning/strategy",
        "lightning/flags", "lightning/translation", "exercises/feedback", "exercises/check"]
VIEWS = ["__main__", "machine/report", "placement/picker", "monitoring/view", "monitoring/monitor", "monitoring/figure",
         "monitoring/blit", "monitoring/watch", "monitoring/recorded", "lightning/runtime"]
HEAVY = {"torch", "pynvml", "ipywidgets", "matplotlib", "psutil", "IPython", "lightning"}


def _imports(path: Path) -> set[str]:
    """Every module imported anywhere in ``path``, as absolute dotted names (relative ones resolved)."""
    package = ["gpulab"] + list(path.relative_to(PKG).parent.parts)
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                out.add(".".join(base + ([node.module] if node.module else [])))
            else:
                out.add(node.module or "")
    return out


def _modules() -> list[Path]:
    return sorted(p for p in PKG.rglob("*.py") if "__pycache__" not in p.parts)


def _name(path: Path) -> str:
    return path.relative_to(PKG).with_suffix("").as_posix()


def _gpulab_modules(imports: set[str]) -> set[str]:
    return {i[len("gpulab."):].replace(".", "/") for i in imports if i.startswith("gpulab.")}


@pytest.mark.parametrize("name", PURE)
def test_pure_modules_import_nothing_heavy_and_only_pure_modules(name):
    imports = _imports(PKG / f"{name}.py")
    heavy = {i.split(".")[0] for i in imports} & HEAVY
    assert not heavy, f"{name} imports {heavy}"
    assert _gpulab_modules(imports) <= set(PURE), f"{name} imports non-pure {_gpulab_modules(imports) - set(PURE)}"


@pytest.mark.parametrize("path", [p for p in _modules() if _name(p) not in VIEWS and p.name != "__init__.py"],
                         ids=_name)
def test_no_probe_or_pure_module_imports_a_view(path):
    assert not _gpulab_modules(_imports(path)) & set(VIEWS)


def test_only_nvml_imports_pynvml():
    users = [_name(p) for p in _modules() if any(i.split(".")[0] == "pynvml" for i in _imports(p))]
    assert users == ["machine/nvml"]


def test_one_ipywidgets_importer_per_view():
    users = [_name(p) for p in _modules() if any(i.split(".")[0] == "ipywidgets" for i in _imports(p))]
    assert users == ["monitoring/view", "monitoring/watch", "placement/picker"]


def test_lightning_is_imported_in_one_module_at_most():
    users = [_name(p) for p in _modules() if any(i.split(".")[0] in ("lightning", "pytorch_lightning")
                                                  for i in _imports(p))]
    assert len(users) <= 1, users


def test_no_utils_bucket_and_no_flat_modules_beyond_the_entry_points():
    top = sorted(p.name for p in PKG.glob("*.py"))
    assert top == ["__init__.py", "__main__.py", "testing.py"]
    assert not [p for p in PKG.rglob("*util*")]


def test_modules_stay_small():
    big = {_name(p): n for p in _modules() if (n := len(p.read_text().splitlines())) > 350}
    assert big == {}, "split these into one concept per module"
