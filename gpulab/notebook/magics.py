"""IPython cell magics for the chapters: ``%load_ext gpulab`` then ``%%gpu [n]`` at the top of a GPU-only cell.

``%gpulab doctor`` shows ``gpulab.doctor()``. ``%%ranks n`` runs a cell's code in n ranks (``gpulab.ranks.cells``,
taught in ``notebooks/04_ddp.ipynb``). Loading the extension also makes tracebacks short (``tracebacks``): the learner's
line and the line that raised.

A ``%%gpu 2`` cell runs only where two CUDA GPUs are usable; elsewhere it prints why it was skipped, so a learner on a
laptop sees the reason in the cell's output instead of a traceback, and "Run All" carries on.
Cells that use it carry the notebook tag ``gpu`` (or ``multigpu`` for n ≥ 2), which ``make test-gpu`` selects.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..machine.cuda import too_few_gpus

__all__ = ["load_ipython_extension", "gpu_cell"]


def gpu_cell(line: str, cell: str, shell: Any) -> None:
    """Run ``cell`` if the GPUs named on ``line`` (default 1) are usable, else print the skip reason."""
    arg = line.strip() or "1"
    if not arg.isdigit() or int(arg) < 1:
        raise ValueError(f"%%gpu takes the number of GPUs the cell needs, like `%%gpu 2`; got {line.strip()!r}.")
    reason = too_few_gpus(int(arg))
    if reason is not None:
        print(
            f"Skipped on this machine: this cell {reason}. On a machine with GPUs it runs; read its code and the "
            f"text around it for what it would show."
        )
        return
    result = shell.run_cell(cell)
    result.raise_error()


def load_ipython_extension(ipython: Any) -> None:
    """``%load_ext gpulab``: ``%%gpu``, ``%%ranks``, and tracebacks that show the learner's line and where it failed."""
    from ..ranks.cells import ranks_cell
    from .tracebacks import install

    ipython.register_magic_function(
        lambda line, cell: gpu_cell(line, cell, ipython), magic_kind="cell", magic_name="gpu"
    )

    def ranks(line: str, cell: str) -> Any:
        __tracebackhide__ = True
        return ranks_cell(line, cell, ipython.user_ns)

    ipython.register_magic_function(ranks, magic_kind="cell", magic_name="ranks")
    ipython.register_magic_function(gpulab_line, magic_kind="line", magic_name="gpulab")
    install(ipython)


def _doctor() -> Any:
    from ..checkup.doctor import doctor  # on the floor below; imported when asked for, as the other magics'

    return doctor()


# %gpulab's commands: what each shows, and the function that shows it
_LINE_COMMANDS: dict[str, tuple[str, Callable[[], Any]]] = {
    "doctor": ("this kernel's GPU state, each problem with its fix (gpulab.doctor())", _doctor),
}


def gpulab_line(line: str) -> Any:
    """``%gpulab doctor``: the doctor's screen (the same as ``gpulab.doctor()``)."""
    command = line.strip()
    if command not in _LINE_COMMANDS:
        known = "; ".join(f"%gpulab {k}: {what}" for k, (what, _) in _LINE_COMMANDS.items())
        raise ValueError(f"%gpulab does not know {command!r}. It knows: {known}.")
    return _LINE_COMMANDS[command][1]()
