"""The package's floors and layers point one way, checked from the source (every import, at any depth in a module).

Subpackages stand on floors (``FLOORS``): a module imports only its own subpackage and subpackages on lower floors,
so no two subpackages import each other and no import runs back up a floor. Across modules, layers point one way too:
pure (imports nothing heavy, and of gpulab only other pure modules) <- probes (the machine, processes) <- views.
A probe never imports a view; exactly one module talks to NVML, one imports ipywidgets for each view, and Lightning is
imported only by the three Lightning modules whose job needs it. These lists say which layer each module is in.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parents[1] / "gpulab"
# floor 1 is the ground; a subpackage imports only from floors below its own
FLOORS = {
    "core": 1,  # units, readings, settings, CUDA_VISIBLE_DEVICES's grammar: pure
    "machine": 2, "workload": 2,  # what this machine has (NVML, described GPUs, host, CUDA state); the chapters' data
    "measure": 3, "placement": 3, "monitoring": 3, "ranks": 3,  # timing; choosing GPUs; the live monitor; ranks from a cell
    "dataparallel": 4, "checkup": 4, "server": 4, "lightning": 4, "notebook": 4, "scaling": 4,
    "exercises": 5,  # checks every chapter's answers
}
TOP = ["__init__", "__main__", "testing"]  # the entry points above every floor
PURE = ["core/units", "core/readings", "core/cuda_evidence", "core/arguments", "core/tables", "core/settings",
        "core/lazy", "core/frames", "core/widget_view", "core/renamed", "core/visible", "core/rank_devices",
        "placement/selection", "placement/explanation", "monitoring/history", "monitoring/limits", "monitoring/png",
        "monitoring/decimate", "monitoring/panels", "server/render",
        "lightning/call", "lightning/history", "lightning/draft", "lightning/devices", "lightning/strategy",
        "lightning/flags", "lightning/translation", "exercises/feedback", "exercises/check",
        "scaling/cost", "scaling/published", "dataparallel/devices"]
VIEWS = ["__main__", "checkup/report", "placement/picker", "monitoring/view", "monitoring/monitor", "monitoring/figure",
         "monitoring/blit", "monitoring/recorded", "server/watch", "lightning/callback"]
LIGHTNING = ["lightning/callback", "lightning/classifier", "lightning/fork_fit"]
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
    assert users == ["monitoring/view", "placement/picker", "server/watch"]


def test_lightning_is_imported_only_where_a_module_needs_it_and_those_only_by_each_other():
    users = [_name(p) for p in _modules() if any(i.split(".")[0] in ("lightning", "pytorch_lightning")
                                                  for i in _imports(p))]
    assert users == LIGHTNING
    importers = {_name(p) for p in _modules() if _gpulab_modules(_imports(p)) & set(LIGHTNING)}
    assert importers <= {"__init__", *LIGHTNING}, "importing Lightning costs seconds: load it on first use only"


def _subpackage(name: str) -> str | None:
    return name.split("/")[0] if "/" in name else None


def _edges() -> list[tuple[str, str]]:
    """(importer, imported) for every gpulab module importing another (``gpulab.x`` as ``x/__init__``)."""
    modules = {_name(p) for p in _modules()}
    edges = []
    for p in _modules():
        for target in _gpulab_modules(_imports(p)):
            target = target if target in modules else f"{target}/__init__"
            if target in modules:
                edges.append((_name(p), target))
    return edges


def floor_violations(edges: list[tuple[str, str]], floors: dict[str, int]) -> list[str]:
    """Each import that leaves its subpackage for one on the same floor or a higher one (so: back up, or sideways
    between two that might then import each other), or that lands in a subpackage with no floor."""
    out = []
    for importer, imported in edges:
        a, b = _subpackage(importer), _subpackage(imported)
        if a is None or b is None or a == b:
            if a is not None and b is None and imported not in ("__init__",):
                out.append(f"{importer} -> {imported}: the entry points stand above every floor")
            continue
        if a not in floors or b not in floors:
            out.append(f"{importer} -> {imported}: give {a if a not in floors else b} a floor in FLOORS")
        elif floors[b] >= floors[a]:
            out.append(f"{importer} (floor {floors[a]}) -> {imported} (floor {floors[b]})")
    return out


def test_every_subpackage_has_a_floor():
    assert {p.parent.name for p in PKG.glob("*/__init__.py")} == set(FLOORS)
    assert sorted(_name(p) for p in PKG.glob("*.py")) == TOP


def test_imports_only_run_down_the_floors():
    assert floor_violations(_edges(), FLOORS) == []


def test_the_floor_rule_catches_an_import_back_up_and_a_pair_that_import_each_other():
    assert floor_violations([("machine/cuda", "placement/setter")], FLOORS) == [
        "machine/cuda (floor 2) -> placement/setter (floor 3)"]
    assert len(floor_violations([("measure/timing", "ranks/launcher"), ("ranks/launcher", "measure/timing")],
                                FLOORS)) == 2
    assert floor_violations([("core/units", "gpulab_new/x")], FLOORS) != []
    assert floor_violations([("placement/picker", "machine/nvml"), ("placement/picker", "placement/setter")],
                            FLOORS) == []


def test_every_module_opens_with_a_line_saying_its_job():
    missing = [_name(p) for p in _modules() if p.name != "__init__.py" or p.stat().st_size
               if not (ast.get_docstring(ast.parse(p.read_text())) or "").strip()]
    assert missing == []


def test_no_utils_bucket_and_no_flat_modules_beyond_the_entry_points():
    top = sorted(p.name for p in PKG.glob("*.py"))
    assert top == ["__init__.py", "__main__.py", "testing.py"]
    assert not [p for p in PKG.rglob("*util*")]


def test_modules_stay_small():
    big = {_name(p): n for p in _modules() if (n := len(p.read_text().splitlines())) > 350}
    assert big == {}, "split these into one concept per module"



def _private_uses(source: str) -> list[str]:
    """``torch._x`` / ``torch.a._b`` imports and attribute reads, and ``multiprocessing``'s private state."""
    found = []
    for node in ast.walk(ast.parse(source)):
        names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                 else [f"{node.module}.{a.name}" for a in node.names] if isinstance(node, ast.ImportFrom)
                 and node.module and not node.level else [])
        found += [n for n in names if n.split(".")[0] in ("torch", "multiprocessing")
                  and any(part.startswith("_") and not part.startswith("__") for part in n.split(".")[1:])]
        if isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__"):
            root = node.value
            while isinstance(root, ast.Attribute):
                root = root.value
            if isinstance(root, ast.Name) and root.id in ("torch", "multiprocessing"):
                found.append(f"{ast.unparse(node)} (line {node.lineno})")
    return found


def test_private_torch_and_multiprocessing_apis_go_through_the_one_compat_module():
    users = {_name(p): uses for p in _modules() if (uses := _private_uses(p.read_text()))}
    assert set(users) == {"core/compat"}, users


def test_the_private_api_scan_finds_what_it_looks_for():
    found = _private_uses("import torch\nfrom torch.cuda._utils import _get_device_index\nx = torch._C._cudnn\n"
                          "y = torch.__version__\nimport multiprocessing.forkserver as f\n"
                          "z = multiprocessing.forkserver._forkserver\n")
    assert sorted(found) == ["multiprocessing.forkserver._forkserver (line 6)", "torch._C (line 3)",
                             "torch._C._cudnn (line 3)", "torch.cuda._utils._get_device_index"]
