"""The arguments of a device call, read without running the code: what ``explain()`` knows of a statement.

A literal, a name assigned above, a ``torch.<dtype>``, or a ``torch.device(...)`` (built by PyTorch itself, so an
invalid string gives PyTorch's own message); anything else is carried along as ``Opaque``. Kept apart from
``device_rules.py``, which follows the current device through the statements.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Any


def name_of(node: ast.expr) -> str:
    """The expression as source text (``torch.cuda.set_device``)."""
    return ast.unparse(node)


def value_of(node: ast.expr, names: dict[str, Any] | None = None) -> Any:
    """A literal, a name assigned above, a ``torch.<dtype>``, or ``torch.device(...)`` built by PyTorch itself;
    anything else is carried along as ``Opaque``."""
    names = names or {}
    if isinstance(node, ast.Name) and node.id in names:
        return names[node.id]
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "torch":
        import torch

        if isinstance(getattr(torch, node.attr, None), torch.dtype):
            return getattr(torch, node.attr)
    if (
        isinstance(node, ast.Call)
        and name_of(node.func).rsplit(".", 1)[-1] == "device"
        and "cuda" not in name_of(node.func)
    ):
        import torch

        args = [value_of(a, names) for a in node.args]
        kw = {k.arg: value_of(k.value, names) for k in node.keywords if k.arg}
        if any(isinstance(v, Opaque) for v in [*args, *kw.values()]):
            return Opaque(ast.unparse(node))
        return torch.device(*args, **kw)
    if isinstance(node, ast.List):
        return [value_of(e, names) for e in node.elts]
    try:
        return ast.literal_eval(node)
    except Exception:  # a variable, a call, an operator: not a value explain() can know
        return Opaque(ast.unparse(node))


def target_of(st: ast.stmt) -> str | None:
    """The name a statement assigns to (``dev = ...``), if it assigns to exactly one plain name."""
    if isinstance(st, ast.Assign) and len(st.targets) == 1 and isinstance(st.targets[0], ast.Name):
        return st.targets[0].id
    if isinstance(st, ast.AnnAssign) and isinstance(st.target, ast.Name) and st.value is not None:
        return st.target.id
    return None


@dataclass(frozen=True)
class Opaque:
    """A non-literal argument (a variable, a model): it is not a device, so it is only carried along."""

    code: str


def cuda_index(dev: Any) -> int:
    """PyTorch's own ``_get_device_index`` for explicit indices (it raises PyTorch's messages for the wrong kind)."""
    from ..machine.compat import cuda_device_index as _get_device_index

    if isinstance(dev, int):
        return dev
    import torch

    d = torch.device(dev) if isinstance(dev, str) else dev
    if getattr(d, "type", None) == "cuda" and d.index is None:
        raise ValueError(f"Expected a torch.device with a specified index or an integer, but got:{d}")
    return _get_device_index(d)
