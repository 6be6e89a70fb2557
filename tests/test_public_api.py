"""The public API as a learner meets it: one name per meaning, old spellings refused by name, cited names importable.

``machine=`` always says which machine (a reader, or a preset name such as ``'workshop-8'``), ``gpus=`` always says
which GPUs (indices, UUIDs, or GPUs already read), ``reservations=`` always the reservations folder. A
docstring, a chapter, the README or the claims ledger that cites ``gpulab.x.y`` can be followed: the name exists there.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import json
import re
from pathlib import Path

import pytest

import gpulab
from gpulab.monitoring import Monitor
from gpulab.server import watch

ROOT = Path(__file__).resolve().parents[1]
PUBLIC = {name: getattr(gpulab, name) for name in gpulab.__all__ if callable(getattr(gpulab, name))} | {
    f"server.watch.{n}": getattr(watch, n) for n in ("watch_gpus", "watch_terminal", "read_server", "ServerWatch")
}
OLD_NAMES = {"reader", "directory"}  # renamed machine= and reservations=
# the only public ** parameters, each a pass-through whose keys are another API's names
PASS_THROUGH = {
    ("translate_trainer", "kwargs"),
    ("trainer_kwargs", "overrides"),
    ("MonitorCallback", "monitor_options"),
    ("patched_environ", "values"),
}


def _parameters():
    for name, fn in PUBLIC.items():
        if inspect.isclass(fn) and issubclass(fn, BaseException):
            continue
        for p in inspect.signature(fn).parameters.values():
            yield name, p


def _annotation(p: inspect.Parameter) -> str:
    return p.annotation if isinstance(p.annotation, str) else str(p.annotation)


def test_the_walk_sees_every_function_that_takes_a_machine_gpus_or_reservations():
    names = {(fn, p.name) for fn, p in _parameters()}
    assert {
        ("devices", "machine"),
        ("environment_report", "machine"),
        ("explain", "machine"),
        ("choose_gpus", "gpus"),
        ("reserve_gpus", "machine"),
        ("GpuPicker", "machine"),
        ("monitor", "machine"),
        ("visible_map", "gpus"),
        ("server.watch.watch_gpus", "machine"),
        ("monitor", "gpus"),
        ("set_visible_devices", "gpus"),
        ("reserve_gpus", "reservations"),
        ("GpuPicker", "reservations"),
        ("server.watch.watch_gpus", "reservations"),
    } <= names


@pytest.mark.parametrize("fn, p", list(_parameters()), ids=lambda v: v if isinstance(v, str) else v.name)
def test_one_name_per_meaning(fn, p):
    kind = _annotation(p)
    assert p.name not in OLD_NAMES, f"{fn}({p.name}=): renamed machine= and reservations="
    assert ("GpuReader" in kind) == (p.name == "machine"), f"{fn}({p.name}: {kind}): a machine is always machine="
    if "GpuInfo" in kind:
        assert p.name == "gpus", f"{fn}({p.name}: {kind}): GPUs already read are gpus="
    if p.name == "gpus":
        assert "int" in kind or "GpuInfo" in kind, f"{fn}(gpus: {kind}): gpus= takes GPU indices, UUIDs or GpuInfos"
    if p.name == "reservations":
        assert "str" in kind and "PathLike" in kind or kind == "str | None", f"{fn}(reservations: {kind})"
    if p.kind is p.VAR_KEYWORD:
        assert (fn, p.name) in PASS_THROUGH, f"{fn}(**{p.name}) hides its parameters from Tab and ?"


def test_monitor_writes_its_parameters_out():
    sig = inspect.signature(gpulab.monitor)
    assert not [p for p in sig.parameters.values() if p.kind is p.VAR_KEYWORD]
    assert list(sig.parameters)[:3] == ["title", "machine", "gpus"]
    assert set(sig.parameters) == set(inspect.signature(Monitor).parameters)


DOTTED = re.compile(r"(?<![\w./-])gpulab(?:\.[A-Za-z_]\w*)+")
FROM_IMPORT = re.compile(r"^\s*from (gpulab[\w.]*) import \(?([\w, ]+)", re.M)


def resolves(name: str) -> bool:
    """``gpulab.a.b.c`` names something: the longest importable module prefix, then attributes."""
    parts = name.split(".")
    for k in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:k]))
        except ImportError:
            continue
        try:
            for a in parts[k:]:
                obj = getattr(obj, a)
        except AttributeError:
            return False
        return True
    return False


def _cited() -> set[tuple[str, str]]:
    out = set()
    for p in sorted((ROOT / "gpulab").rglob("*.py")):
        for node in ast.walk(ast.parse(p.read_text())):
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                out |= {(p.relative_to(ROOT).as_posix(), m) for m in DOTTED.findall(ast.get_docstring(node) or "")}
    texts = {
        f"notebooks/{nb.name}": "\n".join("".join(c["source"]) for c in json.loads(nb.read_text())["cells"])
        for nb in sorted((ROOT / "notebooks").glob("*.ipynb"))
    }
    texts |= {f: (ROOT / f).read_text() for f in ("README.md", "notebooks/claims_ledger.md")}
    texts |= {f"docs/{p.name}": p.read_text() for p in sorted((ROOT / "docs").glob("*.md"))}
    for where, text in texts.items():
        out |= {(where, m) for m in DOTTED.findall(text)}
        out |= {
            (where, f"{module}.{n.strip()}")
            for module, names in FROM_IMPORT.findall(text)
            for n in names.split(",")
            if n.strip()
        }
    return out


def test_every_cited_gpulab_name_resolves():
    cited = _cited()
    assert len(cited) > 50, "the scan found too few citations to mean anything"
    assert [c for c in sorted(cited) if not resolves(c[1])] == []


def test_the_citation_check_can_fail():
    assert resolves("gpulab.ranks.launcher.last_launch") and resolves("gpulab.monitor")
    assert not resolves("gpulab.parallel.last_launch") and not resolves("gpulab.ranks.launcher.no_such_name")


def test_no_export_is_hidden_by_a_subpackage_of_the_same_name():
    """Importing ``gpulab.x.y`` sets ``gpulab.x`` to the subpackage, which would hide an exported ``gpulab.x``."""
    subpackages = {p.parent.name for p in (ROOT / "gpulab").glob("*/__init__.py")}
    assert not subpackages & set(gpulab.__all__)
    for sub in subpackages:
        importlib.import_module(f"gpulab.{sub}")
    assert callable(gpulab.launch) and callable(gpulab.check) and callable(gpulab.monitor)
