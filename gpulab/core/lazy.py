"""A subpackage's names, imported on first use: ``from gpulab.scaling import speedup`` loads only ``scaling/cost.py``.

Each subpackage's ``__init__`` lists the names the chapters use and the module that defines each, then calls
``export_lazily``. Nothing is imported until a name is asked for, so importing one light module of a subpackage (its
``__init__`` runs first) never drags torch, ipywidgets or Lightning in behind it; ``tests/test_layers.py`` keeps the
floors, ``tests/test_subpackages.py`` the names.

No exported name is also the name of a module of its subpackage (``tests/test_subpackages.py``): Python binds a
submodule to its package's attribute when anything first imports it, which would hide a function of the same name
behind its module, and ``import gpulab.<package>.<name> as m`` would give the function where the module was meant.
"""

from __future__ import annotations

import importlib
import sys

TYPE_CHECKING = False  # typing costs ~2 ms at import gpulab (machine/__init__ uses this module); annotations only
if TYPE_CHECKING:
    from typing import Any


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

    namespace.update(__all__=list(exports), __getattr__=__getattr__, __dir__=__dir__)
