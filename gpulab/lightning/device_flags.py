"""Which devices an old call asked for: ``gpus=``, ``num_processes=``, ``accelerator=`` and ``devices=`` (pure).

``gpus=`` is read as Lightning 1.5-1.9 read it (``"2"`` = the first two GPUs, ``"0,2"`` = GPUs 0 and 2, -1 = all,
0 / None = the CPU) and becomes ``accelerator=`` + ``devices=``. Taught in ``notebooks/06_lightning.ipynb``.
"""

from __future__ import annotations

from ..core.arguments import is_whole_number
from .call import TranslationError, render_value
from .draft import Draft, fmt, removal
from .flag_history import ACCELERATORS

__all__ = ["parse_gpus", "translate_devices", "GPU_ACCELERATORS"]

GPU_ACCELERATORS = ("gpu", "cuda")
_MISSING = object()


def parse_gpus(value: object) -> object:
    """``gpus=`` as Lightning 1.5-1.9 read it → None (CPU), n > 0, -1 or a list of indices; never-valid → error."""
    if (
        value is None
        or (type(value) is int and value == 0)
        or (isinstance(value, (list, tuple)) and not value)
        or (isinstance(value, str) and value.strip() in ("0", "[]"))
    ):
        return None
    if isinstance(value, bool):
        raise TranslationError(
            f"gpus={value}: a bool never meant anything to Lightning (it raised 'Device IDs (GPU/"
            "TPU) must be an int, a string, a sequence of ints'). Write gpus=1 for one GPU."
        )
    if isinstance(value, str):
        text = value.strip()
        try:
            parsed: object = (
                -1 if text == "-1" else [int(x) for x in text.split(",") if x.strip()] if "," in text else int(text)
            )
        except ValueError:
            raise TranslationError(
                f"gpus={value!r}: a string must be a count ('2'), '-1' or indices ('0,2')."
            ) from None
        return parse_gpus(parsed)
    if isinstance(value, int):
        if value < -1:
            raise TranslationError(
                f"gpus={value}: never valid — -1 meant every GPU and n > 0 the first n GPUs; a "
                "negative count selects nothing (1.x: 'GPUs requested but none are available')."
            )
        return value
    if isinstance(value, (list, tuple)):
        if not all(type(i) is int for i in value):
            raise TranslationError(f"gpus={value!r}: a list must hold GPU indices (ints), like [0, 2].")
        if any(i < 0 for i in value):
            raise TranslationError(f"gpus={value!r}: GPU indices start at 0; a negative index names no GPU.")
        if len(set(value)) != len(value):
            raise TranslationError(
                f"gpus={value!r} names a GPU twice; Lightning refused that ('Device ID's (GPU) "
                "must be unique'). One process per GPU: list each once."
            )
        return list(value)
    raise TranslationError(
        f"gpus={value!r}: gpus took None, an int, a string or a list of ints; {type(value).__name__} never worked."
    )


def translate_devices(w: Draft) -> None:
    """Today's ``accelerator=`` / ``devices=`` from the old device flags, or a ``TranslationError`` when they clash."""
    old = w.old
    gpus, processes = old.get("gpus", _MISSING), old.get("num_processes", _MISSING)
    accelerator, devices = old.get("accelerator"), old.get("devices", _MISSING)
    if isinstance(accelerator, str) and accelerator.lower() not in ACCELERATORS | {"auto", "gpu"}:
        accelerator = None  # an old strategy name: strategy.py deals with it
    if gpus is not _MISSING and processes is not _MISSING:
        raise TranslationError(
            "gpus= and num_processes= both set the device count; Lightning 1.7-1.9 only warned "
            "'more than one device specific flag has been set'. Keep the one you mean."
        )
    if devices is not _MISSING and devices in (0, "0", []):
        raise TranslationError(
            f"devices={devices!r} is refused by Lightning 2 ('value is not a valid input'); to "
            "train on the CPU write accelerator='cpu' (devices=1 by default)."
        )
    if gpus is not _MISSING:
        w.gpu_request = parse_gpus(gpus)
        w.old_device_flag = True
        if w.gpu_request is not None and accelerator not in (None, "auto", *GPU_ACCELERATORS):
            raise TranslationError(
                f"gpus={gpus!r} asks for GPUs but accelerator={accelerator!r} for another device; "
                "old releases resolved that differently. Say which device you mean."
            )
        if w.gpu_request is None and devices is not _MISSING:
            raise TranslationError(f"gpus={gpus!r} means the CPU but devices={devices!r} is also set; keep one.")
        if w.gpu_request is None:
            w.front["accelerator"] = "cpu"
            w.change(
                fmt("gpus", gpus),
                "accelerator='cpu'",
                "removed",
                "no GPU; written out because today's default accelerator='auto' takes a GPU when one is visible",
                removal("gpus"),
            )
            return
        request = w.gpu_request
        w.front.update(accelerator="gpu", devices=request)
        reason = (
            "every visible GPU, as before"
            if request == -1
            else "the same GPUs: devices= reads these values "
            "as gpus= did (an int n: the first n GPUs; a list: those indices)"
        )
        if isinstance(gpus, str) and "," not in gpus and gpus.strip() != "-1":
            reason = (
                f"a string count means the first {request} GPU(s) (since 1.5; before, gpus='{gpus.strip()}' "
                "meant the GPU with that index): written as an int"
            )
        elif isinstance(gpus, str) and "," in gpus:
            reason = "GPUs with these indices; the list says so more plainly than the string"
        w.change(
            fmt("gpus", gpus), f"accelerator='gpu', devices={render_value(request)}", "removed", reason, removal("gpus")
        )
        if devices is not _MISSING:
            w.change(
                fmt("devices", devices),
                "(dropped)",
                "removed",
                "1.7-1.9 ignored devices= when gpus= was given (it warned); gpus= decided",
            )
        return
    if processes is not _MISSING:
        if not is_whole_number(processes) or processes < 1:
            raise TranslationError(f"num_processes={processes!r}: it took a number of CPU processes, an int ≥ 1.")
        w.cpu_processes = processes
        w.old_device_flag = True
        w.front.update(accelerator="cpu", devices=processes)
        w.change(
            fmt("num_processes", processes),
            f"accelerator='cpu', devices={processes}",
            "removed",
            "processes on CPU cores are devices of the CPU accelerator",
            removal("num_processes"),
        )
        return
    if accelerator is not None:
        w.front["accelerator"] = accelerator
    if devices is not _MISSING:
        w.front["devices"] = devices
        if accelerator in GPU_ACCELERATORS:
            w.gpu_request = devices if devices != "auto" else -1
        elif is_whole_number(devices):
            w.cpu_processes = devices
    if accelerator is None and devices is _MISSING:
        w.notes.append(
            "No device flag: Lightning 1.x trained on the CPU unless gpus= was given; today's default "
            "accelerator='auto' uses a GPU whenever one is visible. Add accelerator='cpu' to keep the CPU."
        )


# strategy names 1.x accepted in accelerator= (1.5.0's DistributedType); only some still exist under strategy=
