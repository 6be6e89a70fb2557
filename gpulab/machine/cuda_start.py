"""Who started CUDA in this process: the first call that initialised it (or tried to), as the learner's own line.

"CUDA has been initialized", "Cannot re-initialize CUDA in forked subprocess", a ``CUDA_VISIBLE_DEVICES`` set too
late: every launcher's answer is "restart the kernel", and none says which line did it. With gpulab imported, the
first call that starts CUDA here is recorded with its Python stack, reduced to the learner's line ("cell [7], line 3:
``x = torch.ones(2).cuda()``"), and the messages that say CUDA has started quote it (``gpulab.cuda_state()``, the
guarded setter, the launcher, the environment report).

Two calls start CUDA, and both are watched (``tests/cuda_tripwire.py`` watches the same two):

* ``torch.cuda._lazy_init``: every CUDA context starts there. ``torch.cuda.init()``, ``set_device``, and PyTorch's
  C++ side (``.cuda()``, ``torch.ones(2, device="cuda")``) call it by looking it up on the ``torch.cuda`` module, so
  replacing the module's attribute sees them all; ``torch.cuda.memory`` and ``torch.cuda.random`` imported it by
  name, so their copies are replaced too. It is private: ``compat`` names it.
* ``torch.cuda.is_available()`` (public): it asks ``cudaGetDeviceCount``, which starts the driver and reads
  ``CUDA_VISIBLE_DEVICES`` without a context.

On a machine without a GPU both are still called, and fail or answer no: the attempt is recorded with its error, so
the record is the same lesson on a laptop. Cost: the first such call pays for one ``traceback.extract_stack``; it
then puts PyTorch's own functions back, so later calls run exactly as without gpulab. ``hook`` is called by
``cuda_watch`` as ``torch.cuda`` is imported (or at ``import gpulab`` if torch came first), so this module, its
dataclasses and ``traceback`` load with torch, not with gpulab.
"""

from __future__ import annotations

import sys
import threading
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..core.frames import code_place, is_library_file
from . import compat

__all__ = ["CodeLine", "CudaStart", "cuda_started_by", "hook"]


@dataclass(frozen=True)
class CodeLine:
    """One frame: where (file or notebook cell, line) and the code on that line."""

    filename: str
    lineno: int
    function: str
    code: str
    cell: int | None = None  # the notebook cell's execution count, when the file is an IPython cell

    @property
    def place(self) -> str:
        """``cell [7], line 3`` for a notebook cell, ``train.py, line 3`` for a file."""
        return code_place(self.filename, self.lineno, self.cell)

    def __str__(self) -> str:
        return f"{self.place}: `{self.code}`" if self.code else self.place


@dataclass(frozen=True)
class CudaStart:
    """The first call in this process that started CUDA, or tried to (``error`` says why it failed)."""

    call: str  # what was called: "torch.cuda.is_available()" or "torch.cuda._lazy_init"
    line: CodeLine | None  # the innermost frame of code the learner wrote (None: only library frames)
    stack: tuple[CodeLine, ...]  # the whole stack, outermost first
    error: str | None = None  # "RuntimeError: Found no NVIDIA driver on your system..." where it failed

    @property
    def where(self) -> str:
        """The learner's line, or the innermost frame outside torch when none is the learner's."""
        if self.line is not None:
            return str(self.line)
        outside = [f for f in self.stack if "/torch/" not in f.filename.replace("\\", "/")]
        return str(outside[-1]) + " (library code)" if outside else "library code"

    def __str__(self) -> str:
        if self.error is None:
            return f"CUDA was started by {self.where} (through {self.call})."
        first = self.error.splitlines()[0] if self.error else "?"
        first = first.split(". ")[0].rstrip(".") + "."
        return f"CUDA was first asked for by {self.where} (through {self.call}); on this machine it failed: {first}"

    def _repr_html_(self) -> str:
        import html

        return f"<p>{html.escape(str(self))}</p>"


_lock = threading.Lock()
_record: CudaStart | None = None
_patched: list[tuple[Any, str, Callable[..., Any], Callable[..., Any]]] = []  # (owner, name, original, wrapper)


def cuda_started_by() -> CudaStart | None:
    """The first call that started CUDA in this process (or tried to), if gpulab was imported before it."""
    return _record


def hook(torch_cuda: Any) -> None:
    """Replace ``torch_cuda``'s two starting calls by wrappers that record the first call and put them back
    (idempotent: once hooked, or once a start is recorded, it does nothing)."""
    with _lock:
        if _record is not None or _patched:
            return
        original = compat.cuda_lazy_init(torch_cuda)
        if original is not None:
            wrapper = _first_call(original, "torch.cuda._lazy_init")
            owners = [
                m
                for name, m in list(sys.modules.items())
                if (name == "torch.cuda" or name.startswith("torch.cuda."))
                and m is not None
                and getattr(m, "_lazy_init", None) is original
            ]
            for owner in owners:
                _patched.append((owner, "_lazy_init", original, wrapper))
        available = getattr(torch_cuda, "is_available", None)
        if callable(available):
            _patched.append(
                (torch_cuda, "is_available", available, _first_call(available, "torch.cuda.is_available()"))
            )
        for owner, name, _, wrapper in _patched:
            setattr(owner, name, wrapper)


def _unhook() -> None:
    """Put PyTorch's functions back (where nothing else replaced them since)."""
    for owner, name, original, wrapper in _patched:
        if getattr(owner, name, None) is wrapper:
            setattr(owner, name, original)
    _patched.clear()


def _first_call(original: Callable[..., Any], call: str) -> Callable[..., Any]:
    def first_cuda_call(*args: Any, **kwargs: Any) -> Any:
        stack = traceback.extract_stack()[:-1]
        with _lock:
            first = _record is None and bool(_patched)
            if first:
                _unhook()  # before calling: re-entrant calls from inside CUDA's start run PyTorch's own code
        if not first:
            return original(*args, **kwargs)
        try:
            result = original(*args, **kwargs)
        except BaseException as exc:
            _remember(call, stack, f"{type(exc).__name__}: {exc}")
            raise
        _remember(call, stack, f"{call} returned False" if result is False else None)
        return result

    first_cuda_call.__wrapped__ = original  # type: ignore[attr-defined]
    first_cuda_call.__doc__ = original.__doc__
    return first_cuda_call


def _remember(call: str, stack: traceback.StackSummary, error: str | None) -> None:
    global _record
    lines = tuple(
        CodeLine(f.filename, f.lineno or 0, f.name, (f.line or "").strip(), compat.ipython_cell_number(f.filename))
        for f in stack
    )
    mine = [f for f in lines if not is_library_file(f.filename)]
    _record = CudaStart(call, mine[-1] if mine else None, lines, error)
