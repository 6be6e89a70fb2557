"""Which physical GPU a line of PyTorch lands on, and why — or the error it raises — without running it on a GPU.

``explain("model.cuda(1)", reader, env={"CUDA_VISIBLE_DEVICES": "2,3,4,5"})`` reads the statements (``.cuda()``,
``.to()``, ``torch.cuda.set_device``, ``with torch.cuda.device(i):``, ``with torch.device(...)``,
``torch.set_default_device``, ``torch.accelerator.set_device_index``, tensor factories, ``DataParallel``), follows the
current device the way PyTorch does, and maps each ``cuda:k`` through ``CUDA_VISIBLE_DEVICES`` to a physical GPU of
the described machine. Device strings are checked by PyTorch's own parser (``torch.device``), so an invalid one gives
PyTorch's real message (``model.cuda('cuda:1,2')`` → ``Invalid device string``). Nothing here touches CUDA, so it works
on a machine with no GPU. Taught in ``notebooks/02_choosing_gpus.ipynb``.
"""
from __future__ import annotations

import ast
import html
import textwrap
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..machine.nvml import GpuReader, default_reader
from ..core.readings import GpuInfo
from .visible import LogicalDevice, VisibleMap, visible_map

__all__ = ["Step", "Explanation", "explain"]

_FACTORIES = {"ones", "zeros", "empty", "full", "rand", "randn", "randint", "arange", "tensor", "eye", "linspace"}
_LEGACY = {"FloatTensor", "DoubleTensor", "HalfTensor", "LongTensor", "IntTensor", "BoolTensor", "ByteTensor"}
_INVALID_ORDINAL = "RuntimeError: CUDA error: invalid device ordinal"


@dataclass(frozen=True)
class Step:
    """One statement: where its result lives (``cuda_indices``, mapped to ``physical``), why, or the error it raises."""

    code: str
    sentence: str
    cuda_indices: tuple[int, ...] = ()
    physical: tuple[LogicalDevice, ...] = ()
    error: str | None = None
    on_cpu: bool = False

    def __str__(self) -> str:
        head = f"{self.code}\n  → "
        return head + (f"raises {self.error}\n    " if self.error else "") + self.sentence


@dataclass(frozen=True)
class Explanation:
    """The steps of a snippet under one environment, on one (real or described) machine."""

    visible: VisibleMap
    steps: tuple[Step, ...]

    @property
    def error(self) -> str | None:
        return self.steps[-1].error if self.steps else None

    @property
    def physical_indices(self) -> tuple[int, ...]:
        """Physical GPUs (nvidia-smi numbers) the last statement's work lands on; empty for the CPU or an error."""
        return tuple(d.physical_index for d in self.steps[-1].physical) if self.steps else ()

    def __str__(self) -> str:
        head = self.visible.__str__().splitlines()[0]
        return "\n".join([head, *(str(s) for s in self.steps)])

    def _repr_html_(self) -> str:
        rows = "".join(
            f"<tr><td><code>{html.escape(s.code)}</code></td><td>"
            + (f"<b style='color:#b00'>raises {html.escape(s.error)}</b><br>" if s.error else "")
            + f"{html.escape(s.sentence)}</td></tr>" for s in self.steps)
        return (f"<div><code>{html.escape(str(self).splitlines()[0])}</code><table style='border-collapse:collapse'>"
                f"{rows}</table></div>")


def _machine(gpus: Sequence[GpuInfo] | GpuReader | None) -> tuple[GpuInfo, ...]:
    if gpus is None:
        gpus = default_reader()
    if isinstance(gpus, GpuReader):
        return tuple(gpus.info(i, processes=False) for i in range(gpus.count()))
    return tuple(gpus)


class _Walker:
    """Follows current device / default device through the statements, like PyTorch's state would change."""

    def __init__(self, vmap: VisibleMap, has_gpus: bool) -> None:
        self.vmap, self.has_gpus = vmap, has_gpus
        self.current = 0  # torch.cuda.current_device(): 0 until set_device / torch.cuda.device changes it
        self.default: Any = None  # torch.set_default_device / with torch.device(...): None means CPU
        self.steps: list[Step] = []

    # -- outcomes ------------------------------------------------------------------------------------------------
    def _no_gpu_error(self) -> str | None:
        if not self.has_gpus:
            return "RuntimeError: Found no NVIDIA driver on your system. (This machine has no GPU.)"
        if not self.vmap.devices:
            return "RuntimeError: No CUDA GPUs are available"
        return None

    def _on(self, code: str, ks: Sequence[int], why: str) -> Step:
        err = self._no_gpu_error()
        if err:
            return Step(code, f"{why}; but this process would see no GPU ({_why_none(self.vmap)}).", error=err)
        bad = [k for k in ks if not 0 <= k < len(self.vmap.devices)]
        if bad:
            return Step(code, f"{why}; but cuda:{bad[0]} does not exist: this process sees {len(self.vmap.devices)} "
                        f"GPU(s), cuda:0..cuda:{len(self.vmap.devices) - 1}.", error=_INVALID_ORDINAL)
        phys = tuple(self.vmap.devices[k] for k in ks)
        where = "; ".join(_describe(self.vmap, d) for d in phys)
        return Step(code, f"{why}: {where}.", tuple(ks), phys)

    def _cpu(self, code: str, why: str) -> Step:
        return Step(code, why, on_cpu=True)

    # -- statements ------------------------------------------------------------------------------------------------
    def run(self, stmts: list[ast.stmt]) -> bool:
        for st in stmts:
            if isinstance(st, ast.With):
                if not self._with(st):
                    return False
                continue
            value = st.value if isinstance(st, (ast.Expr, ast.Assign, ast.AnnAssign)) else None
            if not isinstance(value, ast.Call):
                raise ValueError(f"explain() reads device calls, one per line; it cannot follow {ast.unparse(st)!r}.")
            step = self.call(value)
            self.steps.append(step)
            if step.error:
                return False
        return True

    def _with(self, st: ast.With) -> bool:
        saved = (self.current, self.default)
        for item in st.items:
            code = f"with {ast.unparse(item.context_expr)}:"
            if not isinstance(item.context_expr, ast.Call):
                raise ValueError(f"explain() cannot follow {code!r}")
            step = self.call(item.context_expr, context=True)
            self.steps.append(step)
            if step.error:
                return False
        ok = self.run(st.body)
        self.current, self.default = saved
        return ok

    def call(self, node: ast.Call, *, context: bool = False) -> Step:
        import torch

        code = ast.unparse(node) if not context else f"with {ast.unparse(node)}:"
        name = _name(node.func)
        last = name.rsplit(".", 1)[-1]
        try:
            args = [_value(a) for a in node.args]  # torch.device(...) arguments are built, and refused, by PyTorch
            kw = {k.arg: _value(k.value) for k in node.keywords if k.arg}
            if last in ("set_device", "set_device_index", "set_device_idx") or (last == "device" and "cuda" in name):
                if last == "device" and not context:
                    return self._cpu(code, "torch.cuda.device(i) does nothing by itself: use it in a `with` block.")
                arg = args[0] if args else kw.get("device")
                if arg is None and context:  # torch.cuda.device(None) is documented as a no-op
                    return self._cpu(code, f"torch.cuda.device(None) is a no-op: the current device stays cuda:{self.current}.")
                k = _cuda_index(arg)
                if k < 0:  # PyTorch documents negative indices as a no-op
                    return self._cpu(code, f"a negative index is a no-op: the current device stays cuda:{self.current}.")
                step = self._on(code, [k], f"makes cuda:{k} the current device"
                                + (" inside the block" if context else " from here on")
                                + " (.cuda() without an index goes there; an explicit index still wins)")
                if not step.error:
                    self.current = k
                return step
            if last == "device" and name in ("torch.device", "device", "t.device"):
                dev = torch.device(*args)
                if context:
                    self.default = dev
                    return self._for_later(code, dev, "inside the block, factory functions (torch.ones, …) create "
                                                      "tensors on it")
                return self._for_later(code, dev, "names a device; tensors go there when passed as device=")
            if last == "set_default_device":
                dev = None if args[0] is None else torch.device(args[0])
                self.default = dev
                return self._for_later(code, dev, "factory functions (torch.ones, …) now create tensors on it")
            if last == "DataParallel":
                return self._dataparallel(code, args, kw)
            if last == "cuda":
                dev = args[0] if args else kw.get("device")
                return self._move(code, dev, cuda_only=True)
            if last == "to":
                dev = kw.get("device", args[0] if args else None)
                if isinstance(dev, str) or isinstance(dev, int) or isinstance(dev, torch.device):
                    return self._move(code, dev, cuda_only=False)
                return self._cpu(code, ".to() without a device leaves the tensor where it is.")
            if last in _LEGACY and "cuda" in name:
                return self._on(code, [self.current], f"torch.cuda.{last} builds on the current device cuda:{self.current}")
            if last in _FACTORIES:
                dev = kw.get("device", self.default)
                if dev is None:
                    return self._cpu(code, "no device= and no default device: the tensor is created on the CPU "
                                           "(torch.cuda.device(i) and set_device do not change this).")
                return self._device_here(code, torch.device(dev), "created where device=/the default device says")
        except (RuntimeError, ValueError, TypeError) as exc:
            return Step(code, "PyTorch refuses the argument before touching any GPU.",
                        error=f"{type(exc).__name__}: {str(exc).splitlines()[0]}")
        raise ValueError(f"explain() does not know {name}(…); it reads .cuda, .to, set_device, torch.cuda.device, "
                         "torch.device, set_default_device, torch.accelerator.set_device_index, tensor factories "
                         "and DataParallel.")

    def _move(self, code: str, dev: Any, *, cuda_only: bool) -> Step:
        import torch

        if dev is None:
            return self._on(code, [self.current], f"no index given, so the current device, cuda:{self.current}")
        d = torch.device("cuda", dev) if isinstance(dev, int) else torch.device(dev)
        if cuda_only and d.type != "cuda":
            raise RuntimeError("Invalid device, must be cuda device")
        return self._device_here(code, d, "is asked for explicitly (this beats set_device and torch.cuda.device)")

    def _device_here(self, code: str, dev: Any, why: str) -> Step:
        if dev is None or dev.type != "cuda":
            return self._cpu(code, f"{why}: {dev or 'cpu'} — no GPU involved.")
        k = self.current if dev.index is None else dev.index
        return self._on(code, [k], f"{dev} {why}" + ("" if dev.index is not None else f" (no index, so the current device, cuda:{k})"))

    def _for_later(self, code: str, dev: Any, why: str) -> Step:
        """A device only named (``torch.device``, a device context, a default device): PyTorch checks nothing yet."""
        step = self._device_here(code, dev, why)
        if not step.error:
            return step
        return Step(code, f"{step.sentence} PyTorch accepts the name; the first tensor created there raises {step.error}.")

    def _dataparallel(self, code: str, args: list[Any], kw: dict[str, Any]) -> Step:
        ids = kw.get("device_ids", args[1] if len(args) > 1 else None)
        if self._no_gpu_error():
            return self._cpu(code, "with no usable GPU, DataParallel silently wraps nothing: the model stays where it "
                                   "is and runs on one device (PyTorch gives no warning).")
        if ids is None:
            ids = list(range(len(self.vmap.devices)))
            why = "device_ids defaults to every visible GPU"
        else:
            ids = [_cuda_index(i) for i in ids]
            why = f"device_ids={ids}"
        out = kw.get("output_device", ids[0] if ids else None)
        step = self._on(code, ids, f"{why}; the model must already be on cuda:{ids[0]} (device_ids[0]), is copied to "
                                   f"the others every forward, and outputs are gathered on cuda:{out}")
        if step.error == _INVALID_ORDINAL:  # DataParallel checks the ids itself first
            step = Step(step.code, step.sentence, error="AssertionError: Invalid device id")
        return step


def _why_none(vmap: VisibleMap) -> str:
    return vmap.notes[0] if vmap.notes else "no GPU is visible"


def _describe(vmap: VisibleMap, d: LogicalDevice) -> str:
    if vmap.raw is None:
        because = "CUDA_VISIBLE_DEVICES is unset, so cuda:k is the k-th GPU"
    else:
        because = f"entry {d.cuda_index} (from 0) of CUDA_VISIBLE_DEVICES={vmap.raw!r}"
    slice_ = f", MIG slice {d.mig_uuid}" if d.mig_uuid else ""
    return f"cuda:{d.cuda_index} is physical GPU {d.physical_index} ({d.name}{slice_}): {because}"


def _name(node: ast.expr) -> str:
    return ast.unparse(node)


def _value(node: ast.expr) -> Any:
    """A literal, or ``torch.device(...)`` built by PyTorch itself from literal arguments."""
    if isinstance(node, ast.Call) and _name(node.func).rsplit(".", 1)[-1] == "device":
        import torch

        return torch.device(*[_value(a) for a in node.args])
    try:
        return ast.literal_eval(node)
    except ValueError:
        return _Opaque(ast.unparse(node))


@dataclass(frozen=True)
class _Opaque:
    """A non-literal argument (a variable, a model): it is not a device, so it is only carried along."""

    code: str


def _cuda_index(dev: Any) -> int:
    """PyTorch's own ``_get_device_index`` for explicit indices (it raises PyTorch's messages for the wrong kind)."""
    from torch.cuda._utils import _get_device_index

    if isinstance(dev, int):
        return dev
    import torch

    d = torch.device(dev) if isinstance(dev, str) else dev
    if getattr(d, "type", None) == "cuda" and d.index is None:
        raise ValueError(f"Expected a torch.device with a specified index or an integer, but got:{d}")
    return _get_device_index(d)


def explain(code: str, gpus: Sequence[GpuInfo] | GpuReader | None = None,
            env: Mapping[str, str] | None = None) -> Explanation:
    """Say where each statement of ``code`` puts its work on this (or a described) machine, and why.

    ``gpus``: a ``GpuReader`` (e.g. ``SimulatedGpuReader("workshop-8")``) or ``GpuInfo``s; default: this machine,
    read through NVML (no CUDA context). ``env``: the environment of the process that would run the code (default:
    this one), e.g. ``{"CUDA_VISIBLE_DEVICES": "2,3,4,5"}``. Execution stops at the first statement that raises.
    """
    machine = _machine(gpus)
    vmap = visible_map(machine, env)
    try:
        tree = ast.parse(textwrap.dedent(code).strip())
    except SyntaxError as exc:
        raise ValueError(f"explain() needs Python statements, one device call per line; {code!r} does not parse "
                         f"({exc.msg}).") from exc
    walker = _Walker(vmap, bool(machine))
    walker.run(tree.body)
    return Explanation(vmap, tuple(walker.steps))
