"""``%%ranks 2``: run a notebook cell's code in 2 ranks, as ``gpulab.launch`` runs a function.

The cell's code is sent to each rank with copies of the notebook variables it reads (by value, as ``launch`` sends
a function's arguments); in each rank ``rank``, ``local_rank`` and ``world_size`` are defined and the process group
is started. Output streams into the cell labelled ``[rank k]``; the value of the cell's last line in rank 0 (every
rank's with ``--all``) is the cell's result. Variables the cell assigns stay in the ranks: the notebook's own
variables are not changed. Options: ``--timeout S`` (collective wait), ``--threads N`` (per rank), ``--all``,
``--backend gloo`` (as ``launch``'s ``backend``; ``auto`` by default: NCCL only with a GPU of its own per rank).
Taught in ``notebooks/04_ddp.ipynb``.
"""

from __future__ import annotations

import argparse
import ast
import builtins
import linecache
import os
import shlex
from typing import Any

__all__ = ["ranks_cell", "run_cell"]

_IPYTHON_NAMES = {"In", "Out", "get_ipython", "exit", "quit", "_", "__", "___", "_ih", "_oh", "_dh"}
_PROVIDED = {"rank", "local_rank", "world_size"}
_cells_run = 0


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # argparse would print usage and exit the kernel
        raise ValueError(message)


def _parser() -> argparse.ArgumentParser:
    p = _Parser(prog="%%ranks", add_help=False, exit_on_error=False)
    p.add_argument("world_size", type=int)
    p.add_argument("--timeout", type=float, default=60.0)
    p.add_argument("--threads", type=int, default=None)
    p.add_argument("--all", action="store_true")
    p.add_argument("--backend", default="auto")
    return p


def ranks_cell(line: str, cell: str, user_ns: dict[str, Any]) -> Any:
    """The ``%%ranks`` magic: run ``cell`` in the ranks ``line`` asks for, with the variables it reads from
    ``user_ns``."""
    global _cells_run
    __tracebackhide__ = True  # IPython shows the cell and the message, not this function
    usage = (
        "use it as `%%ranks 2` (optionally `--timeout 30 --threads 1 --all --backend gloo`) on the first line of a cell"
    )
    try:
        opts, extra = _parser().parse_known_args(shlex.split(line))
    except (argparse.ArgumentError, ValueError) as e:
        raise ValueError(f"%%ranks could not read {line.strip()!r} ({e}): {usage}.") from None
    if extra or opts.world_size < 1:
        raise ValueError(f"%%ranks could not read {line.strip()!r}: {usage}.")
    tree = ast.parse(cell)  # a syntax error shows here, in the notebook, with the cell's line
    _cells_run += 1
    filename = f"<%%ranks cell {_cells_run}>"
    # The rank runs the cell below a blank first line, so that its line numbers are the notebook cell's (whose
    # first line is `%%ranks ...`); linecache gets the cell as the notebook shows it, for the ranks' tracebacks.
    lines = [f"%%ranks {line.strip()}\n", *cell.splitlines(keepends=True)]
    linecache.cache[filename] = (sum(map(len, lines)), None, lines, filename)
    shipped = _variables_read(tree, user_ns)
    from .launcher import launch

    return launch(
        run_cell,
        opts.world_size,
        args=("\n" + cell, filename, shipped),
        all_ranks=opts.all,
        timeout_s=opts.timeout,
        threads_per_rank=opts.threads,
        backend=opts.backend,
    )


def run_cell(source: str, filename: str, namespace: dict[str, Any]) -> Any:
    """In a rank: execute the cell with the copied variables and the rank's numbers; return its last line's value."""
    __tracebackhide__ = True
    ns = {
        "__name__": "__main__",
        "__builtins__": builtins,
        **namespace,
        "rank": int(os.environ["RANK"]),
        "local_rank": int(os.environ["LOCAL_RANK"]),
        "world_size": int(os.environ["WORLD_SIZE"]),
    }
    tree = ast.parse(source, filename)
    last = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None
    exec(compile(tree, filename, "exec"), ns)
    if last is None:
        return None
    return eval(compile(ast.Expression(last.value), filename, "eval"), ns)


def _variables_read(tree: ast.AST, user_ns: dict[str, Any]) -> dict[str, Any]:
    """The notebook variables the cell mentions, each validated as copyable (by cloudpickle, as ranks receive it).

    A variable the cell also assigns may be left behind when it cannot be copied (the rank makes its own); one it
    only reads cannot, and the error names it.
    """
    from .worker import pack

    read, assigned = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            (read if isinstance(node.ctx, ast.Load) else assigned).add(node.id)
    names = {
        n
        for n in read
        if n in user_ns
        and not n.startswith("_i")
        and n not in _IPYTHON_NAMES | _PROVIDED
        and not (hasattr(builtins, n) and user_ns[n] is getattr(builtins, n))
    }
    shipped = {}
    for name in sorted(names):
        try:
            pack(user_ns[name])
        except Exception as e:
            if name in assigned:
                continue
            raise TypeError(
                f"%%ranks cannot copy the notebook variable {name!r} ({type(user_ns[name]).__name__}) "
                f"into the ranks: {e}. Create it inside the cell instead."
            ) from None
        shipped[name] = user_ns[name]
    return shipped
