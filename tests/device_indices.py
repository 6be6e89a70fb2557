"""Find the GPUs a chapter cell names in its code, and the cells that name more GPUs than the machines they run on.

A cell runs on every machine its tags allow (``tests/which_cells_run.py``): an untagged cell on 0, 1 or more GPUs,
a ``gpu`` cell from one GPU up. On a CPU machine much of CUDA is never checked: ``DataParallel`` ignores
``device_ids`` altogether, so ``DataParallel(model, device_ids=[0, 1])`` ran in every CPU run of chapter 03 and raised
``AssertionError: Invalid device id`` on the first machine with one GPU (one H100, the GPU run of 2026-11-26). This
module reads each cell's executable code with ``ast`` and reports every device index and ``device_ids`` list that
needs more GPUs than the cell can have:

- an index ≥ 1 as ``"cuda:1"`` (a string argument of a call, an assigned value, a default), ``.cuda(1)``,
  ``.to(1)``, ``torch.device("cuda", 1)``, ``set_device(1)``, ``torch.cuda.<function>(1)``, ``device=1``,
  ``output_device=1``, ``map_location=1``;
- ``device_ids`` (a keyword, ``DataParallel``'s second argument, or a variable of that name) or Lightning's
  ``devices`` given as a literal list naming two or more GPUs (``[0, 1]``, ``range(2)``).

Not reported: strings that hold code or prose (``explain("model.cuda(1)")``, ``print("cuda:1 is ...")``), dict keys,
comments, the bodies of cell magics other than ``%%gpu``/``%%ranks``, cells tagged ``raises-exception`` (they are
meant to fail), and code in a branch guarded by the GPU count: an ``if``/``else``/conditional expression whose test
calls ``cuda_gpu_count()``, ``torch.cuda.device_count()`` or ``too_few_gpus(n)``, or reads a name the chapter binds to
one of them. Where such a test can be evaluated for 0 to 8 GPUs, the branch must not run on a machine with too few
(``if gpus >= 1:`` does not cover ``cuda:1``); a test it cannot evaluate is trusted. Line numbers are the cell's own.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from tests.which_cells_run import gpus_needed

COUNT_CALLS = {"cuda_gpu_count", "device_count", "too_few_gpus"}
PYTHON_CELL_MAGICS = {"gpu", "ranks", "time", "capture"}  # cell magics whose body is Python run in the kernel
TEXT_CALLS = {"print", "explain", "display"}  # their string arguments are text or code to explain, never a device
INDEX_KEYWORDS = {"device", "output_device", "map_location"}
LIST_KEYWORDS = {"device_ids", "devices"}
DEVICE_STRING = re.compile(r"cuda:(\d+)")
COUNTS = range(0, 9)  # the machines a guard is evaluated for
SAFE = {"len": len, "range": range, "list": list, "min": min, "max": max, "bool": bool, "int": int}


@dataclass(frozen=True)
class Finding:
    """A device index or ``device_ids`` list a cell names: where, and how many GPUs it needs."""

    line: int
    code: str
    what: str  # "device index 1", "device_ids of 2 GPUs"
    n_gpus: int  # the GPUs the machine needs for it: index + 1, or the list's length / highest index + 1


def python_code(source: str) -> str:
    """The cell's code as Python, one line for each of the cell's lines: a ``%%gpu``/``%%ranks`` line becomes ``pass``
    (its body is Python), a cell of another cell magic becomes empty, line magics and ``!`` become calls."""
    lines = source.split("\n")
    first = next((i for i, line in enumerate(lines) if line.strip()), len(lines))
    if first < len(lines) and lines[first].lstrip().startswith("%%"):
        if lines[first].lstrip()[2:].split(" ")[0] not in PYTHON_CELL_MAGICS:
            return ""
        first += 1
    code = "\n".join(["pass"] * first + lines[first:])  # IPython drops leading blank lines: keep the numbering
    from IPython.core.inputtransformer2 import TransformerManager

    return TransformerManager().transform_cell(code)  # keeps one line per line: a line magic becomes one call


def _dotted(node: ast.AST) -> str:
    """``torch.cuda.set_device`` for that attribute chain; ``""`` for anything else."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return ""


def _name(call: ast.Call) -> str:
    """The called name: ``cuda`` for ``cnn().cuda(1)``, ``set_device`` for ``torch.cuda.set_device(1)``."""
    func = call.func
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""


def _int(node: ast.AST) -> int | None:
    is_int = isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool)
    return node.value if is_int else None


def _device_string(node: ast.AST) -> int | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        m = DEVICE_STRING.fullmatch(node.value.strip())
        return int(m.group(1)) if m else None
    return None


def _literal_ids(node: ast.AST) -> list[int] | None:
    """``[0, 1]``, ``(0, 1)``, ``range(2)``, ``list(range(2))`` as a list of indices; ``None`` if not a literal."""
    if isinstance(node, ast.Call) and _name(node) in ("list", "tuple") and len(node.args) == 1:
        return _literal_ids(node.args[0])
    if (
        isinstance(node, ast.Call)
        and _name(node) == "range"
        and node.args
        and all(_int(a) is not None for a in node.args)
    ):
        return list(range(*[_int(a) for a in node.args]))
    if isinstance(node, (ast.List, ast.Tuple)):
        ids = [_int(e) if _int(e) is not None else _device_string(e) for e in node.elts]
        return ids if ids and all(i is not None for i in ids) else None
    return None


def _elements(node: ast.AST) -> list[ast.AST]:
    return list(node.elts) if isinstance(node, (ast.List, ast.Tuple, ast.Set)) else [node]


def _raw_findings(tree: ast.AST, source: str) -> list[tuple[ast.AST, Finding]]:
    out: list[tuple[ast.AST, Finding]] = []

    def index(node: ast.AST, k: int | None, at: ast.AST) -> None:
        if k is not None and k >= 1:
            code = ast.get_source_segment(source, at) or ast.unparse(at)
            out.append((node, Finding(node.lineno, code, f"device index {k}", k + 1)))

    def id_list(node: ast.AST, at: ast.AST, what: str) -> None:
        ids = _literal_ids(node)
        if ids and (len(ids) >= 2 or max(ids) >= 1):
            code = ast.get_source_segment(source, at) or ast.unparse(at)
            out.append(
                (node, Finding(node.lineno, code, f"{what} of {len(ids)} GPU(s) {ids}", max(len(ids), max(ids) + 1)))
            )

    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            name, dotted = _name(node), _dotted(node.func)
            if name not in TEXT_CALLS:
                listed = [kw.value for kw in node.keywords if kw.arg in LIST_KEYWORDS and _literal_ids(kw.value)]
                for arg in [a for a in [*node.args, *(kw.value for kw in node.keywords)] if a not in listed]:
                    for e in _elements(arg):
                        index(e, _device_string(e), node)
            first = _int(node.args[0]) if node.args else None
            cuda_function = dotted.startswith("torch.cuda.") and name.islower() and "seed" not in name  # not types
            if name in ("cuda", "to", "set_device") or cuda_function:
                index(node, first, node)
            if name == "device":
                for a in node.args:
                    index(node, _int(a), node)
            for kw in node.keywords:
                if kw.arg in INDEX_KEYWORDS:
                    index(kw.value, _int(kw.value), node)
                if kw.arg in LIST_KEYWORDS:
                    id_list(kw.value, node, kw.arg)
            if name in ("DataParallel", "DistributedDataParallel") and len(node.args) >= 2:
                id_list(node.args[1], node, "device_ids")
        elif isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for e in _elements(node.value):
                index(e, _device_string(e), node)
            if any(isinstance(t, ast.Name) and t.id == "device_ids" for t in targets):
                id_list(node.value, node, "device_ids")
        elif isinstance(node, ast.arguments):
            for d in [*node.defaults, *(d for d in node.kw_defaults if d is not None)]:
                index(d, _device_string(d), d)
    return out


def count_names(sources: Iterable[str]) -> dict[str, ast.expr]:
    """Names a chapter binds to a function of the GPU count alone (``gpus = gpulab.cuda_gpu_count()``,
    ``ids = list(range(gpus))``), each with its expression."""
    names: dict[str, ast.expr] = {}
    trees = [ast.parse(code) for code in map(python_code, sources) if _parses(code)]
    changed = True
    while changed:
        changed = False
        for tree in trees:
            for node in ast.walk(tree):
                if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                    target = node.targets[0].id
                    if target not in names and _mentions_count(node.value, names) and _countable(node.value, names):
                        names[target] = node.value
                        changed = True
    return names


def _countable(expr: ast.AST, names: dict[str, ast.expr]) -> bool:
    """Whether ``expr`` is a function of the GPU count alone: constants, count calls, ``len``/``range``/... and other
    such names (``gpus >= 2``, ``list(range(gpus))``), so a guard that reads it can be evaluated for each count."""
    for n in ast.walk(expr):
        if isinstance(n, ast.Call) and not (
            _name(n) in COUNT_CALLS or (isinstance(n.func, ast.Name) and n.func.id in SAFE)
        ):
            return False
        if isinstance(n, ast.Name) and not (n.id in names or n.id in SAFE or n.id in ("gpulab", "torch")):
            return False
    return True


def _parses(code: str) -> bool:
    try:
        ast.parse(code)
    except SyntaxError:
        return False
    return True


def _mentions_count(expr: ast.AST, names: dict[str, ast.expr]) -> bool:
    return any(
        (isinstance(n, ast.Call) and _name(n) in COUNT_CALLS) or (isinstance(n, ast.Name) and n.id in names)
        for n in ast.walk(expr)
    )


class _WithCount(ast.NodeTransformer):
    """The guard's test with the GPU count put in: ``cuda_gpu_count()`` -> c, ``too_few_gpus(n)`` -> None or a
    reason, a count name -> its expression with the same done to it, ``x := e`` -> e."""

    def __init__(self, count: int, names: dict[str, ast.expr]) -> None:
        self.count, self.names = count, names

    def visit_Call(self, node: ast.Call) -> ast.AST:
        if _name(node) in ("cuda_gpu_count", "device_count"):
            return ast.Constant(self.count)
        if _name(node) == "too_few_gpus":
            needed = _int(node.args[0]) if node.args else 1
            if needed is None:
                raise ValueError("too_few_gpus of a computed number")
            reason = ast.Constant(None if self.count >= needed else "too few")
            return ast.Call(ast.Name("_as_is", ast.Load()), [reason], [])  # `x is None` on a name, not a literal
        return self.generic_visit(node)

    def visit_Name(self, node: ast.Name) -> ast.AST:
        if node.id in self.names:
            return self.visit(ast.parse(ast.unparse(self.names[node.id]), mode="eval").body)
        return node

    def visit_NamedExpr(self, node: ast.NamedExpr) -> ast.AST:
        return self.visit(node.value)


def branch_counts(test: ast.expr, taken: bool, names: dict[str, ast.expr]) -> set[int] | None:
    """The GPU counts (0-8) for which the branch of ``test`` that is ``taken`` runs; ``None`` if it cannot tell."""
    counts = set()
    for c in COUNTS:
        try:
            expr = ast.fix_missing_locations(
                ast.Expression(_WithCount(c, names).visit(ast.parse(ast.unparse(test), mode="eval").body))
            )
            value = eval(compile(expr, "<guard>", "eval"), {"__builtins__": {**SAFE, "_as_is": lambda v: v}})
        except Exception:  # noqa: BLE001 - a test that reads anything else cannot be evaluated: trusted
            return None
        if bool(value) == taken:
            counts.add(c)
    return counts


def _guards(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> list[tuple[ast.expr, bool]]:
    """The test of every ``if``, ``while`` and conditional expression around ``node``, each with the branch that holds
    ``node`` (True: the body, False: the ``else``)."""
    out = []
    child, parent = node, parents.get(node)
    while parent is not None:
        if isinstance(parent, (ast.If, ast.IfExp, ast.While)) and child is not parent.test:
            body = parent.body if isinstance(parent.body, list) else [parent.body]
            out.append((parent.test, child in body))
        child, parent = parent, parents.get(parent)
    return out


def device_findings(
    source: str,
    tags: Iterable[str] = (),
    names: dict[str, ast.expr] | None = None,
) -> list[Finding]:
    """The device indices and ``device_ids`` in a cell that need more GPUs than some machine it runs on has.
    ``names``: the chapter's names bound to the GPU count (``count_names``); default, the cell's own."""
    tags = set(tags)
    if "raises-exception" in tags:
        return []
    names = count_names([source]) if names is None else names  # a chapter passes the names of all its cells
    needed = gpus_needed(tags)
    code = python_code(source)
    tree = ast.parse(code)
    parents = {child: parent for parent in ast.walk(tree) for child in ast.iter_child_nodes(parent)}
    found = []
    for node, finding in _raw_findings(tree, code):
        runs_on = {c for c in COUNTS if c >= max(needed, 1)}  # 0 GPUs: the CPU runs see what CUDA refuses there
        trusted = False
        for test, taken in _guards(node, parents):
            if not _mentions_count(test, names):
                continue
            counts = branch_counts(test, taken, names)
            if counts is None:
                trusted = True
                break
            runs_on &= counts
        if not trusted and any(c < finding.n_gpus for c in runs_on):
            found.append(finding)
    return sorted(set(found), key=lambda f: (f.line, f.code, f.what))


def chapter_problems(name: str, cells: Sequence[tuple[str, Sequence[str]]]) -> list[str]:
    """A learner-readable line for every finding in a chapter's code cells, given as ``(source, tags)``."""
    names = count_names(source for source, _ in cells)
    problems = []
    for k, (source, tags) in enumerate(cells):
        needed = gpus_needed(tags)
        first = next((line.strip() for line in source.splitlines() if line.strip()), "")
        for f in device_findings(source, tags, names):
            runs = "on any machine (no gpu/multigpu tag)" if needed == 0 else f"from {needed} GPU(s) up"
            problems.append(
                f"{name}, code cell {k} (as nbval numbers them; it starts `{first[:60]}`), line {f.line}: "
                f"`{f.code[:80]}` names {f.what}, which needs {f.n_gpus} GPUs, in a cell that runs {runs}. On a "
                f"machine with fewer it fails (one GPU: 'Invalid device id' or 'invalid device ordinal'). Choose the "
                f"devices from the GPU count (DataParallel without device_ids takes every visible GPU), put it in an "
                f"`if gpulab.cuda_gpu_count() >= {f.n_gpus}:` branch, or make it a `%%gpu {f.n_gpus}` cell tagged "
                "multigpu that says why it skips."
            )
    return problems
