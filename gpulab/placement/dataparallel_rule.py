"""Where ``DataParallel`` puts a model and its outputs, and the errors it raises, read without running it.

Kept apart from ``device_rules.py`` (which follows the current device through ``.cuda``, ``.to``, ``set_device`` and
friends) because DataParallel has rules of its own: its defaults, its silence without a GPU, its own device-id check.
"""

from __future__ import annotations

from typing import Any

from .code_values import cuda_index
from .cuda_errors import no_gpu_error
from .explanation import Step

__all__ = ["dataparallel_step"]


def dataparallel_step(walker: Any, code: str, args: list[Any], kw: dict[str, Any]) -> Step:
    """``DataParallel(model, device_ids, output_device)`` read as PyTorch runs it: on no usable GPU it silently wraps
    nothing; ``device_ids`` defaults to every visible GPU; ``device_ids[0]`` holds the model; outputs are gathered on
    ``output_device`` (default ``device_ids[0]``). ``walker`` is ``device_rules``' walker: its machine and outcomes."""
    ids = kw.get("device_ids", args[1] if len(args) > 1 else None)
    if no_gpu_error(walker.vmap, walker.has_gpus):
        empty = ids is not None and not list(ids)
        return walker._cpu(
            code,
            "with no usable GPU, DataParallel silently wraps nothing: the model stays where it "
            "is and runs on one device (PyTorch gives no warning)."
            + (
                " On a machine with a GPU this line raises IndexError: list index out of range "
                "(DataParallel reads device_ids[0], and device_ids=[] names no GPU)."
                if empty
                else ""
            ),
        )
    if ids is None:
        ids = list(range(len(walker.vmap.devices)))
        why = "device_ids defaults to every visible GPU"
    else:
        ids = [cuda_index(i) for i in ids]
        why = f"device_ids={ids}"
    if not ids:  # PyTorch reads device_ids[0] for the model's GPU
        return Step(
            code,
            "device_ids=[] names no GPU: DataParallel takes device_ids[0] as the GPU the model "
            "lives on, and there is none. Leave device_ids out to use every visible GPU, or name "
            "them: device_ids=[0, 1].",
            error="IndexError: list index out of range",
        )
    out = kw.get("output_device", args[2] if len(args) > 2 else None)
    out = ids[0] if out is None else cuda_index(out)
    step = walker._on(
        code,
        ids,
        f"{why}; the model must already be on cuda:{ids[0]} (device_ids[0]), is copied to "
        f"the others every forward, and outputs are gathered on cuda:{out}",
    )
    if step.error == walker.invalid_ordinal:  # DataParallel checks the ids itself first
        step = Step(step.code, step.sentence, error="AssertionError: Invalid device id")
    return step
