"""Each subpackage's face: the names the chapters use, imported on first use, and chapters that import only those.

A chapter imports ``from gpulab.scaling import speedup``, never ``from gpulab.scaling.cost import speedup``: a module
file is where a name lives today, the subpackage is where a learner finds it. Importing a subpackage loads nothing
heavy (``gpulab.core.lazy``). A module's name says what it holds: no two modules share a name, and no subpackage
exports a name that is also one of its modules (``import gpulab.<package>.<name> as m`` would give the function, and
importing the module would hide the function).
"""

from __future__ import annotations

import ast
import functools
import json
import re
import sys
from pathlib import Path

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


def _exports(package: str, root: Path = PKG) -> dict[str, str]:
    """name -> module file of ``gpulab.<package>``'s ``export_lazily`` call, read from its source."""
    tree = ast.parse((root / package / "__init__.py").read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "export_lazily":
            return ast.literal_eval(node.args[1])
    return {}


def _face(package: str) -> set[str]:
    """The names ``gpulab.<package>`` exports: its lazy ones, or the ``__all__`` of an ``__init__`` that binds them."""
    tree = ast.parse((PKG / package / "__init__.py").read_text())
    listed = [
        ast.literal_eval(n.value)
        for n in tree.body
        if isinstance(n, ast.Assign) and any(getattr(t, "id", "") == "__all__" for t in n.targets)
    ]
    return set(_exports(package)).union(*listed)


def test_every_subpackage_says_what_it_holds():
    empty = [p for p in SUBPACKAGES if not ast.get_docstring(ast.parse((PKG / p / "__init__.py").read_text()))]
    assert not empty, f"{empty}: say in the __init__ what the subpackage holds and where it is taught"


EXPORTING = [p for p in SUBPACKAGES if _exports(p)]


@functools.cache
def _faces_as_imported() -> dict[str, str]:
    """For each exporting subpackage, in one fresh interpreter (torch and Lightning imported once): its modules
    imported first, by their module paths as another module of gpulab would, then each exported name looked up on the
    package. "ok", or what was wrong. Importing a module sets the package's attribute of that name for the rest of the
    process, so the order of the packages cannot hide a name that a module shadows."""
    code = (
        f"import importlib, json, types\nfaces = { ({p: _exports(p) for p in EXPORTING})!r}\nout = {{}}\n"
        "for package, exports in faces.items():\n"
        "    for m in sorted(set(exports.values())): importlib.import_module(f'gpulab.{package}.{m}')\n"
        "    p = importlib.import_module(f'gpulab.{package}')\n"
        "    wrong = [(n, repr(getattr(p, n))) for n, m in exports.items()\n"
        "             if getattr(p, n) is not getattr(importlib.import_module(f'gpulab.{package}.{m}'), n)\n"
        "             or isinstance(getattr(p, n), types.ModuleType)]\n"
        "    if sorted(p.__all__) != sorted(exports) or not set(exports) <= set(dir(p)):\n"
        "        wrong.append(('__all__', sorted(p.__all__)))\n"
        "    out[package] = 'ok' if not wrong else repr(wrong)\n"
        "print(json.dumps(out))\n"
    )
    return json.loads(_run(code).strip().splitlines()[-1])


@pytest.mark.parametrize("package", EXPORTING)
def test_each_exported_name_lives_in_the_module_named_and_is_that_object(package):
    exports = _exports(package)
    missing = [f"{m}.py" for m in set(exports.values()) if not (PKG / package / f"{m}.py").exists()]
    assert not missing, f"gpulab.{package} names module files that do not exist: {missing}"
    assert _faces_as_imported()[package] == "ok", f"gpulab.{package}: {_faces_as_imported()[package]}"


def test_importing_a_subpackage_loads_nothing_heavy():
    code = (
        f"import sys, importlib\nfor p in {SUBPACKAGES!r}: importlib.import_module('gpulab.' + p)\n"
        f"print([m for m in {HEAVY!r} if m in sys.modules])"
    )
    assert _run(code).strip() == "[]"


def names_like_modules(root: Path) -> list[str]:
    """``package.name`` for each name a subpackage of ``root`` exports that is also one of that subpackage's modules."""
    return sorted(
        f"{p.parent.name}.{name}"
        for p in root.glob("*/__init__.py")
        for name in _exports(p.parent.name, root)
        if (p.parent / f"{name}.py").exists()
    )


def shared_module_names(root: Path) -> dict[str, list[str]]:
    """Each module file name (``__init__.py`` aside) found in more than one folder under ``root``, with the folders."""
    where: dict[str, list[str]] = {}
    for path in sorted(root.rglob("*.py")):
        if path.name != "__init__.py" and "__pycache__" not in path.parts:
            where.setdefault(path.name, []).append(path.parent.relative_to(root).as_posix())
    return {name: folders for name, folders in where.items() if len(folders) > 1}


def test_no_subpackage_exports_a_name_that_is_also_one_of_its_modules():
    assert names_like_modules(PKG) == [], "name the module after what it holds (dataparallel/wrappers.py: unwrap)"


def test_no_two_modules_share_a_name():
    assert shared_module_names(PKG) == {}, "name each module after what it holds (lightning/flag_history.py)"


def test_the_module_name_rules_can_fail(tmp_path):
    for folder, files in {
        "one": {
            "__init__.py": "from gpulab.core.lazy import export_lazily\n"
            "export_lazily(__name__, {'tool': 'tool', 'other': 'helpers'})\n",
            "tool.py": "",
            "helpers.py": "",
            "history.py": "",
        },
        "two": {"__init__.py": "", "history.py": ""},
    }.items():
        (tmp_path / folder).mkdir()
        for name, text in files.items():
            (tmp_path / folder / name).write_text(text)
    assert names_like_modules(tmp_path) == ["one.tool"]
    assert shared_module_names(tmp_path) == {"history.py": ["one", "two"]}


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
    assert module_file_imports("from gpulab.workload import train, mlp\n") == []  # workload's train() is exported


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.stem)
def test_no_chapter_imports_a_module_file_of_gpulab(chapter):
    cells = [c for c in json.loads(chapter.read_text())["cells"] if c["cell_type"] == "code"]
    found = sorted({m for c in cells for m in module_file_imports("".join(c["source"]))})
    assert not found, f"{chapter.name} imports {found}: import from the subpackage (gpulab.<package>) instead"
