"""How much memory a model needs, worked out on the ``meta`` device without allocating it (a probe).

A tensor on ``meta`` has a shape and a dtype but no storage, so a model of 16 GB can be built in microseconds on a
laptop and its parameters and buffers counted. ``module_size`` also lists tensors that are attributes of a module
but neither parameters nor buffers: ``.to()`` / ``.cuda()`` never move those, the classic bug of
``self.w = nn.Parameter(...).cuda()``. ``allocated_bytes`` measures what a real allocation costs on the CPU or a GPU.

Taught in ``notebooks/01_cpu_gpu_transfer.ipynb``.
"""

from __future__ import annotations

import ctypes
import gc
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..core.arguments import no_argument_function, text
from ..core.tables import Table, TableView, html_table
from ..core.units import format_bytes

__all__ = ["DtypeShare", "ModuleSize", "module_size", "Allocation", "allocated_bytes"]


@dataclass(frozen=True)
class DtypeShare:
    """Parameters or buffers of one dtype: how many numbers and how many bytes."""

    kind: str  # "parameters" or "buffers"
    dtype: str
    numel: int
    nbytes: int


@dataclass(frozen=True)
class ModuleSize(TableView):
    """Parameter and buffer sizes of a module, per dtype, and the tensors that ``.to()`` would leave behind."""

    name: str
    shares: tuple[DtypeShare, ...]
    devices: tuple[str, ...]
    stray_tensors: tuple[str, ...]  # attribute names of plain tensors: not parameters, not buffers

    def _sum(self, kind: str, field: str) -> int:
        return sum(getattr(s, field) for s in self.shares if s.kind == kind)

    @property
    def parameter_bytes(self) -> int:
        """Bytes the parameters occupy (``nbytes`` summed over every dtype)."""
        return self._sum("parameters", "nbytes")

    @property
    def buffer_bytes(self) -> int:
        """Bytes the buffers occupy (batch-norm statistics and the like), which ``.to()`` moves too."""
        return self._sum("buffers", "nbytes")

    @property
    def total_bytes(self) -> int:
        """Parameters and buffers together: what moving the module to a device copies."""
        return self.parameter_bytes + self.buffer_bytes

    def bytes_as(self, dtype: Any) -> int:
        """Bytes if every floating-point parameter and buffer were ``dtype`` (what ``module.to(dtype)`` does)."""
        import torch

        size = torch.empty((), dtype=dtype).element_size()
        return sum(s.numel * size if getattr(torch, s.dtype).is_floating_point else s.nbytes for s in self.shares)

    def _rows(self) -> list[list[str]]:
        return [[s.kind, s.dtype, f"{s.numel:,}", format_bytes(s.nbytes)] for s in self.shares]

    def _notes(self) -> list[str]:
        notes = [
            f"total {format_bytes(self.total_bytes)} ({self.total_bytes:,} bytes) on "
            f"{', '.join(self.devices) or 'no device'}"
        ]
        if self.stray_tensors:
            notes.append(
                f"WARNING: {', '.join(self.stray_tensors)} hold tensors that are neither parameters nor "
                f"buffers: .to()/.cuda() will not move them and the optimizer will not see them. Wrap them "
                f"in nn.Parameter(...) after moving, or register_buffer()."
            )
        return notes

    HEADERS = ("kind", "dtype", "numbers", "bytes")

    def table(self) -> Table:
        """Bytes per kind and dtype, with notes on the tensors ``.to()`` would leave behind."""
        return Table(
            self.HEADERS,
            self._rows() if self.shares else [],
            title=f"{self.name}:",
            notes=self._notes(),
            empty="(no parameters or buffers)",
        )


def _stray_tensors(module: Any) -> tuple[str, ...]:
    import torch

    names = []
    for prefix, sub in module.named_modules():
        for attr, value in vars(sub).items():
            if isinstance(value, torch.Tensor) and not attr.startswith("_"):
                names.append(f"{prefix}.{attr}" if prefix else attr)
    return tuple(names)


def module_size(module_or_factory: Any, *, name: str | None = None) -> ModuleSize:
    """Count a module's parameter and buffer bytes, per dtype.

    Pass a built module (nothing is allocated to measure it), or a factory — a class or a function taking no
    arguments — to build it on the ``meta`` device first, so that even a model larger than this machine's memory
    can be sized. Taught in ``notebooks/01_cpu_gpu_transfer.ipynb``.
    """
    import torch

    if name is not None:
        text(name, "name", example="'my model'")
    if isinstance(module_or_factory, torch.nn.Module):
        module = module_or_factory
    elif callable(module_or_factory):
        no_argument_function(module_or_factory, "module_or_factory", example="lambda: nn.Linear(1024, 1024)")
        with torch.device("meta"):
            module = module_or_factory()
        if not isinstance(module, torch.nn.Module):
            raise TypeError(
                f"the factory returned a {type(module).__name__}, not an nn.Module: pass the model class "
                f"or a function that builds and returns the model, e.g. lambda: MyModel(hidden=512)."
            )
    else:
        raise TypeError(
            f"module_size() takes an nn.Module, or a class/function that builds one; got "
            f"{type(module_or_factory).__name__}."
        )
    totals: dict[tuple[str, str], list[int]] = {}
    devices: set[str] = set()
    for kind, tensors in (("parameters", module.parameters()), ("buffers", module.buffers())):
        for t in tensors:
            dtype = str(t.dtype).removeprefix("torch.")
            entry = totals.setdefault((kind, dtype), [0, 0])
            entry[0] += t.numel()
            entry[1] += t.numel() * t.element_size()
            devices.add(str(t.device))
    shares = tuple(DtypeShare(k, d, n, b) for (k, d), (n, b) in totals.items())
    return ModuleSize(name or type(module).__name__, shares, tuple(sorted(devices)), _stray_tensors(module))


@dataclass(frozen=True)
class Allocation:
    """Bytes that creating something really took on a device, as the allocator or the OS reports them."""

    what: str
    device: str
    nbytes: int
    method: str

    def __str__(self) -> str:
        return f"{self.what} on {self.device}: {format_bytes(self.nbytes)} ({self.method})"

    def _repr_html_(self) -> str:
        return html_table(
            ("what", "device", "measured", "how"), [[self.what, self.device, format_bytes(self.nbytes), self.method]]
        )


def _rss_bytes() -> int:
    import psutil

    return psutil.Process().memory_info().rss


class _MallInfo2(ctypes.Structure):
    """glibc's ``struct mallinfo2`` (``man 3 mallinfo2``, glibc ≥ 2.33): every field a ``size_t``."""

    _fields_ = [
        (name, ctypes.c_size_t)
        for name in (
            "arena",
            "ordblks",
            "smblks",
            "hblks",
            "hblkhd",
            "usmblks",
            "fsmblks",
            "uordblks",
            "fordblks",
            "keepcost",
        )
    ]


def _malloc_bytes() -> int | None:
    """Bytes glibc's malloc has handed out and not taken back, over all its arenas: the heap in use (``uordblks``) plus
    the chunks it mapped on their own (``hblkhd``); None where the C library has no ``mallinfo2`` (macOS, Windows,
    musl, glibc < 2.33).

    Why not the process's resident memory alone: glibc raises its mmap threshold each time a large chunk is freed (up
    to 32 MiB), and later large blocks are then cut from heap memory that is already resident, so after a few
    allocations and frees a new 32 MiB tensor can add nothing to the resident size (seen in the test suite: 128 KiB
    for a 32 MiB float16 tensor). What malloc holds for the block counts it wherever it came from."""
    try:
        mallinfo2 = ctypes.CDLL(None).mallinfo2  # None: the process's own symbols (TypeError on Windows)
    except (OSError, AttributeError, TypeError):
        return None
    mallinfo2.restype, mallinfo2.argtypes = _MallInfo2, []
    info = mallinfo2()
    return int(info.uordblks + info.hblkhd)


def allocated_bytes(make: Callable[[], object], *, what: str = "result") -> Allocation:
    """Measure the host memory ``make()`` allocates and keeps, then free it (on a GPU, torch counts its own:
    ``torch.cuda.memory_allocated``).

    With glibc (Linux): the change in what malloc holds (``mallinfo2``), which counts a tensor's block whether malloc
    mapped new pages for it or reused freed ones. Elsewhere: the change in this process's resident memory, right for a
    large tensor in a fresh process and low once freed memory is reused; ``make`` must then touch what it allocates
    (``torch.ones`` does; ``torch.empty`` leaves pages unmapped). Taught in ``notebooks/01_cpu_gpu_transfer.ipynb``.
    """
    no_argument_function(make, "make", example="lambda: torch.ones(2**20)")
    text(what, "what", example="'a 1 MiB tensor'")
    gc.collect()
    if _malloc_bytes() is not None:
        before = _malloc_bytes()
        kept = make()
        used, method = (_malloc_bytes() or 0) - (before or 0), "bytes malloc holds for it (glibc mallinfo2)"
    else:
        before = _rss_bytes()
        kept = make()
        used, method = _rss_bytes() - before, "process resident memory (psutil RSS)"
    del kept
    gc.collect()
    return Allocation(what, "cpu", used, method)
