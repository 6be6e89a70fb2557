"""A subpackage's names, imported on first use: ``from gpulab.scaling import speedup`` loads only ``scaling/cost.py``.

Each subpackage's ``__init__`` lists the names the chapters use and the module that defines each, then calls
``export_lazily``. Nothing is imported until a name is asked for, so importing one light module of a subpackage (its
``__init__`` runs first) never drags torch, ipywidgets or Lightning in behind it; ``tests/test_layers.py`` keeps the
floors, ``tests/test_subpackages.py`` the names.

A few names are also their module's name (``dataparallel.gradients`` defines ``gradients()``). Python binds a
submodule to its package's attribute when it is first imported, by any importer, which would hide the function behind
its module; the package's class here binds the function instead, so ``from gpulab.dataparallel import gradients``
gives the function whichever module was imported first. ``from gpulab.dataparallel.gradients import …`` still reads
the module (pure; standard library only).
"""
from __future__ import annotations

import importlib
import sys
from types import ModuleType

TYPE_CHECKING = False  # typing costs ~2 ms at import gpulab (machine/__init__ uses this module); annotations only
if TYPE_CHECKING:
    from typing import Any


class _Package(ModuleType):
    """A package whose exported names win over its submodules of the same name."""

    def __setattr__(self, name: str, value: Any) -> None:
        exports = self.__dict__.get("_EXPORTS", {})
        if isinstance(value, ModuleType) and exports.get(name) == name and hasattr(value, name):
            value = getattr(value, name)
        super().__setattr__(name, value)


def export_lazily(package: str, exports: dict[str, str]) -> None:
    """Give ``package`` a ``__getattr__`` and ``__dir__`` that import each of ``exports`` (name -> module, relative to
    the package) on first use, and its ``__all__``."""
    module = sys.modules[package]
    namespace = module.__dict__

    def __getattr__(name: str) -> Any:
        source = exports.get(name)
        if source is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package}.{source}"), name)
        namespace[name] = value  # later lookups skip __getattr__
        return value

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(exports))

    namespace.update(_EXPORTS=exports, __all__=list(exports), __getattr__=__getattr__, __dir__=__dir__)
    module.__class__ = _Package
