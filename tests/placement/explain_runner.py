"""Run snippets of PyTorch for real and say, statement by statement, where each result lives (by GPU UUID) or what
was raised. Reads a JSON list of snippets on stdin, prints a JSON list of outcome lists as its last line.

Used by tests/placement/explain_evidence.py in a fresh interpreter per CUDA_VISIBLE_DEVICES value; it imports
torch only (nothing of gpulab), so what it reports is PyTorch's behaviour, not gpulab's model of it.
Outcomes: ``{"devices": [uuid, …]}`` (a tensor, a module's parameters, DataParallel's device_ids), ``{"cpu": true}``,
``{"state": true, "devices": […]}`` after a statement that only sets the current or default device (empty when that
device does not exist yet), or ``{"error": "Class: first line"}`` — the last outcome of a snippet that raised.
"""

from __future__ import annotations

import ast
import json
import sys

import torch
from torch import nn


def uuid_of(index: int) -> list[str]:
    """The UUID of ``cuda:index`` in this process, as NVML writes it; [] if there is no such device."""
    if not 0 <= index < torch.cuda.device_count():
        return []
    uuid = str(torch.cuda.get_device_properties(index).uuid)
    return [uuid if uuid.startswith(("GPU-", "MIG-")) else f"GPU-{uuid}"]


def where(value: object) -> dict:
    if isinstance(value, nn.DataParallel):
        return {"devices": [u for i in value.device_ids for u in uuid_of(i)]} if value.device_ids else {"cpu": True}
    if isinstance(value, nn.Module):
        value = next(value.parameters())
    if isinstance(value, torch.Tensor):
        return {"devices": uuid_of(value.device.index)} if value.device.type == "cuda" else {"cpu": True}
    return {"state": True, "devices": []}


def state(kind: str) -> dict:
    """The current CUDA device (after set_device, in a torch.cuda.device block) or the default device."""
    if kind == "current":
        return {"state": True, "devices": uuid_of(torch.cuda.current_device())}
    try:
        made = torch.empty(0)  # where factories create tensors now (a torch.device block, set_default_device)
    except Exception:  # noqa: BLE001 - a device that is only named: PyTorch raises when a tensor is made there
        return {"state": True, "devices": []}
    return (
        {"state": True, "devices": uuid_of(made.device.index)}
        if made.device.type == "cuda"
        else {"state": True, "devices": []}
    )


def _record(call: ast.expr) -> ast.stmt:
    return ast.Expr(ast.Call(ast.Name("__record__", ast.Load()), [call], []))


def _instrument(body: list[ast.stmt]) -> list[ast.stmt]:
    out: list[ast.stmt] = []
    for st in body:
        if isinstance(st, ast.With):
            kind = "current" if "cuda.device(" in ast.unparse(st.items[0].context_expr) else "default"
            entered = ast.Call(ast.Name("__state__", ast.Load()), [ast.Constant(kind)], [])
            st.body = [_record(entered)] + _instrument(st.body)
            out.append(st)
        elif isinstance(st, ast.Expr):
            src = ast.unparse(st.value)
            if "set_device" in src and "default" not in src:
                out += [st, _record(ast.Call(ast.Name("__state__", ast.Load()), [ast.Constant("current")], []))]
            elif "set_default_device" in src:
                out += [st, _record(ast.Call(ast.Name("__state__", ast.Load()), [ast.Constant("default")], []))]
            else:
                out.append(_record(ast.Call(ast.Name("__where__", ast.Load()), [st.value], [])))
        elif isinstance(st, ast.Assign) and len(st.targets) == 1 and isinstance(st.targets[0], ast.Name):
            out += [
                st,
                _record(ast.Call(ast.Name("__where__", ast.Load()), [ast.Name(st.targets[0].id, ast.Load())], [])),
            ]
        else:
            raise ValueError(f"the runner cannot follow {ast.unparse(st)!r}")
    return out


def run(code: str) -> list[dict]:
    outcomes: list[dict] = []
    torch.set_default_device(None)
    if torch.cuda.device_count():
        torch.cuda.set_device(0)  # every snippet starts as a fresh process would: cuda:0 current, CPU default
    tree = ast.Module(_instrument(ast.parse(code).body), [])
    names = {
        "torch": torch,
        "nn": nn,
        "x": torch.ones(2),
        "t": torch.ones(2),
        "loss": torch.ones(1),
        "tensor": torch.ones(2),
        "model": nn.Linear(4, 2),
        "__record__": outcomes.append,
        "__where__": where,
        "__state__": state,
    }
    try:
        exec(compile(ast.fix_missing_locations(tree), "<snippet>", "exec"), names)
    except Exception as exc:  # noqa: BLE001 - the exception is the outcome
        outcomes.append({"error": f"{type(exc).__name__}: {(str(exc).splitlines() or [''])[0]}"})
    finally:
        torch.set_default_device(None)
    return outcomes


if __name__ == "__main__":
    print(json.dumps([run(code) for code in json.load(sys.stdin)]))
