"""Each subpackage's face: the names the chapters use, imported on first use, and chapters that import only those.

A chapter imports ``from gpulab.scaling import speedup``, never ``from gpulab.scaling.cost import speedup``: a module
file is where a name lives today, the subpackage is where a learner finds it. Importing a subpackage loads nothing
heavy (``gpulab.core.lazy``), and a name that is also its module's name (``dataparallel.gradients``) stays the
function whichever module was imported first.
"""
from __future__ import annotations

import ast
import json
import re
import sys
from pathlib import Path
from types import ModuleType

import pytest

from tests import process_group

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "gpulab"
CHAPTERS = sorted((ROOT / "notebooks").glob("*.ipynb"))
SUBPACKAGES = sorted(p.parent.name for p in PKG.glob("*/__init__.py"))
HEAVY = ("torch", "ipywidgets", "matplotlib", "IPython", "lightning", "pynvml")


def _run(code: str) -> str:
    out = process_group.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert out.returncode == 0, out.stderr
    return out.stdout


def _exports(package: str) -> dict[str, str]:
    """name -> module file of ``gpulab.<package>``'s ``export_lazily`` call, read from its source."""
    tree = ast.parse((PKG / package / "__init__.py").read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "export_lazily":
            return ast.literal_eval(node.args[1])
    return {}


def _face(package: str) -> set[str]:
    """The names ``gpulab.<package>`` exports: its lazy ones, or the ``__all__`` of an ``__init__`` that binds them."""
    tree = ast.parse((PKG / package / "__init__.py").read_text())
    listed = [ast.literal_eval(n.value) for n in tree.body if isinstance(n, ast.Assign)
              and any(getattr(t, "id", "") == "__all__" for t in n.targets)]
    return set(_exports(package)).union(*listed)


def test_every_subpackage_says_what_it_holds():
    empty = [p for p in SUBPACKAGES if not ast.get_docstring(ast.parse((PKG / p / "__init__.py").read_text()))]
    assert not empty, f"{empty}: say in the __init__ what the subpackage holds and where it is taught"


@pytest.mark.parametrize("package", [p for p in SUBPACKAGES if _exports(p)])
def test_each_exported_name_lives_in_the_module_named_and_is_that_object(package):
    exports = _exports(package)
    missing = [f"{m}.py" for m in set(exports.values()) if not (PKG / package / f"{m}.py").exists()]
    assert not missing, f"gpulab.{package} names module files that do not exist: {missing}"
    # each name's module imported first, by the module path as another module of gpulab would: the name must win
    code = (f"import importlib, types\nexports = {exports!r}\n"
            f"for m in sorted(set(exports.values())): importlib.import_module('gpulab.{package}.' + m)\n"
            f"import gpulab.{package} as p\n"
            "for n, m in exports.items():\n"
            f"    v = getattr(p, n); w = getattr(importlib.import_module('gpulab.{package}.' + m), n)\n"
            "    assert v is w and not isinstance(v, types.ModuleType), (n, v)\n"
            "assert sorted(p.__all__) == sorted(exports) and set(exports) <= set(dir(p))\nprint('ok')\n")
    assert _run(code).strip() == "ok"


def test_importing_a_subpackage_loads_nothing_heavy():
    code = (f"import sys, importlib\nfor p in {SUBPACKAGES!r}: importlib.import_module('gpulab.' + p)\n"
            f"print([m for m in {HEAVY!r} if m in sys.modules])")
    assert _run(code).strip() == "[]"


def test_a_name_that_is_also_its_module_needs_the_package_class(tmp_path, monkeypatch):
    """Without ``export_lazily``'s package class, importing the module by its path hides the function behind it."""
    for name, lazy in (("plainpkg", False), ("lazypkg", True)):
        (tmp_path / name).mkdir()
        init = "from gpulab.core.lazy import export_lazily\nexport_lazily(__name__, {'tool': 'tool'})\n" if lazy else \
            "def __getattr__(n):\n    import importlib\n    return getattr(importlib.import_module(__name__ + '.tool'), n)\n"
        (tmp_path / name / "__init__.py").write_text(init)
        (tmp_path / name / "tool.py").write_text("def tool():\n    return 42\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    import lazypkg.tool  # noqa: F401  (the module first, as another module would)
    import plainpkg.tool  # noqa: F401
    from lazypkg import tool as lazy_tool
    from plainpkg import tool as plain_tool
    assert isinstance(plain_tool, ModuleType)
    assert lazy_tool() == 42
    with pytest.raises(AttributeError, match="has no attribute 'nothing'"):
        __import__("lazypkg").nothing
    for name in ("plainpkg", "plainpkg.tool", "lazypkg", "lazypkg.tool"):
        sys.modules.pop(name, None)


_FROM = re.compile(r"^\s*from\s+gpulab\.(\w+)\.(\w+)[\w.]*\s+import\b", re.M)
_IMPORT = re.compile(r"^\s*import\s+gpulab\.(\w+)\.(\w+)", re.M)
_FROM_PACKAGE = re.compile(r"^\s*from\s+gpulab\.(\w+)\s+import\s+\(?([\w\s,]+?)\)?\s*$", re.M)


def module_file_imports(source: str) -> list[str]:
    """Each import in ``source`` (a cell, or a script inside it) that reaches a module file of gpulab rather than a
    subpackage or the top level: ``from gpulab.x.y import …``, ``import gpulab.x.y`` and ``from gpulab.x import y``
    where ``y.py`` is a module of ``x``."""
    found = [f"gpulab.{a}.{b}" for a, b in _FROM.findall(source) + _IMPORT.findall(source)]
    for package, names in _FROM_PACKAGE.findall(source):
        for name in (n.strip().split(" as ")[0] for n in names.split(",")):
            if name and (PKG / package / f"{name}.py").exists() and name not in _face(package):
                found.append(f"gpulab.{package}.{name}")
    return found


def test_the_chapter_import_rule_catches_a_module_file():
    assert module_file_imports("from gpulab.scaling.cost import speedup\n") == ["gpulab.scaling.cost"]
    assert module_file_imports("x = 1\nimport gpulab.ranks.launcher as L\n") == ["gpulab.ranks.launcher"]
    assert module_file_imports("from gpulab.machine import host\n") == ["gpulab.machine.host"]
    assert module_file_imports("from gpulab.dataparallel import (gradients,\n    unwrap)\n") == []
    assert module_file_imports("from gpulab.scaling import speedup\nimport gpulab\nfrom gpulab import launch\n") == []
    assert module_file_imports("from gpulab.workload import fit, mlp\n") == []  # workload's fit() is exported


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.stem)
def test_no_chapter_imports_a_module_file_of_gpulab(chapter):
    cells = [c for c in json.loads(chapter.read_text())["cells"] if c["cell_type"] == "code"]
    found = sorted({m for c in cells for m in module_file_imports("".join(c["source"]))})
    assert not found, f"{chapter.name} imports {found}: import from the subpackage (gpulab.<package>) instead"
