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
import textwrap
from collections.abc import Mapping, Sequence
from typing import Any

from ..core.arguments import gpu_list, shown
from ..core.visible import LogicalDevice, VisibleMap, visible_map
from ..machine.nvml import GpuReader
from ..machine.resolve import as_reader
from .code_values import Opaque, cuda_index, name_of, target_of, value_of
from .cuda_errors import invalid_ordinal, no_gpu_error
from .dataparallel_rule import dataparallel_step
from .explanation import Explanation, Step

__all__ = ["Step", "Explanation", "explain", "CannotExplain"]

_FACTORIES = {"ones", "zeros", "empty", "full", "rand", "randn", "randint", "arange", "tensor", "eye", "linspace"}
_LEGACY = {"FloatTensor", "DoubleTensor", "HalfTensor", "LongTensor", "IntTensor", "BoolTensor", "ByteTensor"}


class CannotExplain(ValueError):
    """The code holds something ``explain()`` does not read (a loop, an unknown call, a device held in a variable it
    cannot see): not an error PyTorch would raise, so it is raised, not reported as a step."""


class _Walker:
    """Follows current device / default device through the statements, like PyTorch's state would change."""

    def __init__(self, vmap: VisibleMap, has_gpus: bool, cuda_error: str = "RuntimeError") -> None:
        self.vmap, self.has_gpus = vmap, has_gpus
        self.invalid_ordinal = invalid_ordinal(cuda_error)  # the class this torch raises for it
        self.current = 0  # torch.cuda.current_device(): 0 until set_device / torch.cuda.device changes it
        self.default: Any = None  # torch.set_default_device / with torch.device(...): None means CPU
        self.names: dict[str, Any] = {}  # dev = torch.device("cuda:1"), ids = [0, 1]: values later lines may use
        self.steps: list[Step] = []

    # -- outcomes ------------------------------------------------------------------------------------------------
    def _on(self, code: str, ks: Sequence[int], why: str) -> Step:
        err = no_gpu_error(self.vmap, self.has_gpus)
        if err:
            return Step(code, f"{why}; but this process would see no GPU ({_why_none(self.vmap)}).", error=err)
        bad = [k for k in ks if not 0 <= k < len(self.vmap.devices)]
        if bad:
            return Step(
                code,
                f"{why}; but cuda:{bad[0]} does not exist: this process sees {len(self.vmap.devices)} "
                f"GPU(s), cuda:0..cuda:{len(self.vmap.devices) - 1}.",
                error=self.invalid_ordinal,
            )
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
            target = target_of(st)
            if target and value is not None and not isinstance(value, ast.Call):
                self.names[target] = value_of(value, self.names)  # a literal (or an unknown, remembered as such)
                continue
            if not isinstance(value, ast.Call):
                raise CannotExplain(
                    f"explain() reads device calls, one per line; it cannot follow {shown(ast.unparse(st))}."
                )
            step = self.call(value)
            self.steps.append(step)
            if step.error:
                return False
            if target:  # dev = torch.device("cuda:1") is remembered; model = model.cuda() is not a device
                is_device = name_of(value.func) in ("torch.device", "device")
                self.names[target] = value_of(value, self.names) if is_device else Opaque(target)
        return True

    def _with(self, st: ast.With) -> bool:
        saved = (self.current, self.default)
        for item in st.items:
            code = f"with {ast.unparse(item.context_expr)}:"
            if not isinstance(item.context_expr, ast.Call):
                raise CannotExplain(
                    f"explain() cannot follow {shown(code)}: it reads `with torch.cuda.device(i):` "
                    "and `with torch.device(...):` blocks."
                )
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
        name = name_of(node.func)
        last = name.rsplit(".", 1)[-1]
        try:
            args = [value_of(a, self.names) for a in node.args]  # torch.device(...) is built, and refused, by PyTorch
            kw = {k.arg: value_of(k.value, self.names) for k in node.keywords if k.arg}
            if last in ("set_device", "set_device_index", "set_device_idx") or (last == "device" and "cuda" in name):
                if last == "device" and not context:
                    return self._cpu(code, "torch.cuda.device(i) does nothing by itself: use it in a `with` block.")
                arg = self._known(args[0] if args else kw.get("device"), code, "torch.cuda.set_device(1)")
                if arg is None and context:  # torch.cuda.device(None) is documented as a no-op
                    return self._cpu(
                        code, f"torch.cuda.device(None) is a no-op: the current device stays cuda:{self.current}."
                    )
                k = cuda_index(arg)
                if k < 0:  # PyTorch documents negative indices as a no-op
                    return self._cpu(
                        code, f"a negative index is a no-op: the current device stays cuda:{self.current}."
                    )
                step = self._on(
                    code,
                    [k],
                    f"makes cuda:{k} the current device"
                    + (" inside the block" if context else " from here on")
                    + " (.cuda() without an index goes there; an explicit index still wins)",
                )
                if not step.error:
                    self.current = k
                return step
            if last == "device" and name in ("torch.device", "device", "t.device"):
                dev = torch.device(
                    *[self._known(a, code, "torch.device('cuda:1')") for a in args],
                    **{k: self._known(v, code, "torch.device('cuda', 1)") for k, v in kw.items()},
                )
                if context:
                    self.default = dev
                    return self._for_later(
                        code, dev, "inside the block, factory functions (torch.ones, …) create tensors on it"
                    )
                return self._for_later(code, dev, "names a device; tensors go there when passed as device=")
            if last == "set_default_device":
                if not args and "device" not in kw:
                    return Step(
                        code,
                        "set_default_device needs the device to use (or None for the CPU).",
                        error="TypeError: set_default_device() missing 1 required positional argument: 'device'",
                    )
                arg = self._known(args[0] if args else kw["device"], code, "torch.set_default_device('cuda:1')")
                dev = None if arg is None else torch.device(arg)
                self.default = dev
                return self._for_later(code, dev, "factory functions (torch.ones, …) now create tensors on it")
            if last == "DataParallel":
                for key, at in (("device_ids", 1), ("output_device", 2)):
                    self._known(
                        kw.get(key, args[at] if len(args) > at else None),
                        code,
                        "nn.DataParallel(model, device_ids=[0, 1])",
                    )
                return dataparallel_step(self, code, args, kw)
            if last == "cuda":
                dev = self._known(args[0] if args else kw.get("device"), code, "x.cuda(1)")
                return self._move(code, dev, cuda_only=True)
            if last == "to":
                dev = self._known(kw.get("device", args[0] if args else None), code, "x.to('cuda:1')")
                if isinstance(dev, str) or isinstance(dev, int) or isinstance(dev, torch.device):
                    return self._move(code, dev, cuda_only=False)
                return self._cpu(code, ".to() without a device leaves the tensor where it is.")
            if last in _LEGACY and "cuda" in name:
                return self._on(
                    code, [self.current], f"torch.cuda.{last} builds on the current device cuda:{self.current}"
                )
            if last in _FACTORIES:
                dev = self._known(kw.get("device", self.default), code, "torch.ones(3, device='cuda:1')")
                if dev is None:
                    return self._cpu(
                        code,
                        "no device= and no default device: the tensor is created on the CPU "
                        "(torch.cuda.device(i) and set_device do not change this).",
                    )
                return self._device_here(code, torch.device(dev), "created where device=/the default device says")
        except CannotExplain:
            raise
        except (RuntimeError, ValueError, TypeError) as exc:
            return Step(
                code,
                "PyTorch refuses the argument before touching any GPU.",
                error=f"{type(exc).__name__}: {(str(exc).splitlines() or [''])[0]}",
            )
        raise CannotExplain(
            f"explain() does not know {name if len(name) <= 40 else name[:39] + '…'}(…); it reads .cuda, .to, "
            "set_device, torch.cuda.device, torch.device, set_default_device, torch.accelerator.set_device_index, "
            "tensor factories and DataParallel."
        )

    def _known(self, value: Any, code: str, example: str) -> Any:
        """``value`` itself, unless it is a name or expression whose value explain() cannot see."""
        unknown = [v for v in (value if isinstance(value, list) else [value]) if isinstance(v, Opaque)]
        if unknown:
            raise CannotExplain(
                f"explain() cannot see what {shown(unknown[0].code, 40)} holds in {shown(code, 60)}: it reads devices "
                f"written in the line, or assigned on a line above (dev = torch.device('cuda:1')). Write the device "
                f"itself, e.g. {example}."
            )
        return value

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
        return self._on(
            code,
            [k],
            f"{dev} {why}" + ("" if dev.index is not None else f" (no index, so the current device, cuda:{k})"),
        )

    def _for_later(self, code: str, dev: Any, why: str) -> Step:
        """A device only named (``torch.device``, a device context, a default device): PyTorch checks nothing yet."""
        step = self._device_here(code, dev, why)
        if not step.error:
            return step
        return Step(
            code, f"{step.sentence} PyTorch accepts the name; the first tensor created there raises {step.error}."
        )


def _why_none(vmap: VisibleMap) -> str:
    return vmap.notes[0] if vmap.notes else "no GPU is visible"


def _describe(vmap: VisibleMap, d: LogicalDevice) -> str:
    if vmap.raw is None:
        because = "CUDA_VISIBLE_DEVICES is unset, so cuda:k is the k-th GPU"
    else:
        because = f"entry {d.cuda_index} (from 0) of CUDA_VISIBLE_DEVICES={vmap.raw!r}"
    slice_ = f", MIG slice {d.mig_uuid}" if d.mig_uuid else ""
    return f"cuda:{d.cuda_index} is physical GPU {d.physical_index} ({d.name}{slice_}): {because}"


def explain(
    code: str,
    machine: GpuReader | str | None = None,
    env: Mapping[str, str] | None = None,
    *,
    torch_version: str | None = None,
) -> Explanation:
    """Say where each statement of ``code`` would put its work on this (or a described) machine, and why.

    ``machine``: a preset name (``"workshop-8"``) or a ``GpuReader`` (e.g. ``SimulatedGpuReader("workshop-8")``);
    default: this machine, read through NVML (no CUDA context). ``env``: the
    environment of the process that would run the code (default: this one), e.g. ``{"CUDA_VISIBLE_DEVICES":
    "2,3,4,5"}``. ``torch_version``: the torch release that would run it (default: this one), which decides the class
    of a CUDA error (``AcceleratorError`` from 2.8 on, ``RuntimeError`` before). Execution stops at the first statement
    that raises. The answer is a prediction from PyTorch's rules, and says so (and SIMULATED, on a described machine).
    ``ValueError`` for code it cannot read.
    """
    if not isinstance(code, str):
        raise TypeError(
            f'explain() reads PyTorch code given as text, e.g. explain("model.cuda(1)"); got a '
            f"{type(code).__name__} {shown(code)}."
        )
    from ..machine.compat import cuda_error_class

    cuda_error = cuda_error_class(torch_version)  # refuses a version it cannot read before anything else
    gpus = gpu_list(as_reader(machine))  # read without processes: only the GPUs themselves matter here
    vmap = visible_map(gpus, env)
    source = textwrap.dedent(code).strip()
    try:
        tree = ast.parse(source)
    except SyntaxError as exc:
        raise ValueError(
            f"explain() needs Python statements, one device call per line; {shown(code)} does not parse ({exc.msg})."
        ) from exc
    except (RecursionError, MemoryError):
        raise ValueError(
            f"explain() cannot read {shown(code)}: it is nested too deeply for Python's parser. Give it "
            "the device calls one per line, e.g. model.cuda(1)."
        ) from None
    if not tree.body:
        raise ValueError(
            "explain() was given no statement to read (the code is empty or only comments). Give it the "
            'lines to follow, e.g. explain("torch.cuda.set_device(1)\\nmodel.cuda()", "workshop-8", '
            'env={"CUDA_VISIBLE_DEVICES": "2,3"}).'
        )
    walker = _Walker(vmap, bool(gpus), cuda_error)
    try:
        walker.run(tree.body)
    except RecursionError:
        raise ValueError(
            f"explain() cannot follow {shown(code)}: an expression is nested too deeply. Give it the "
            "device calls one per line, e.g. model.cuda(1)."
        ) from None
    return Explanation(vmap, tuple(walker.steps), gpu_count=len(gpus))
