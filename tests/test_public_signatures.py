"""The public API walked whole: every public function, class and method of every gpulab module, not only ``__all__``'s.

``tests/test_public_api.py`` holds the names a learner types (``gpulab.__all__``) to one name per meaning; Tab
completion, Jupyter's ``?`` and whoever changes the package meet every module's public names too. Each of them (no
leading underscore, defined in the module walked) says what it is in a docstring, annotates every parameter, uses no
retired word (``tests/test_naming.RETIRED``), and says "check" only if it belongs to the exercises
(``tests/test_naming.CHECK``). Each rule is shown to fail on a small package that the test writes.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import pkgutil
import sys
from dataclasses import dataclass
from types import ModuleType

import pytest

import gpulab
from tests.test_naming import CHECK, CHECK_HOME, ROOT, retired_words


@dataclass(frozen=True)
class Public:
    """One public name: its dotted path (``gpulab.machine.nvml.NvmlReader.count``), the object (a module, function,
    class or property) and, for a method, its class."""

    path: str
    obj: object
    owner: type | None = None


def modules(package: ModuleType) -> list[ModuleType]:
    """``package`` and every module under it, imported (an import that fails fails the walk, naming the module)."""
    return [
        package,
        *(importlib.import_module(m.name) for m in pkgutil.walk_packages(package.__path__, package.__name__ + ".")),
    ]


def _members(cls: type) -> list[tuple[str, object]]:
    """The methods and properties ``cls`` defines itself: public ones, and its own ``__init__`` (for its parameters)."""
    out = []
    for key, member in vars(cls).items():
        fn = member.__func__ if isinstance(member, (staticmethod, classmethod)) else member
        if key == "__init__" and inspect.isfunction(fn) and fn.__qualname__ == f"{cls.__qualname__}.__init__":
            out.append((key, fn))
        elif not key.startswith("_") and (inspect.isfunction(fn) or isinstance(fn, property)):
            out.append((key, fn))
    return out


def public(package: ModuleType) -> list[Public]:
    """Every module under ``package``, and every public function and class each defines, with the classes' methods."""
    out = []
    for module in modules(package):
        out.append(Public(module.__name__, module))
        for name, obj in vars(module).items():
            if (
                name.startswith("_")
                or getattr(obj, "__module__", None) != module.__name__
                or not (inspect.isfunction(obj) or inspect.isclass(obj))
            ):
                continue
            out.append(Public(f"{module.__name__}.{name}", obj))
            if inspect.isclass(obj):
                out += [Public(f"{module.__name__}.{name}.{key}", fn, obj) for key, fn in _members(obj)]
    return out


def _docstring(obj: object) -> str | None:
    """The object's own docstring: not a base class's, nor the signature a dataclass writes in place of one."""
    if isinstance(obj, property):
        return obj.fget.__doc__ if obj.fget else None
    if inspect.isclass(obj):
        doc = vars(obj).get("__doc__")
        return None if dataclasses.is_dataclass(obj) and doc and doc.startswith(f"{obj.__name__}(") else doc
    return getattr(obj, "__doc__", None)


def _parameters(p: Public) -> list[inspect.Parameter]:
    """The parameters a caller passes (``self`` and ``cls`` left out); none for a module or a class, whose
    ``__init__`` is walked on its own."""
    fn = p.obj.fget if isinstance(p.obj, property) else p.obj
    if not inspect.isfunction(fn):
        return []
    params = list(inspect.signature(fn).parameters.values())
    bound = p.owner is not None and not isinstance(inspect.getattr_static(p.owner, fn.__name__, None), staticmethod)
    return params[1:] if bound else params


def _names(p: Public) -> list[str]:
    """The names ``p`` shows a reader: its own (a module's last part), and its parameters'."""
    return [p.path.rsplit(".", 1)[-1], *(q.name for q in _parameters(p))]


def undocumented(items: list[Public]) -> list[str]:
    """Each public name without a docstring of its own (``__init__`` aside: its class's docstring says it)."""
    return [p.path for p in items if not p.path.endswith(".__init__") and not (_docstring(p.obj) or "").strip()]


def unannotated(items: list[Public]) -> list[str]:
    """``path(parameter)`` for each parameter without an annotation."""
    return [f"{p.path}({q.name})" for p in items for q in _parameters(p) if q.annotation is q.empty]


def retired(items: list[Public]) -> list[str]:
    """``path: name`` for each name or parameter that uses a retired word."""
    return [f"{p.path}: {n}" for p in items for n in _names(p) if retired_words(n)]


def misplaced_checks(items: list[Public], home: str = CHECK_HOME) -> list[str]:
    """``path: name`` for each name or parameter outside ``home`` that says "check"."""
    return [
        f"{p.path}: {n}" for p in items if not f"{p.path}.".startswith(f"{home}.") for n in _names(p) if CHECK.search(n)
    ]


@pytest.fixture(scope="module")
def walked() -> list[Public]:
    return public(gpulab)


def test_the_walk_reaches_every_module_and_names_beyond_all(walked):
    paths = {p.path for p in walked}
    files = {
        ".".join(f.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
        for f in (ROOT / "gpulab").rglob("*.py")
        if "__pycache__" not in f.parts
    }
    assert files - paths == set()
    assert {
        "gpulab.machine.nvml.NvmlReader.count",
        "gpulab.checkup.facts.Finding",
        "gpulab.ranks.launch_plan.plan_launch",
        "gpulab.placement.selection.validated_policy",
    } <= paths
    assert len(walked) > 10 * len(gpulab.__all__)


def test_every_public_name_says_what_it_is(walked):
    assert undocumented(walked) == []


def test_every_public_parameter_is_annotated(walked):
    assert unannotated(walked) == []


def test_no_public_name_uses_a_retired_word(walked):
    assert retired(walked) == []


def test_only_the_exercises_say_check(walked):
    assert misplaced_checks(walked) == [], "'check' is the exercises' word: see tests/test_naming.py for the others"


DEMO = {
    "__init__.py": '"""A package the walk reads."""\n',
    "tool.py": '''"""Tools, some of them wrong."""
from __future__ import annotations

from os.path import join  # imported, not defined here: not walked


def documented(x: int) -> int:
    """Documented and annotated."""
    return x


def bare(x: int) -> int:
    return x


def loose(x, *rest: int) -> None:
    """One parameter without an annotation."""


def hold(lease_s: float) -> None:
    """A retired word in a parameter."""


def checked_size(size: int) -> int:
    """The exercises' word, outside the exercises."""
    return size


def _private(x):
    pass


class Thing:
    """A class whose __init__ and property are walked."""

    def __init__(self, size) -> None:
        self.size = size

    @property
    def area(self) -> int:
        return 1

    @staticmethod
    def make(size: int) -> Thing:
        """Made by size."""
        return Thing(size)
''',
    "exercises/__init__.py": '"""The exercises."""\n',
    "exercises/check.py": '"""Where check belongs."""\n\n\ndef check(answer: int, checker: str = "") -> None:\n'
    '    """Check an answer."""\n',
}


def test_each_rule_can_fail(tmp_path, monkeypatch):
    for name, text in DEMO.items():
        (tmp_path / "walkdemo" / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "walkdemo" / name).write_text(text)
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        items = public(importlib.import_module("walkdemo"))
        assert {p.path for p in items} >= {
            "walkdemo.tool.documented",
            "walkdemo.tool.Thing.make",
            "walkdemo.exercises.check.check",
        }
        assert not {"walkdemo.tool.join", "walkdemo.tool._private"} & {p.path for p in items}
        assert sorted(undocumented(items)) == ["walkdemo.tool.Thing.area", "walkdemo.tool.bare"]
        assert sorted(unannotated(items)) == ["walkdemo.tool.Thing.__init__(size)", "walkdemo.tool.loose(x)"]
        assert retired(items) == ["walkdemo.tool.hold: lease_s"]
        assert misplaced_checks(items, home="walkdemo.exercises") == ["walkdemo.tool.checked_size: checked_size"]
    finally:
        for name in [m for m in sys.modules if m == "walkdemo" or m.startswith("walkdemo.")]:
            del sys.modules[name]
