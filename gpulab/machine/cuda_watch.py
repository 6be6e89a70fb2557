"""Wait for ``torch.cuda`` to be imported, then hook the first call that starts CUDA (``cuda_start``).

``import gpulab`` calls ``install`` (``gpulab/__init__.py``), so that the line that starts CUDA is recorded even when
gpulab is imported before torch, as every chapter does. This module imports nothing but ``sys``, which Python has
loaded before any code runs: the recorder itself (``cuda_start``, with its dataclasses and ``traceback``) is imported
with ``torch.cuda``, whose own import takes a second, so ``import gpulab`` stays within its 10 ms
(``benchmarks/bench_import.py``). Python's import system has no "after import" hook: a finder on ``sys.meta_path``
finds nothing itself, lets the others find ``torch.cuda``, hooks the module once it has run, and removes itself.
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing; checkers read the name as True
if TYPE_CHECKING:
    from collections.abc import Sequence
    from importlib.machinery import ModuleSpec
    from types import ModuleType

__all__ = ["install"]

_finder: _WhenTorchCudaImported | None = None


def install() -> None:
    """Watch for the first CUDA start, and queue the memory cap for it: now if ``torch.cuda`` is imported, else when
    it is (idempotent)."""
    global _finder
    if "torch.cuda" in sys.modules:
        from .cuda_start import hook
        from .memory_cap import watch

        hook(sys.modules["torch.cuda"])
        watch(sys.modules["torch.cuda"])
    elif _finder is None:
        _finder = _WhenTorchCudaImported()
        sys.meta_path.insert(0, _finder)


def _torch_cuda_imported(module: ModuleType) -> None:
    """``torch.cuda`` has just run: hook it, and queue the kernel's memory cap for CUDA's start (``memory_cap``: only
    where ``GPULAB_MEMORY_CAP`` is set)."""
    from .cuda_start import hook
    from .memory_cap import watch

    hook(module)
    watch(module)


class _WhenTorchCudaImported:
    """A ``sys.meta_path`` finder that finds nothing itself: it lets the others find ``torch.cuda``, hooks the module
    once it has run, and removes itself."""

    def find_spec(self, name: str, path: Sequence[str] | None, target: ModuleType | None = None) -> ModuleSpec | None:
        if name != "torch.cuda":
            return None
        global _finder
        if self in sys.meta_path:
            sys.meta_path.remove(self)
        _finder = None
        for finder in sys.meta_path:
            find = getattr(finder, "find_spec", None)
            spec = find(name, path, target) if find is not None else None
            if spec is not None:
                break
        else:
            return None
        loader = spec.loader
        exec_module = getattr(loader, "exec_module", None)
        if exec_module is None:
            return spec

        class _HookAfter:
            def __getattr__(self, attr: str) -> object:
                return getattr(loader, attr)

            def create_module(self, spec: ModuleSpec) -> ModuleType | None:
                return loader.create_module(spec)

            def exec_module(self, module: ModuleType) -> None:
                module.__loader__ = spec.loader = loader  # the module keeps its own loader (source, resources)
                exec_module(module)
                _torch_cuda_imported(module)

        spec.loader = _HookAfter()
        return spec
