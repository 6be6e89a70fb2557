"""IPython cell magics for the chapters: ``%load_ext gpulab`` then ``%%gpu [n]`` at the top of a GPU-only cell.

``%%ranks n`` runs a cell's code in n ranks (``gpulab.ranks.cells``, taught in ``notebooks/04_ddp.ipynb``). Loading
the extension also makes tracebacks short (``tracebacks``): the learner's line and the line that raised.

A ``%%gpu 2`` cell runs only where two CUDA GPUs are usable; elsewhere it prints one line for the reader ("Not run
here: needs 2 GPUs, and PyTorch found no usable CUDA GPU on this machine."), so a learner on a laptop sees the reason
instead of a traceback, and "Run All" carries on. Below it, what the same code printed on a GPU machine, labelled
"recorded on <GPU>, torch <version>, <date>; not run here", from the newest bundle ``make test-gpu`` recorded
(``checkup.recorded_cells``: matched on the chapter and the hash of the cell's code, and the cell id where the front end
sends one); or, on the same line, why there is none ("No recorded GPU output yet.").
Cells that use it carry the notebook tag ``gpu`` (or ``multigpu`` for n ≥ 2), which ``make test-gpu`` selects; there
``GPULAB_FULL_GPU_CELLS=1`` runs them at the full sizes (``GPULAB_FAST=0`` while the cell runs).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from typing import Any

from ..checkup.recorded_cells import SKIP_LINE, find, read_bundles
from ..core.settings import env_flag
from ..machine.cuda import too_few_gpus

__all__ = ["load_ipython_extension", "gpu_cell", "skip_line", "show_recording", "front_end_context"]


def gpu_cell(
    line: str,
    cell: str,
    shell: Any,
    *,
    shortfall: Callable[[int], str | None] = too_few_gpus,
    chapter: str | None = None,
    cell_id: str | None = None,
) -> None:
    """Run ``cell`` if the GPUs named on ``line`` (default 1) are usable, else print the skip reason and the cell's
    recording (or why there is none). ``shortfall(n)``: why this process has fewer than n GPUs (None: enough);
    ``chapter`` and ``cell_id``: what the front end told of the cell, where it told anything."""
    arg = line.strip() or "1"
    if not arg.isdigit() or int(arg) < 1:
        raise ValueError(f"%%gpu takes the number of GPUs the cell needs, like `%%gpu 2`; got {line.strip()!r}.")
    reason = shortfall(int(arg))
    if reason is not None:
        show_recording(cell, int(arg), chapter=chapter, cell_id=cell_id, reason=reason)
        return
    full = env_flag("GPULAB_FULL_GPU_CELLS", False, meaning="to run the GPU cells at the full sizes")
    saved = os.environ.get("GPULAB_FAST")
    if full:
        os.environ["GPULAB_FAST"] = "0"
    try:
        result = shell.run_cell(cell)
    finally:
        if full and saved is None:
            os.environ.pop("GPULAB_FAST", None)
        elif full:
            os.environ["GPULAB_FAST"] = saved
    result.raise_error()


def skip_line(needs: int, reason: str) -> str:
    """The reader's line for a cell that did not run: ``"Not run here: needs 2 GPUs, and PyTorch found no usable CUDA
    GPU on this machine."``. ``reason`` is ``too_few_gpus``'s sentence ("needs 2 CUDA GPU(s), but …")."""
    why = reason.partition(", but ")[2] or reason
    return f"{SKIP_LINE} needs {needs} GPU{'s' if needs > 1 else ''}, and {why}."


def show_recording(
    cell: str, needs: int, *, chapter: str | None = None, cell_id: str | None = None, reason: str | None = None
) -> None:
    """Below a skip (``reason``: why it did not run, printed first): the recording of this cell's code on a machine
    with ``needs`` GPUs, after its label; or, on the same line as the skip, why none is shown."""
    found = find(read_bundles(), source=cell, needs=needs, chapter=chapter, cell_id=cell_id)
    first = skip_line(needs, reason) if reason is not None else ""
    if found.cell is None:
        print(f"{first} {found.note}".strip())
        return
    if first:
        print(first)
    print(f"── {found.note} ──")
    for out in found.cell.outputs():
        kind = out.get("output_type")
        if kind == "stream":
            print(out.get("text", ""), end="")
        elif kind in ("display_data", "execute_result"):
            from IPython.display import display

            display(out.get("data", {}), raw=True)
        elif kind == "error":
            print(f"{out.get('ename')}: {out.get('evalue')}")


def front_end_context(shell: Any) -> tuple[str | None, str | None]:
    """The chapter (``NN_name.ipynb``) and the cell id of the cell being run, where the front end says: the chapter
    from Jupyter's session name (``JPY_SESSION_NAME``, ``__session__``) or VS Code's ``__vsc_ipynb_file__``, the id
    from the request's ``cellId`` (JupyterLab sends it; nbclient, nbval, Colab and the classic Notebook do not)."""
    ns = getattr(shell, "user_ns", {}) or {}
    chapter = None
    for where in (os.environ.get("JPY_SESSION_NAME"), ns.get("__session__"), ns.get("__vsc_ipynb_file__")):
        if isinstance(where, str) and re.fullmatch(r"\d{2}_[\w-]+\.ipynb", os.path.basename(where)):
            chapter = os.path.basename(where)
            break
    kernel = getattr(shell, "kernel", None)
    try:
        parent = kernel.get_parent() if kernel is not None else getattr(shell, "parent_header", None)
    except (AttributeError, TypeError):
        parent = None
    meta = (parent or {}).get("metadata") or {}
    cell_id = meta.get("cellId")
    return chapter, cell_id if isinstance(cell_id, str) and cell_id else None


def load_ipython_extension(ipython: Any) -> None:
    """``%load_ext gpulab``: ``%%gpu``, ``%%ranks``, tracebacks that show the learner's line and where it failed,
    no driver-probe noise from torch's timer and profiler where no CUDA driver exists (``machine.probe_noise``), and
    no Lightning warning about an unused ``srun`` where no SLURM job runs the kernel (``machine.srun_notice``)."""
    from ..machine.probe_noise import quiet_cuda_probes
    from ..machine.srun_notice import quiet_srun_notice
    from ..ranks.cells import ranks_cell
    from .tracebacks import install

    quiet_cuda_probes()  # a machine without a CUDA driver: no driver-probe noise under torch.utils.benchmark's cells
    quiet_srun_notice()  # SLURM's client installed, no job: Lightning's srun advice cannot apply to a notebook

    def gpu(line: str, cell: str) -> None:
        chapter, cell_id = front_end_context(ipython)
        gpu_cell(line, cell, ipython, chapter=chapter, cell_id=cell_id)

    ipython.register_magic_function(gpu, magic_kind="cell", magic_name="gpu")

    def ranks(line: str, cell: str) -> Any:
        __tracebackhide__ = True
        return ranks_cell(line, cell, ipython.user_ns)

    ipython.register_magic_function(ranks, magic_kind="cell", magic_name="ranks")
    install(ipython)
