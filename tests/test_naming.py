"""One word per idea: a held GPU is a *reservation* wherever a learner or a maintainer reads about it.

The public API says ``reserve_gpus`` and ``Reservation`` first, so the package's identifiers, messages, docstrings and
comments, the README, the chapters' cells and the server configs say "reservation" (and "reserve") too, never
"lease"; the reservations' folder is ``reservations`` (``reservations_dir()``, ``$GPULAB_RESERVATIONS_DIR``).
Retired names survive only where an old spelling is still accepted, on a line that says ``deprecated``.

One name per kind of value, too: ``gpus=`` always says *which* GPUs (indices, UUIDs, GPUs already read) and a number
of GPUs is ``n_gpus=``; ``machine=`` always says which machine and is always resolved by the one door,
``gpulab.machine.resolve.as_reader`` (a reader, a described machine's name or file, or None). The rules below walk
every function and method gpulab defines, and the tools' source, and each is shown failing on a small module.

How many ranks (processes) a job has is ``world_size=`` in every public signature: torch.distributed's own word
(``dist.get_world_size()``, ``init_process_group(world_size=...)``, the ``WORLD_SIZE`` that torchrun sets), which
chapter 04 teaches; never ``nprocs=``, ``n_ranks=`` or an integer ``ranks=`` (``ranks`` stays free for a list of rank
numbers). Only calls into torch keep torch's word (``mp.spawn(nprocs=...)``, torchrun's ``--nproc-per-node``).

"Check" is what a learner does to an exercise (``gpulab.check("ch00-ex1", answer)``), the first check the chapters
ask for. Every other idea has a word of its own: the report's rows are findings (``Finding``), an
argument is validated (``validated_policy``), the fork/OpenMP hang is reproduced by an experiment
(``fork_experiment``), cuDNN's autotuner is measured against its default (``autotune_comparison``). ``CHECK`` finds
the word in a name; ``tests/test_public_signatures.py`` walks every public name of gpulab with it.
"""

from __future__ import annotations

import ast
import functools
import importlib
import importlib.util
import inspect
import json
import pkgutil
import re
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import gpulab
from gpulab.machine import resolve

ROOT = Path(__file__).resolve().parents[1]
# retired word -> what to write instead
RETIRED = {
    r"(?i)(?<![a-z])leas(?!t)": "reservation / reserve (a held GPU is a reservation)",
    r"\bnamed_dir\b": "reservations_dir(reservations, create=False)",
    r"\blockfiles\b": "gpulab.reservations (the store of held GPUs)",
    r"\bfork_?check\b|\bForkCheck\b": "fork_experiment / ForkExperiment (gpulab.check is the exercises' checker)",
}
# the word "check" in a name (check, Checks, checked_, ForkCheck, forkcheck), not checkup, checklist or checkpoint
CHECK = re.compile(r"[Cc]heck(?:s|ed|ers?|ing)?(?![a-z])")
CHECK_HOME = "gpulab.exercises"  # the exercises' checkers, and gpulab.check itself (gpulab.exercises.check)


def retired_words(text: str) -> list[str]:
    """``"line N: word (write ...)"`` for each retired word in ``text``, except on a line that says it is deprecated."""
    found = []
    for number, line in enumerate(text.splitlines(), 1):
        if "deprecated" in line.lower():
            continue
        for pattern, instead in RETIRED.items():
            found += [f"line {number}: {m.group(0)}… (write {instead})" for m in re.finditer(pattern, line)]
    return found


def _texts() -> dict[str, str]:
    """Every text a reader meets: the package's source, the README, the server configs, the chapters' cells."""
    paths = [
        *sorted((ROOT / "gpulab").rglob("*.py")),
        ROOT / "README.md",
        *sorted((ROOT / "docs").glob("*.md")),
        ROOT / "tools" / "jupyterhub_config.py",
        ROOT / "tools" / "jupyter_server_config.py",
    ]
    out = {p.relative_to(ROOT).as_posix(): p.read_text() for p in paths if "__pycache__" not in p.parts}
    for nb in sorted((ROOT / "notebooks").glob("*.ipynb")):
        cells = json.loads(nb.read_text())["cells"]
        out[nb.relative_to(ROOT).as_posix()] = "\n".join("".join(c["source"]) for c in cells)
    return out


@pytest.mark.parametrize("name", sorted(_texts()))
def test_a_held_gpu_has_one_name(name):
    assert retired_words(_texts()[name]) == []


def test_the_word_check_finds_every_spelling_of_a_retired_word_and_spares_the_rest():
    text = (
        "class LeaseRow: ...\nhub_leases()\n# every kernel leases\nPORTS_PER_LEASE = 10\nd = named_dir(x)\n"
        "from ..placement.lockfiles import lock_path\nrelease(); at least; please\n"
        "KEY = 'gpulab_lease'  # deprecated: the old key\nr = gpulab.fork_check(); ForkCheck; forkcheck.py\n"
    )
    assert retired_words(text) == [
        "line 1: Leas… (write reservation / reserve (a held GPU is a reservation))",
        "line 2: leas… (write reservation / reserve (a held GPU is a reservation))",
        "line 3: leas… (write reservation / reserve (a held GPU is a reservation))",
        "line 4: LEAS… (write reservation / reserve (a held GPU is a reservation))",
        "line 5: named_dir… (write reservations_dir(reservations, create=False))",
        "line 6: lockfiles… (write gpulab.reservations (the store of held GPUs))",
        *[
            f"line 9: {w}… (write fork_experiment / ForkExperiment (gpulab.check is the exercises' checker))"
            for w in ("fork_check", "ForkCheck", "forkcheck")
        ],
    ]


def test_the_check_word_is_found_in_every_spelling_and_only_there():
    named = [
        "check",
        "checks",
        "checked_policy",
        "_check_interval",
        "ForkCheck",
        "forkcheck",
        "fork_fit_check",
        "Checker",
        "checking",
    ]
    spared = ["checkup", "checklist", "checkpoint", "checkout", "Checkbox", "enable_checkpointing", "finding"]
    assert [n for n in named if not CHECK.search(n)] == []
    assert [n for n in spared if CHECK.search(n)] == []


# -- gpus= says which GPUs and n_gpus= how many; machine= goes through the one door ------------------------------------
EMPTY = inspect.Parameter.empty
NUMBERS = {"int", "float", "bool"}
DOOR = resolve.as_reader
DOOR_KINDS = {kind.__name__ for kind in resolve.MACHINE_KINDS} | {"None"}


def annotation_kinds(annotation: Any) -> set[str]:
    """The kinds an annotation allows, outermost names only: ``"Sequence[int] | str | None"`` → Sequence, str, None.
    Annotations are text under ``from __future__ import annotations``; any other is written out as text first."""
    if annotation is EMPTY:
        return set()
    text = annotation if isinstance(annotation, str) else inspect.formatannotation(annotation)
    kinds: set[str] = set()

    def union(node: ast.expr) -> None:
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
            union(node.left)
            union(node.right)
        elif isinstance(node, ast.Subscript) and _name(node.value) in ("Optional", "Union"):
            for item in node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]:
                union(item)
            if _name(node.value) == "Optional":
                kinds.add("None")
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):  # a quoted forward reference
            union(ast.parse(node.value, mode="eval").body)
        else:
            kinds.add(_name(node))

    union(ast.parse(text, mode="eval").body)
    return kinds


def _name(node: ast.expr) -> str:
    if isinstance(node, ast.Subscript):
        return _name(node.value)
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Constant) and node.value is None:
        return "None"
    return ast.unparse(node)


def counts_called_gpus(where: str, name: str, annotation: Any, default: Any) -> list[str]:
    """A parameter ``gpus`` that is a number (annotated so, or a whole number by default), or ``n_gpus`` that is not."""
    kinds = annotation_kinds(annotation)
    whole_default = isinstance(default, int) and not isinstance(default, bool)
    written = _written(annotation) + ("" if default is EMPTY else f" = {default!r}")
    if name == "gpus" and (kinds & NUMBERS or whole_default):
        return [f"{where}(gpus{written}): a number of GPUs is n_gpus=; gpus= says which GPUs"]
    if name == "n_gpus" and kinds != {"int"}:
        return [f"{where}(n_gpus{written}): n_gpus= counts GPUs, an int"]
    return []


def _written(annotation: Any) -> str:
    return "" if annotation is EMPTY else f": {annotation}"


def machine_beside_the_door(where: str, annotation: Any) -> list[str]:
    """A ``machine`` annotated with kinds the door does not take, or without a described machine's name."""
    kinds = annotation_kinds(annotation)
    if kinds and kinds <= DOOR_KINDS and "str" in kinds:
        return []
    return [
        f"{where}(machine{_written(annotation)}): machine= takes what as_reader takes "
        f"({' | '.join(sorted(DOOR_KINDS))}), a described machine's name always among them"
    ]


def reaches_door(fn: Callable[..., Any], parameter: str, seen: set | None = None) -> bool:
    """Whether ``fn`` hands its ``parameter``, by name, to the door: directly, or to a parameter of another function
    or class that does (followed through positional and keyword arguments, and imports inside the function)."""
    seen = set() if seen is None else seen
    fn = inspect.unwrap(fn)
    if fn is DOOR or (fn, parameter) in seen:
        return fn is DOOR
    seen.add((fn, parameter))
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    except (OSError, TypeError):  # no source to read (a generated __init__, a built-in)
        return False
    body = next(n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)))
    imported = {
        a.asname or a.name: (n.module or "", n.level, a.name)
        for n in ast.walk(body)
        if isinstance(n, ast.ImportFrom)
        for a in n.names
    }
    for call in (n for n in ast.walk(body) if isinstance(n, ast.Call)):
        places = [i for i, a in enumerate(call.args) if isinstance(a, ast.Name) and a.id == parameter]
        keywords = [k.arg for k in call.keywords if k.arg and isinstance(k.value, ast.Name) and k.value.id == parameter]
        callee = _callee(call.func, fn, imported) if places or keywords else None
        if callee is None:
            continue
        if inspect.unwrap(callee) is DOOR:
            return True
        target, skip = (callee.__init__, 1) if inspect.isclass(callee) else (callee, 0)  # a class: self comes first
        if not inspect.isfunction(inspect.unwrap(target)):
            continue
        names = list(inspect.signature(inspect.unwrap(target)).parameters)
        received = [names[i + skip] for i in places if i + skip < len(names)] + [k for k in keywords if k in names]
        if any(reaches_door(target, name, seen) for name in received):
            return True
    return False


def _callee(node: ast.expr, fn: Callable[..., Any], imported: dict[str, tuple[str, int, str]]) -> Any:
    """What a call's function expression names, seen from ``fn``: its module's globals or an import inside ``fn``."""
    if isinstance(node, ast.Name):
        if node.id not in imported:
            return fn.__globals__.get(node.id)
        module, level, name = imported[node.id]
        try:
            return getattr(importlib.import_module("." * level + module, fn.__globals__.get("__package__")), name, None)
        except ImportError:
            return None
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
        owner = _callee(node.value, fn, imported)
        return getattr(owner, node.attr, None) if inspect.ismodule(owner) or inspect.isclass(owner) else None
    return None


def machine_off_the_door(where: str, fn: Callable[..., Any]) -> list[str]:
    p = inspect.signature(fn).parameters.get("machine")
    if p is None:
        return []
    found = machine_beside_the_door(where, p.annotation)
    if not reaches_door(fn, "machine"):
        found.append(f"{where}: machine is never handed to {DOOR.__module__}.{DOOR.__name__}")
    return found


def defined_in(module: Any) -> Iterator[tuple[str, Callable[..., Any]]]:
    """Every function and class ``module`` defines, and the methods of its classes (``__init__`` included, other
    dunders not), as ``(dotted name, function)``."""
    for name, obj in vars(module).items():
        if name.startswith("__") or getattr(obj, "__module__", None) != module.__name__:
            continue
        if inspect.isfunction(obj):
            yield f"{module.__name__}.{obj.__qualname__}", obj
        elif inspect.isclass(obj):
            for attr, member in vars(obj).items():
                fn = member.__func__ if isinstance(member, (classmethod, staticmethod)) else member
                if inspect.isfunction(fn) and (attr == "__init__" or not attr.startswith("__")):
                    yield f"{module.__name__}.{obj.__qualname__}.{attr}", fn


@functools.cache
def gpulab_functions() -> dict[str, Callable[..., Any]]:
    found: dict[str, Callable[..., Any]] = {}
    for info in pkgutil.walk_packages(gpulab.__path__, "gpulab."):
        found.update(defined_in(importlib.import_module(info.name)))
    return found


def parameter_problems(functions: dict[str, Callable[..., Any]]) -> list[str]:
    found = []
    for where, fn in sorted(functions.items()):
        for p in inspect.signature(fn).parameters.values():
            found += counts_called_gpus(where, p.name, p.annotation, p.default)
        found += machine_off_the_door(where, fn)
    return found


def source_parameters(source: str, where: str) -> Iterator[tuple[str, str, Any, Any]]:
    """``(where, name, annotation text, default)`` of every parameter of every function in ``source``, read without
    importing it (the tools run where gpulab's own environment may not)."""
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        a = node.args
        positional = a.posonlyargs + a.args
        defaults = [EMPTY] * (len(positional) - len(a.defaults)) + list(a.defaults)
        for arg, default in [*zip(positional, defaults), *zip(a.kwonlyargs, a.kw_defaults)]:
            value = default.value if isinstance(default, ast.Constant) else EMPTY
            annotation = ast.unparse(arg.annotation) if arg.annotation is not None else EMPTY
            yield f"{where}:{node.lineno} {node.name}", arg.arg, annotation, value


def tool_problems(sources: dict[str, str]) -> list[str]:
    found = []
    for path, source in sorted(sources.items()):
        for where, name, annotation, default in source_parameters(source, path):
            found += counts_called_gpus(where, name, annotation, default)
            if name == "machine":
                found += machine_beside_the_door(where, annotation)
    return found


def test_gpus_says_which_gpus_n_gpus_how_many_and_machine_goes_through_the_door():
    assert parameter_problems(gpulab_functions()) == []


def test_the_tools_name_a_count_of_gpus_n_gpus_and_give_machine_only_to_the_door():
    sources = {p.relative_to(ROOT).as_posix(): p.read_text() for p in sorted((ROOT / "tools").rglob("*.py"))}
    assert len(sources) > 10 and tool_problems(sources) == []


def test_the_walk_sees_every_subpackage_and_the_parameters_the_rules_are_about():
    functions = gpulab_functions()
    subpackages = {p.parent.name for p in (ROOT / "gpulab").glob("*/__init__.py")}
    assert subpackages <= {where.split(".")[1] for where in functions}
    takes = {name for fn in functions.values() for name in inspect.signature(fn).parameters}
    machines = [w for w, fn in functions.items() if "machine" in inspect.signature(fn).parameters]
    assert {"gpus", "n_gpus", "machine"} <= takes and len(machines) >= 15
    assert {
        "gpulab.placement.device_rules.explain",
        "gpulab.monitoring.live_monitor.Monitor.__init__",
        "gpulab.server.hub.gpu_hooks",
        "gpulab.checkup.report.environment_report",
    } <= set(machines)
    assert "gpulab.checkup.diagnosis._cuda_finding" in functions  # private helpers are walked too
    assert "gpulab.server.kernelspec.install_kernelspec" in functions and "gpulab.core.visible.visible_map" in functions


SYNTHETIC = """
from __future__ import annotations

from collections.abc import Sequence

from gpulab.core.readings import GpuInfo
from gpulab.machine.nvml import GpuReader
from gpulab.machine.resolve import as_reader


def install(gpus: int = 1) -> None:  # a count called gpus
    pass


def hooks(gpus=2):  # a count with no annotation: its default tells
    pass


def spread(n_gpus: Sequence[int]) -> None:  # which GPUs called n_gpus
    pass


def watch(gpus: Sequence[int] | None = None, n_gpus: int = 1) -> None:  # right
    pass


def report(machine: GpuReader | str | None = None) -> object:  # right: the door itself
    return as_reader(machine)


def relay(title: str, machine: GpuReader | str | None = None) -> object:  # right: through report, by keyword
    return report(machine=machine)


class View:
    def __init__(self, machine: GpuReader | str | None = None) -> None:  # right: through relay, by position
        self.reader = relay("view", machine)


def lazily(machine: str | None = None) -> object:  # right: the door imported inside, under another name
    from gpulab.machine.resolve import as_reader as door
    return door(machine)


def record(run: object, *, machine: str) -> str:  # free text called machine
    return machine.strip()


def mapped(machine: Sequence[GpuInfo]) -> int:  # GPUs already read called machine
    return len(machine)


def kept(machine: GpuReader | str | None = None) -> str:  # the door's kinds, but never resolved
    return str(machine)


def wide(machine: object = None) -> object:  # resolved, but annotated wider than the door
    return as_reader(machine)


def bare(machine=None):  # resolved, but not annotated: a reader cannot tell what it takes
    return as_reader(machine)
"""


def _synthetic(tmp_path: Path) -> Any:
    path = tmp_path / "synthetic_names.py"
    path.write_text(SYNTHETIC)
    spec = importlib.util.spec_from_file_location("synthetic_names", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_gpus_rule_catches_a_count_called_gpus_and_which_gpus_called_n_gpus(tmp_path):
    functions = dict(defined_in(_synthetic(tmp_path)))
    found = [p for p in parameter_problems(functions) if "gpus" in p]
    assert found == [
        "synthetic_names.hooks(gpus = 2): a number of GPUs is n_gpus=; gpus= says which GPUs",
        "synthetic_names.install(gpus: int = 1): a number of GPUs is n_gpus=; gpus= says which GPUs",
        "synthetic_names.spread(n_gpus: Sequence[int]): n_gpus= counts GPUs, an int",
    ]
    # the tools' rule reads the same source without importing it: the counts, and machine's annotation (not its path)
    from_source = tool_problems({"synthetic_names.py": SYNTHETIC})
    assert [p.split(" ", 1)[1].split("(")[0] for p in from_source] == [
        "install",
        "hooks",
        "spread",
        "mapped",
        "wide",
        "bare",
    ]


def test_the_machine_rule_catches_free_text_gpus_already_read_and_a_machine_never_resolved(tmp_path):
    functions = dict(defined_in(_synthetic(tmp_path)))
    found = [p for p in parameter_problems(functions) if "machine" in p]
    assert found == [
        "synthetic_names.bare(machine): machine= takes what as_reader takes (GpuReader | None | PathLike | dict | "
        "str), a described machine's name always among them",
        "synthetic_names.kept: machine is never handed to gpulab.machine.resolve.as_reader",
        "synthetic_names.mapped(machine: Sequence[GpuInfo]): machine= takes what as_reader takes "
        "(GpuReader | None | PathLike | dict | str), a described machine's name always among them",
        "synthetic_names.mapped: machine is never handed to gpulab.machine.resolve.as_reader",
        "synthetic_names.record: machine is never handed to gpulab.machine.resolve.as_reader",
        "synthetic_names.wide(machine: object): machine= takes what as_reader takes "
        "(GpuReader | None | PathLike | dict | str), a described machine's name always among them",
    ]
    assert {
        "synthetic_names.report",
        "synthetic_names.relay",
        "synthetic_names.View.__init__",
        "synthetic_names.lazily",
    } <= set(functions)  # walked, and passed


def test_annotations_are_read_as_the_kinds_they_allow():
    assert annotation_kinds("Sequence[int] | str | None") == {"Sequence", "str", "None"}
    assert annotation_kinds("Optional[int]") == {"int", "None"} and annotation_kinds("Union['GpuReader', str]") == {
        "GpuReader",
        "str",
    }
    assert annotation_kinds("os.PathLike[str] | dict[str, Any]") == {"PathLike", "dict"}
    assert annotation_kinds(int) == {"int"} and annotation_kinds(EMPTY) == set()


# -- the number of ranks is world_size= --------------------------------------------------------------------------------
# a parameter name for the number of ranks -> whose word it is; ``ranks`` only when it holds a number (a list of rank
# numbers is ``ranks`` too, rightly)
RANK_COUNT_WORDS = {"nprocs": "torch.multiprocessing's word", "n_ranks": "a word of our own", "ranks": "a count"}


def counts_ranks_under_another_name(where: str, name: str, annotation: Any, default: Any) -> list[str]:
    """A parameter ``nprocs`` or ``n_ranks``, or ``ranks`` that is a whole number (annotated ``int``, or unannotated
    with a whole number for default)."""
    if name not in RANK_COUNT_WORDS:
        return []
    whole_default = isinstance(default, int) and not isinstance(default, bool)
    if name == "ranks" and "int" not in annotation_kinds(annotation) and not (annotation is EMPTY and whole_default):
        return []
    return [f"{where}({name}{_written(annotation)}): the number of ranks is world_size= ({RANK_COUNT_WORDS[name]})"]


def is_public(where: str) -> bool:
    """Whether a dotted name from ``defined_in`` is public: no module, class or function in it starts with ``_``
    (``__init__`` is a class's public signature)."""
    return not any(part.startswith("_") for part in where.split(".") if part != "__init__")


def rank_count_problems(functions: dict[str, Callable[..., Any]]) -> list[str]:
    found = []
    for where, fn in sorted(functions.items()):
        if is_public(where):
            for p in inspect.signature(fn).parameters.values():
                found += counts_ranks_under_another_name(where, p.name, p.annotation, p.default)
    return found


def test_the_number_of_ranks_is_world_size_in_every_public_signature():
    functions = gpulab_functions()
    assert rank_count_problems(functions) == []
    # the walk reaches what the rule is about: functions, methods, classes' __init__ (a dataclass's generated one too)
    takes = {w for w, fn in functions.items() if is_public(w) and "world_size" in inspect.signature(fn).parameters}
    assert {
        "gpulab.ranks.launcher.launch",
        "gpulab.ranks.launch_plan.plan_launch",
        "gpulab.ranks.plan.plan_ranks",
        "gpulab.ranks.plan.choose_backend",
        "gpulab.ranks.ports.open_store",
        "gpulab.ranks.rank_output.RankLogs.files",
        "gpulab.ranks.watchdog.LaunchWatch.__init__",
        "gpulab.ranks.speed.RankSpeedup.ratio",
        "gpulab.ranks.speed.SpeedRow.__init__",
        "gpulab.ranks.rank_devices.decide_rank_devices",
        "gpulab.scaling.cost.predict_step",
        "gpulab.scaling.cost.crossover_batch",
        "gpulab.scaling.probes.splits",
        "gpulab.scaling.on_gpus.nccl_link",
        "gpulab.scaling.steps.StepSplit.__init__",
    } <= takes


RANK_COUNTS = """
from __future__ import annotations


def launch(fn, nprocs: int = 2): ...  # torch.multiprocessing's word
def ring(gradient_bytes: float, ranks: int): ...  # a count called ranks
def gloo_link(ranks=2): ...  # a count with no annotation: its default tells
def maybe(ranks: int | None = None): ...


class Plan:
    def __init__(self, n_ranks: int): ...
    def ratio(self, batch: int, ranks: int = 2): ...
    @staticmethod
    def again(nprocs): ...
    def _hidden(self, nprocs): ...  # private: not the rule's business


def listed(word: str, ranks: list[int]): ...  # right: rank numbers, not a count
def magic(ranks: bool = True): ...  # right: a flag
def good(fn, world_size: int = 2): ...  # right
def _private(nprocs): ...
"""


def test_the_rank_count_rule_catches_every_other_word_and_spares_lists_of_ranks_flags_and_private_names(tmp_path):
    path = tmp_path / "synthetic_ranks.py"
    path.write_text(RANK_COUNTS)
    spec = importlib.util.spec_from_file_location("synthetic_ranks", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    functions = dict(defined_in(module))
    assert {"synthetic_ranks._private", "synthetic_ranks.Plan._hidden", "synthetic_ranks.listed"} <= set(functions)
    assert rank_count_problems(functions) == [
        "synthetic_ranks.Plan.__init__(n_ranks: int): the number of ranks is world_size= (a word of our own)",
        "synthetic_ranks.Plan.again(nprocs): the number of ranks is world_size= (torch.multiprocessing's word)",
        "synthetic_ranks.Plan.ratio(ranks: int): the number of ranks is world_size= (a count)",
        "synthetic_ranks.gloo_link(ranks): the number of ranks is world_size= (a count)",
        "synthetic_ranks.launch(nprocs: int): the number of ranks is world_size= (torch.multiprocessing's word)",
        "synthetic_ranks.maybe(ranks: int | None): the number of ranks is world_size= (a count)",
        "synthetic_ranks.ring(ranks: int): the number of ranks is world_size= (a count)",
    ]


# Chapter 07's ideas, one word each. How much faster 2 ranks can run at most on this machine's cores is its *ceiling*,
# measured by one entry point (``gpulab.scaling.machine_ceiling``); the all-reduce that the backward pass does not hide
# is *exposed* (``exposed_s``), predicted (``StepCost``) or measured (``StepSplit``).
SCALING_RETIRED = {
    r"\b_?(?:machine_limit|limit_for|limit_times|limit_of)\b": "machine_ceiling (the machine's ceiling on speed-up)",
    r"(?i)\bmachine limit\b": "machine ceiling",
    r"\bcontention\b": "ceiling (how much faster the ranks compute together than one, at most)",
    r"\bwaiting_s\b": "exposed_s (the all-reduce that the backward pass does not hide)",
}


def scaling_words(text: str) -> list[str]:
    """``"line N: word (write ...)"`` for each of chapter 07's retired words in ``text``."""
    return [
        f"line {number}: {m.group(0)} (write {instead})"
        for number, line in enumerate(text.splitlines(), 1)
        for pattern, instead in SCALING_RETIRED.items()
        for m in re.finditer(pattern, line)
    ]


def _texts_and_benchmarks() -> dict[str, str]:
    out = _texts()
    out.update({p.relative_to(ROOT).as_posix(): p.read_text() for p in sorted((ROOT / "benchmarks").glob("*.py"))})
    return out


@pytest.mark.parametrize("name", sorted(_texts_and_benchmarks()))
def test_the_ceiling_and_the_exposed_all_reduce_have_one_name(name):
    assert scaling_words(_texts_and_benchmarks()[name]) == []


def test_the_scaling_word_check_finds_each_retired_name_and_spares_the_rest():
    text = (
        "c = machine_limit()\nlimit_for(plan); limit_times(plan); _limit_times(plan)\nlimit_of(a, b)\n"
        "print('Machine limit: 1.9×')\npredict_step(..., contention=0.5)\nsplit.waiting_s\n"
        "cgroup_limit_of_this_process; memory_limit_bytes; ranks waiting for each other; exposed_s; ceiling\n"
    )
    assert scaling_words(text) == [
        "line 1: machine_limit (write machine_ceiling (the machine's ceiling on speed-up))",
        "line 2: limit_for (write machine_ceiling (the machine's ceiling on speed-up))",
        "line 2: limit_times (write machine_ceiling (the machine's ceiling on speed-up))",
        "line 2: _limit_times (write machine_ceiling (the machine's ceiling on speed-up))",
        "line 3: limit_of (write machine_ceiling (the machine's ceiling on speed-up))",
        "line 4: Machine limit (write machine ceiling)",
        "line 5: contention (write ceiling (how much faster the ranks compute together than one, at most))",
        "line 6: waiting_s (write exposed_s (the all-reduce that the backward pass does not hide))",
    ]
