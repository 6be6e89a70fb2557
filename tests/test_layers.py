"""The package's floors and layers point one way, checked from the source (every import, at any depth in a module).

Subpackages stand on floors (``FLOORS``): a module imports only its own subpackage and subpackages on lower floors,
so no two subpackages import each other and no import runs back up a floor. Across modules, layers point one way too:
pure (imports nothing heavy, and of gpulab only other pure modules) <- probes (the machine, processes) <- views.
A probe never imports a view; exactly one module talks to NVML, one imports ipywidgets for each view, and Lightning is
imported only by the three Lightning modules whose job needs it. These lists say which layer each module is in.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parents[1] / "gpulab"
# floor 1 is the ground; a subpackage imports only from floors below its own
FLOORS = {
    "core": 1,  # units, readings, settings, CUDA_VISIBLE_DEVICES's grammar: pure, the standard library only
    "reservations": 2,  # who holds which GPU: the lock files that placement, checkup and server share (STORES)
    "machine": 3,
    "workload": 3,  # what this machine has (NVML, GPUs, host, CUDA state, torch's private APIs); data
    "measure": 4,
    "placement": 4,
    "monitoring": 4,
    "ranks": 4,  # timing; choosing GPUs; live monitor; ranks from a cell
    "dataparallel": 5,
    "checkup": 5,
    "server": 5,
    "lightning": 5,
    "scaling": 5,
    "exercises": 6,
    "notebook": 6,  # checks every chapter's answers; the magics (%%gpu, %%ranks)
}
# a store that several rooms share stands on a floor of its own, and they take from each of its modules only the names
# in that module's __all__
STORES = ["reservations"]
TOP = ["__init__", "__main__"]  # the entry points above every floor
PURE = [
    "core/units",
    "core/readings",
    "core/verdicts",
    "core/arguments",
    "core/tables",
    "core/settings",
    "core/lazy",
    "core/frames",
    "core/widget_view",
    "core/visible",
    "core/visible_text",
    "core/shares",
    "core/memory_cap_text",
    "core/reservable",
    "core/dependencies",
    "core/scheduler",
    "placement/selection",
    "placement/allowed",
    "placement/explanation",
    "monitoring/ring_buffer",
    "monitoring/limits",
    "monitoring/png",
    "monitoring/decimate",
    "monitoring/panels",
    "monitoring/watched",
    "machine/described",
    "machine/cuda_evidence",
    "ranks/rank_devices",
    "checkup/recorded_cells",
    "server/render",
    "lightning/call",
    "lightning/flag_history",
    "lightning/draft",
    "lightning/device_flags",
    "lightning/strategy",
    "lightning/flags",
    "lightning/translation",
    "exercises/feedback",
    "exercises/check",
    "scaling/cost",
    "scaling/published",
    "scaling/run_verdicts",
]
VIEWS = [
    "__main__",
    "checkup/report",
    "placement/picker",
    "monitoring/view",
    "monitoring/live_monitor",
    "monitoring/figure",
    "monitoring/blit",
    "monitoring/recorded",
    "server/watch",
    "lightning/callback",
]
# chapter 06's exercise checker fits the learner's LightningModule: it imports Lightning inside that checker only, and
# its module is loaded only when one of chapter 06's exercises is checked
LIGHTNING = ["exercises/ch06_lightning", "lightning/callback", "lightning/classifier", "lightning/fork_fit"]
HEAVY = {"torch", "pynvml", "ipywidgets", "matplotlib", "psutil", "IPython", "lightning"}


def _exports() -> dict[str, str]:
    """``gpulab/__init__.py``'s ``_EXPORTS``, read from its source: public name -> the module defining it."""
    for node in ast.parse((PKG / "__init__.py").read_text()).body:
        target = (
            node.target
            if isinstance(node, ast.AnnAssign)
            else node.targets[0]
            if isinstance(node, ast.Assign)
            else None
        )
        if isinstance(target, ast.Name) and target.id == "_EXPORTS":
            return ast.literal_eval(node.value)
    raise AssertionError("gpulab/__init__.py has no _EXPORTS table")


EXPORTS = _exports()
RUN_TIME = "?"  # what a module reaches with getattr(gpulab, <a name known only at run time>)


def imports_in(source: str, name: str) -> set[str]:
    """Every module and name that module ``name`` (``"notebook/magics"``) imports, at any depth, as absolute dotted
    names (``from .readings import GpuInfo``: ``gpulab.core.readings.GpuInfo``), and every public name it reaches
    through the package itself (``import gpulab`` then ``gpulab.launch``, or ``from .. import launch``): the package's
    ``__init__`` imports those on first use (``_EXPORTS``), a side door past the floors unless it is followed."""
    package = ["gpulab"] + name.split("/")[:-1]
    out: set[str] = set()
    aliases: set[str] = set()  # local names bound to the package gpulab itself
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
            aliases |= {
                a.asname or "gpulab"
                for a in node.names
                if a.name == "gpulab" or a.asname is None and a.name.startswith("gpulab.")
            }
        elif isinstance(node, ast.ImportFrom):
            base = (
                ".".join(package[: len(package) - node.level + 1] + ([node.module] if node.module else []))
                if node.level
                else node.module or ""
            )
            out |= {f"{base}.{a.name}" for a in node.names}
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases:
            out.add(f"gpulab.{node.attr}")
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in ("getattr", "hasattr")
            and node.args
            and isinstance(node.args[0], ast.Name)
            and node.args[0].id in aliases
        ):
            attr = node.args[1] if len(node.args) > 1 else None
            known = isinstance(attr, ast.Constant) and isinstance(attr.value, str)
            out.add(f"gpulab.{attr.value if known else RUN_TIME}")
    return out


def _imports(path: Path) -> set[str]:
    return imports_in(path.read_text(), _name(path))


def _modules() -> list[Path]:
    return sorted(p for p in PKG.rglob("*.py") if "__pycache__" not in p.parts)


def _name(path: Path) -> str:
    return path.relative_to(PKG).with_suffix("").as_posix()


def resolve(dotted: str) -> str | None:
    """The gpulab module that an imported ``gpulab.…`` name lives in (``core/readings`` for
    ``gpulab.core.readings.GpuInfo``, ``ranks/launcher`` for the public ``gpulab.launch``, ``machine/__init__`` for
    ``gpulab.machine``, ``RUN_TIME`` for a name known only at run time); ``None`` outside gpulab."""
    parts = dotted.split(".")
    if parts[0] != "gpulab":
        return None
    parts = parts[1:]
    if parts[:1] == [RUN_TIME]:
        return RUN_TIME
    if parts[:1] and parts[0] in EXPORTS:
        parts = EXPORTS[parts[0]].split(".")
    for k in range(len(parts), 0, -1):
        path = "/".join(parts[:k])
        if (PKG / f"{path}.py").is_file():
            return path
        if (PKG / path / "__init__.py").is_file():
            return f"{path}/__init__"
    return "__init__"


def _gpulab_modules(imports: set[str]) -> set[str]:
    return {m for i in imports if (m := resolve(i)) is not None}


@pytest.mark.parametrize("name", PURE)
def test_pure_modules_import_nothing_heavy_and_only_pure_modules(name):
    imports = _imports(PKG / f"{name}.py")
    heavy = {i.split(".")[0] for i in imports} & HEAVY
    assert not heavy, f"{name} imports {heavy}"
    assert _gpulab_modules(imports) <= set(PURE), f"{name} imports non-pure {_gpulab_modules(imports) - set(PURE)}"


@pytest.mark.parametrize(
    "path", [p for p in _modules() if _name(p) not in VIEWS and p.name != "__init__.py"], ids=_name
)
def test_no_probe_or_pure_module_imports_a_view(path):
    assert not _gpulab_modules(_imports(path)) & set(VIEWS)


def test_only_nvml_imports_pynvml():
    users = [_name(p) for p in _modules() if any(i.split(".")[0] == "pynvml" for i in _imports(p))]
    assert users == ["machine/nvml"]


def test_one_ipywidgets_importer_per_view():
    users = [_name(p) for p in _modules() if any(i.split(".")[0] == "ipywidgets" for i in _imports(p))]
    assert users == ["monitoring/view", "placement/picker", "server/watch"]


def test_lightning_is_imported_only_where_a_module_needs_it_and_those_only_by_each_other():
    users = [
        _name(p) for p in _modules() if any(i.split(".")[0] in ("lightning", "pytorch_lightning") for i in _imports(p))
    ]
    assert users == LIGHTNING
    importers = {_name(p) for p in _modules() if _gpulab_modules(_imports(p)) & set(LIGHTNING)}
    assert importers <= {"__init__", *LIGHTNING}, "importing Lightning costs seconds: load it on first use only"


def _subpackage(name: str) -> str | None:
    return name.split("/")[0] if "/" in name else None


def _edges() -> list[tuple[str, str]]:
    """(importer, imported) for every gpulab module importing another, or reaching it through ``gpulab.<name>``."""
    return [(_name(p), target) for p in _modules() for target in sorted(_gpulab_modules(_imports(p)))]


def floor_violations(edges: list[tuple[str, str]], floors: dict[str, int]) -> list[str]:
    """Each import that leaves its subpackage for one on the same floor or a higher one (so: back up, or sideways
    between two that might then import each other), or that lands in a subpackage with no floor."""
    out = []
    for importer, imported in edges:
        if imported == RUN_TIME:
            out.append(f"{importer} -> gpulab.<a name known only at run time>: import what it uses from its module")
            continue
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
        "machine/cuda (floor 3) -> placement/setter (floor 4)"
    ]
    assert (
        len(floor_violations([("measure/timing", "ranks/launcher"), ("ranks/launcher", "measure/timing")], FLOORS)) == 2
    )
    assert floor_violations([("core/units", "gpulab_new/x")], FLOORS) != []
    assert (
        floor_violations([("placement/picker", "machine/nvml"), ("placement/picker", "placement/setter")], FLOORS) == []
    )


def import_circles(edges: list[tuple[str, str]]) -> list[list[str]]:
    """Each group of modules that import each other round a circle (a strongly connected component of two or more),
    sorted. A package's ``__init__`` and the entry points are left out: an ``__init__`` imports its own modules to
    re-export them, and the floors keep the packages apart."""
    graph: dict[str, set[str]] = {}
    for a, b in edges:
        if (
            a != b
            and RUN_TIME != b
            and not {a, b} & set(TOP)
            and not a.endswith("__init__")
            and not b.endswith("__init__")
        ):
            graph.setdefault(a, set()).add(b)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    circles: list[list[str]] = []

    def visit(v: str) -> None:  # Tarjan's algorithm; the package is a few hundred modules deep at most
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = [stack.pop()]
            while group[-1] != v:
                group.append(stack.pop())
            if len(group) > 1:
                circles.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(circles)


def test_no_modules_import_each_other_round_a_circle():
    """Inside a subpackage too, the dependency points one way (an import inside a function counts the same)."""
    assert import_circles(_edges()) == []


def test_the_circle_rule_catches_a_pair_and_a_longer_circle_and_passes_a_chain():
    assert import_circles([("reservations/holders", "reservations/server_token")] * 2) == []
    pair = [
        ("reservations/holders", "reservations/server_token"),
        ("reservations/server_token", "reservations/holders"),
    ]
    assert import_circles(pair) == [["reservations/holders", "reservations/server_token"]]
    triangle = [("placement/a", "placement/b"), ("placement/b", "placement/c"), ("placement/c", "placement/a")]
    assert import_circles(triangle + [("placement/c", "core/units")]) == [["placement/a", "placement/b", "placement/c"]]
    assert import_circles([("core/units", "core/readings"), ("core/readings", "core/arguments")]) == []


def test_a_store_stands_alone_below_every_room_that_uses_it():
    for store in STORES:
        users = {_subpackage(a) for a, b in _edges() if _subpackage(b) == store and _subpackage(a) not in (store, None)}
        assert users, f"nobody uses {store}: it is no shared store"
        assert [r for r, f in FLOORS.items() if f == FLOORS[store]] == [store], f"{store} shares its floor"
        assert all(FLOORS[store] < FLOORS[u] for u in users)


def _imported_names(path: Path) -> list[tuple[str, str]]:
    """``(module, name)`` for each name ``path`` imports from a gpulab module (``""`` for a plain ``import x``)."""
    package = ["gpulab"] + list(path.relative_to(PKG).parent.parts)
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out += [(a.name, "") for a in node.names if a.name.startswith("gpulab.")]
        elif isinstance(node, ast.ImportFrom):
            module = (
                ".".join(package[: len(package) - node.level + 1] + ([node.module] if node.module else []))
                if node.level
                else node.module or ""
            )
            if module.startswith("gpulab."):
                out += [(module, a.name) for a in node.names]
    return out


def _listed(path: Path) -> set[str]:
    """The names a module's ``__all__`` lists, read from its source (none when it has no ``__all__``)."""
    return {
        name
        for n in ast.parse(path.read_text()).body
        if isinstance(n, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in n.targets)
        for name in ast.literal_eval(n.value)
    }


def _store_api(store: str) -> dict[str, set[str]]:
    """``gpulab.<store>`` and each of its modules (``gpulab.reservations.holders``) -> the names its ``__all__``
    lists: what the other rooms may import from it."""
    return {
        ("gpulab." + _name(p).removesuffix("/__init__")).replace("/", "."): _listed(p)
        for p in sorted((PKG / store).glob("*.py"))
    }


def private_imports(
    importer: str, imported: list[tuple[str, str]], stores: dict[str, dict[str, set[str]]]
) -> list[str]:
    """Each name ``importer`` takes from another room that is private to it: a ``_name`` of any room, and of a store
    anything but the names in the ``__all__`` of the module that defines them (not a whole module, not a name the
    module keeps for the store itself)."""
    room = _subpackage(importer)
    out = []
    for module, name in imported:
        parts = module.split(".")
        target = parts[1] if len(parts) > 1 else None
        if target is None or target == room:
            continue
        if name.startswith("_") and not name.startswith("__"):
            out.append(f"{importer} imports {module}.{name}: a private name of {target}")
        elif target in stores and name not in stores[target].get(module, set()):
            out.append(
                f"{importer} imports {module}{'.' + name if name else ''}: {target}'s interface is the names in the "
                f"__all__ of the module that defines each, imported from it"
            )
    return out


def test_no_room_imports_a_private_name_of_another_and_stores_only_through_their_interface():
    stores = {s: _store_api(s) for s in STORES}
    found = [v for p in _modules() for v in private_imports(_name(p), _imported_names(p), stores)]
    assert found == []


def test_the_private_import_rule_catches_a_private_name_a_whole_module_and_a_name_outside_the_interface():
    stores = {
        "reservations": {
            "gpulab.reservations": set(),
            "gpulab.reservations.holders": {"reservation_holders"},
            "gpulab.reservations.folder": {"hold"},
        }
    }
    assert private_imports(
        "server/watch",
        [
            ("gpulab.reservations.folder", "open_lock_file"),
            ("gpulab.reservations", "_read_holder"),
            ("gpulab.reservations", "reservation_holders"),
            ("gpulab.reservations.holders", ""),
            ("gpulab.reservations", "holders"),
            ("gpulab.scaling.cost", "_positive"),
        ],
        stores,
    ) == [
        "server/watch imports gpulab.reservations.folder.open_lock_file: reservations's interface is the names in "
        "the __all__ of the module that defines each, imported from it",
        "server/watch imports gpulab.reservations._read_holder: a private name of reservations",
        "server/watch imports gpulab.reservations.reservation_holders: reservations's interface is the names in the "
        "__all__ of the module that defines each, imported from it",
        "server/watch imports gpulab.reservations.holders: reservations's interface is the names in the __all__ of "
        "the module that defines each, imported from it",
        "server/watch imports gpulab.reservations.holders: reservations's interface is the names in the __all__ of "
        "the module that defines each, imported from it",
        "server/watch imports gpulab.scaling.cost._positive: a private name of scaling",
    ]
    assert private_imports("reservations/holders", [("gpulab.reservations.folder", "try_lock")], stores) == []
    assert private_imports("server/hub", [("gpulab.reservations.folder", "hold")], stores) == []
    assert private_imports("server/hub", [("gpulab.reservations.holders", "reservation_holders")], stores) == []


def _violations_of(name: str, source: str) -> list[str]:
    return floor_violations([(name, m) for m in sorted(_gpulab_modules(imports_in(source, name)))], FLOORS)


def test_the_floor_rule_follows_names_reached_through_the_package_itself():
    """``import gpulab`` inside the package reaches every public name's module (the lazy ``_EXPORTS``): a side door
    that skipped the floors while the rule saw only an import of ``__init__``."""
    report = "checkup/report (floor 5)"
    assert _violations_of("machine/x", "import gpulab\n\ndef f():\n    return gpulab.environment_report()\n") == [
        f"machine/x (floor 3) -> {report}"
    ]
    assert _violations_of("machine/x", "from .. import environment_report\n") == [f"machine/x (floor 3) -> {report}"]
    assert _violations_of("machine/x", "from gpulab import environment_report\n") == [
        f"machine/x (floor 3) -> {report}"
    ]
    assert _violations_of("machine/x", "import gpulab as g\ng.launch()\n") == [
        "machine/x (floor 3) -> ranks/launcher (floor 4)"
    ]
    assert _violations_of("machine/x", "import gpulab\ngetattr(gpulab, 'environment_report')()\n") == [
        f"machine/x (floor 3) -> {report}"
    ]
    assert _violations_of("machine/x", "import gpulab\nname = 'environment_report'\ngetattr(gpulab, name)()\n") == [
        "machine/x -> gpulab.<a name known only at run time>: import what it uses from its module"
    ]
    assert _violations_of("checkup/x", "import gpulab\ngpulab.__version__, gpulab.launch, gpulab.devices\n") == []
    assert _violations_of("machine/x", "from ..core import units\nfrom ..placement.setter import x\n") == [
        "machine/x (floor 3) -> placement/setter (floor 4)"
    ]


# standard-library modules that start or reach into threads, processes and native code: a probe's tools, not core's
PROCESS = {
    "threading",
    "_thread",
    "subprocess",
    "multiprocessing",
    "concurrent",
    "signal",
    "ctypes",
    "socket",
    "fcntl",
    "resource",
    "mmap",
}


def not_pure(imports: set[str]) -> set[str]:
    """What of ``imports`` is outside the standard library and ``gpulab.core`` itself, or touches the process."""
    return {
        i
        for i in imports
        if i.split(".")[0] not in sys.stdlib_module_names - PROCESS and (resolve(i) or "").split("/")[0] != "core"
    }


@pytest.mark.parametrize("path", sorted(PKG.glob("core/*.py")), ids=_name)
def test_core_imports_only_the_standard_library_and_itself(path):
    """The ground floor is pure: no torch, NVML or widgets, no other floor, no threads or processes."""
    assert not_pure(_imports(path)) == set()


def test_the_core_rule_catches_a_third_party_import_another_floor_the_package_and_threads():
    source = (
        "from __future__ import annotations\nimport os, json\nfrom collections.abc import Sequence\n"
        "from . import units\nfrom .readings import GpuInfo\nfrom gpulab.core.tables import Table\n"
        "def f():\n    import torch.cuda\n    from ..machine import compat\n    import gpulab\n"
        "    import numpy as np\n    import threading\n"
    )
    assert not_pure(imports_in(source, "core/x")) == {
        "torch.cuda",
        "gpulab.machine.compat",
        "gpulab",
        "numpy",
        "threading",
    }


def test_every_module_opens_with_a_line_saying_its_job():
    missing = [
        _name(p)
        for p in _modules()
        if p.name != "__init__.py" or p.stat().st_size
        if not (ast.get_docstring(ast.parse(p.read_text())) or "").strip()
    ]
    assert missing == []


def test_no_utils_bucket_and_no_flat_modules_beyond_the_entry_points():
    top = sorted(p.name for p in PKG.glob("*.py"))
    assert top == ["__init__.py", "__main__.py"]
    assert not [p for p in PKG.rglob("*util*")]


def test_modules_stay_small():
    big = {_name(p): n for p in _modules() if (n := len(p.read_text().splitlines())) > 350}
    assert big == {}, "split these into one concept per module"


# elastic's process context: the name gpulab gives it (``ctx``) and the private state compat reads and replaces
_ELASTIC_CONTEXT = "ctx"
_ELASTIC_PRIVATE = ("_pc", "_ret_vals", "_return_values", "_worker_finished_event")


def _private_uses(source: str) -> list[str]:
    """``torch._x`` / ``torch.a._b`` imports and attribute reads, ``multiprocessing``'s private state, and elastic's
    process context's private attributes (``ctx._ret_vals``, ``x._pc``)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        names = (
            [a.name for a in node.names]
            if isinstance(node, ast.Import)
            else [f"{node.module}.{a.name}" for a in node.names]
            if isinstance(node, ast.ImportFrom) and node.module and not node.level
            else []
        )
        found += [
            n
            for n in names
            if n.split(".")[0] in ("torch", "multiprocessing")
            and any(part.startswith("_") and not part.startswith("__") for part in n.split(".")[1:])
        ]
        if isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__"):
            root = node.value
            while isinstance(root, ast.Attribute):
                root = root.value
            if (
                isinstance(root, ast.Name)
                and root.id in ("torch", "multiprocessing", _ELASTIC_CONTEXT)
                or node.attr in _ELASTIC_PRIVATE
            ):
                found.append(f"{ast.unparse(node)} (line {node.lineno})")
    return found


def test_private_torch_and_multiprocessing_apis_go_through_the_one_compat_module():
    users = {_name(p): uses for p in _modules() if (uses := _private_uses(p.read_text()))}
    assert set(users) == {"machine/compat"}, users


def test_the_private_api_scan_finds_what_it_looks_for():
    found = _private_uses(
        "import torch\nfrom torch.cuda._utils import _get_device_index\nx = torch._C._cudnn\n"
        "y = torch.__version__\nimport multiprocessing.forkserver as f\n"
        "z = multiprocessing.forkserver._forkserver\n"
        "ctx._ret_vals = {}\nn = len(context._pc.sentinels)\n"
    )
    assert sorted(found) == [
        "context._pc (line 8)",
        "ctx._ret_vals (line 7)",
        "multiprocessing.forkserver._forkserver (line 6)",
        "torch._C (line 3)",
        "torch._C._cudnn (line 3)",
        "torch.cuda._utils._get_device_index",
    ]
