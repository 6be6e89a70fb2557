"""Which GPUs a DataParallel run really occupies, measured from outside in a fresh process (needs 2+ GPUs).

The first article reports ~500 MB taken on GPU 0 by ``DataParallel(model, device_ids=[2, 3])`` with
``model.cuda(2)``. What such memory usually is: a *CUDA context*, a few hundred MB that the driver sets up on a GPU
the first time a process uses it. DataParallel itself touches only ``device_ids``; a context on GPU 0 comes from code
that names no device (``.cuda()``, ``torch.zeros(1, device="cuda")``), which means the *current* device, cuda:0
unless ``torch.cuda.set_device`` changed it. ``context_footprint(variant)`` runs one DataParallel training step in a
new interpreter (a notebook kernel that has used CUDA already holds a context of its own on cuda:0, which would hide
the effect) and reads, through NVML, each GPU's used memory before and while the step's process holds its memory:

- ``"article"``: ``model.cuda(ids[0])``, ``DataParallel(model, device_ids=ids)``, inputs on ``ids[0]``;
- ``"stray .cuda()"``: the same, plus one ``torch.zeros(1).cuda()`` that names no device;
- ``"set_device"``: ``torch.cuda.set_device(ids[0])`` first, then the same stray call;
- ``"CUDA_VISIBLE_DEVICES"``: only ``ids`` visible, ``device_ids`` left to its default (all visible GPUs).

The child sees the GPUs numbered as nvidia-smi numbers them (``CUDA_DEVICE_ORDER=PCI_BUS_ID``), so ``ids`` are
physical indices. On a shared machine other users' processes change the numbers too: read them as a measurement of
this moment. Taught in ``notebooks/03_dataparallel.ipynb``.
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core.arguments import whole_numbers
from ..core.readings import Unavailable
from ..core.tables import Table, TableView
from ..core.units import format_bytes
from ..machine.nvml import GpuReader

__all__ = ["context_footprint", "GpuFootprint", "VARIANTS", "run_until_ready"]

VARIANTS = {
    "article": "model.cuda(ids[0]); DataParallel(model, device_ids=ids); inputs .cuda(ids[0])",
    "stray .cuda()": "as the article, plus torch.zeros(1).cuda() with no device named",
    "set_device": "torch.cuda.set_device(ids[0]) first, then as 'stray .cuda()'",
    "CUDA_VISIBLE_DEVICES": "CUDA_VISIBLE_DEVICES=ids; DataParallel(model) with the default device_ids",
}


@dataclass(frozen=True)
class GpuFootprint(TableView):
    """The memory each GPU held before and during one DataParallel step of ``variant`` (NVML's count, every process):
    which GPUs the step really occupied."""

    variant: str
    device_ids: tuple[int, ...]  # physical indices the step was meant to use
    used_before_bytes: tuple[int | Unavailable, ...]  # NVML, every process, per physical GPU
    used_during_bytes: tuple[int | Unavailable, ...]
    reserved_bytes: dict[int, int]  # torch's caching allocator in the child, per CUDA index the step used

    def added_bytes(self, physical_index: int) -> int | None:
        """Bytes GPU ``physical_index`` gained during the step (None where NVML could not read it)."""
        a, b = self.used_before_bytes[physical_index], self.used_during_bytes[physical_index]
        return None if isinstance(a, Unavailable) or isinstance(b, Unavailable) else b - a

    def table(self) -> Table:
        """Per GPU: whether ``device_ids`` named it, and its memory before, during and added."""
        rows = []
        for i in range(len(self.used_before_bytes)):
            added = self.added_bytes(i)
            role = "in device_ids" if i in self.device_ids else "not asked for"
            rows.append(
                [
                    i,
                    role,
                    format_bytes(self.used_before_bytes[i]) if added is not None else "N/A",
                    format_bytes(self.used_during_bytes[i]) if added is not None else "N/A",
                    "N/A" if added is None else format_bytes(added),
                ]
            )
        stray = [i for i in range(len(rows)) if i not in self.device_ids and (self.added_bytes(i) or 0) > 64 * 2**20]
        note = (
            f"GPU {', '.join(map(str, stray))} gained memory although not in device_ids: a CUDA context "
            f"(see the variant's code)"
            if stray
            else "no GPU outside device_ids gained more than 64 MiB"
        )
        return Table(
            ["GPU (nvidia-smi)", "role", "used before", "used during", "added"],
            rows,
            title=f"{self.variant}: {VARIANTS[self.variant]} (ids = {list(self.device_ids)})",
            notes=[note, "NVML counts every process on each GPU: other users' work shows up too."],
        )


def run_until_ready(
    argv: Sequence[str], *, env: dict[str, str] | None = None, timeout_s: float = 120.0
) -> tuple[subprocess.Popen[str], dict[str, Any]]:
    """Start ``argv`` and wait for its first stdout line, a JSON object; return the still-running process and it.

    The child must then wait for a line on stdin before exiting. On failure or timeout the child is killed (no
    process is left behind) and the error carries the end of its stderr.
    """
    proc = subprocess.Popen(
        list(argv), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    )
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: lines.put(proc.stdout.readline()), daemon=True).start()  # type: ignore[union-attr]
    try:
        try:
            line = lines.get(timeout=timeout_s)
        except queue.Empty:
            raise TimeoutError(
                f"the measuring process gave no result within {timeout_s:g} s and was stopped."
            ) from None
        if not line.strip():
            proc.wait(timeout=10)
            tail = (proc.stderr.read() if proc.stderr else "").strip().splitlines()[-5:]
            raise RuntimeError(
                f"the measuring process ended before it was ready (exit code {proc.returncode}):\n" + "\n".join(tail)
            )
        return proc, json.loads(line)
    except BaseException:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        raise


def context_footprint(
    variant: str = "article",
    device_ids: Sequence[int] | None = None,
    *,
    machine: GpuReader | str | None = None,
    timeout_s: float = 120.0,
) -> GpuFootprint:
    """Run one DataParallel step as ``variant`` does it, in a new process, and measure every GPU's memory meanwhile.

    ``device_ids`` are physical GPU indices, never 0 here (the point is to see whether GPU 0 is touched anyway);
    default: the last two GPUs (as the article's ``[2, 3]``), or ``[1]`` on a two-GPU machine. ``machine``: whose
    memory is read (default this one, through NVML).
    """
    from ..machine.cuda import too_few_gpus
    from ..machine.resolve import as_reader

    if variant not in VARIANTS:
        raise ValueError(f"variant is one of {', '.join(map(repr, VARIANTS))}; got {variant!r}.")
    reason = too_few_gpus(2)
    if reason is not None:
        raise RuntimeError(
            f"This measurement {reason}: it watches GPU 0 while other GPUs do the work. Read the "
            f"chapter's text for what it shows on a machine with several GPUs."
        )
    reader = as_reader(machine)
    n = reader.count()
    ids = list(device_ids) if device_ids is not None else ([n - 2, n - 1] if n >= 3 else [1])
    ids = list(
        whole_numbers(
            ids,
            "device_ids",
            minimum=1,
            example="[1, 2]",
            empty_ok=False,
            what="physical GPU indices, from 1 (GPU 0 is the one watched)",
        )
    )
    if max(ids) >= n:
        raise ValueError(
            f"device_ids={ids!r}: device_ids are physical GPU indices between 1 and {n - 1} (GPU 0 is the "
            f"one watched; this machine has {n}), e.g. device_ids=[1]."
        )
    env = {k: v for k, v in os.environ.items() if k != "CUDA_VISIBLE_DEVICES"}
    env["CUDA_DEVICE_ORDER"] = "PCI_BUS_ID"
    env["PYTHONPATH"] = os.pathsep.join([str(Path(__file__).resolve().parents[2]), env.get("PYTHONPATH", "")])
    if variant == "CUDA_VISIBLE_DEVICES":
        env["CUDA_VISIBLE_DEVICES"] = ",".join(map(str, ids))
    before = tuple(reader.sample(i).memory_used_bytes for i in range(n))
    proc, ready = run_until_ready(
        [sys.executable, "-m", "gpulab.dataparallel.footprint", variant, ",".join(map(str, ids))],
        env=env,
        timeout_s=timeout_s,
    )
    try:
        during = tuple(reader.sample(i).memory_used_bytes for i in range(n))
    finally:
        proc.communicate("done\n", timeout=30)
    return GpuFootprint(variant, tuple(ids), before, during, {int(k): v for k, v in ready["reserved"].items()})


def _child(variant: str, ids: list[int]) -> None:
    """In the new process: one DataParallel training step as ``variant`` writes it, then hold still until told."""
    import torch

    from ..workload.models import cnn

    visible = variant == "CUDA_VISIBLE_DEVICES"
    first = 0 if visible else ids[0]  # with only ids visible, physical ids[0] is cuda:0
    if variant == "set_device":
        torch.cuda.set_device(first)
    model = cnn((8, 16), 64).cuda(first)
    dp = torch.nn.DataParallel(model, device_ids=None if visible else ids)
    g = torch.Generator().manual_seed(0)
    x = torch.rand(64 * len(ids), 1, 28, 28, generator=g).cuda(first)
    y = torch.randint(0, 10, (len(x),), generator=g).cuda(first)
    torch.nn.functional.cross_entropy(dp(x), y).backward()
    if variant in ("stray .cuda()", "set_device"):
        torch.zeros(1).cuda()  # names no device: the current one
    torch.cuda.synchronize(first)
    used = range(len(ids)) if visible else ids  # only the devices the step used: asking about others could touch them
    reserved = {i: torch.cuda.memory_reserved(i) for i in used}
    print(json.dumps({"reserved": reserved}), flush=True)
    sys.stdin.readline()


if __name__ == "__main__":
    _child(sys.argv[1], [int(i) for i in sys.argv[2].split(",")])
