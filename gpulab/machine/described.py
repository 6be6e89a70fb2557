"""What a described machine's JSON must hold: every field the simulated reader answers with, each of its type.

A description is refused when it is loaded, naming the GPU and the field, rather than when the picker or the monitor
first asks for a value it lacks (a KeyError in the middle of a lesson). Kept apart from ``simulated.py``, which answers
the reader's questions from a description that has passed this validation.
"""

from __future__ import annotations

from typing import Any

from ..core.arguments import is_real_number, is_whole_number

_REQUIRED = (
    "name",
    "uuid",
    "pci_bus_id",
    "memory_total_bytes",
    "memory_used_bytes",  # then the refusable ones:
    "utilization_gpu_percent",
    "utilization_memory_percent",
    "temperature_c",
    "power_w",
)
_TEXT = ("name", "uuid", "pci_bus_id")
_BUILD = "Build each entry with gpulab.machine.simulated.simulated_gpu(...) and save the JSON it returns"


def validated_description(data: Any, where: str) -> dict[str, Any]:
    """Refuse, at load, a description the reader could not answer from, naming the GPU and the field."""
    if not isinstance(data, dict) or not isinstance(data.get("gpus"), list):
        raise ValueError(
            f"{where} needs a top-level object with a 'gpus' list, like "
            "SimulatedGpuReader('kaggle-2xT4').to_json() shows."
        )
    for key in ("driver_version", "cuda_driver_version"):
        data.setdefault(key, "N/A (simulated)")
        if not isinstance(data[key], str):
            raise ValueError(f'{where}: {key!r} is {data[key]!r}; it is text, e.g. "550.90.07".')
    for i, g in enumerate(data["gpus"]):
        _validate_gpu(where, i, g)
    return data


def _whole(value: Any, most: int | None = None) -> str | None:
    """Why ``value`` is not a whole number (in 0..``most``), or None."""
    if not is_whole_number(value):
        return f"is {value!r}, a {type(value).__name__}; it must be a whole number" + (
            f" (bytes, e.g. {16 * 1024**3} for 16 GiB)" if isinstance(value, str) else ""
        )
    if value < 0 or most is not None and value > most:
        return f"is {value}; it must be between 0 and {most}" if most is not None else f"is {value}; it must be ≥ 0"
    return None


def _validate_gpu(where: str, i: int, g: Any) -> None:
    """A described GPU has every field the reader answers with (or lists it under ``unsupported``), of its type."""
    if not isinstance(g, dict):
        raise ValueError(f"GPU {i} of {where} is not an object: {g!r:.60}. {_BUILD}.")
    unsupported = g.get("unsupported", [])
    if not isinstance(unsupported, list) or not all(isinstance(k, str) for k in unsupported):
        raise ValueError(f"GPU {i} of {where}: 'unsupported' must be a list of field names; got {unsupported!r:.60}.")
    refused = set(unsupported) & set(_REQUIRED[5:])  # only these may be refused; the rest are needed
    missing = [k for k in _REQUIRED if k not in g and k not in refused]
    if missing:
        raise ValueError(
            f"GPU {i} of {where} lacks {', '.join(map(repr, missing))}. {_BUILD} (it fills every field), "
            'or list fields NVML would refuse under "unsupported".'
        )
    problems: dict[str, str | None] = {
        k: None if isinstance(g[k], str) else f"is {g[k]!r}; it must be text" for k in _TEXT
    }
    problems["memory_total_bytes"] = _whole(g["memory_total_bytes"])
    problems["memory_used_bytes"] = _whole(
        g["memory_used_bytes"], g["memory_total_bytes"] if is_whole_number(g["memory_total_bytes"]) else None
    )
    for k in ("utilization_gpu_percent", "utilization_memory_percent"):
        if k not in refused:
            problems[k] = _whole(g[k], 100)
    for k in ("temperature_c", "power_w"):
        if k not in refused and not is_real_number(g[k]):
            problems[k] = f"is {g[k]!r}; it must be a number"
    for key in ("mig_devices", "processes"):
        if not isinstance(g.get(key, []), list):
            problems[key] = "must be a list of objects"
    for k, m in enumerate(g.get("mig_devices", []) if not problems.get("mig_devices") else []):
        if (
            not isinstance(m, dict)
            or not isinstance(m.get("uuid"), str)
            or _whole(m.get("memory_total_bytes"))
            or _whole(m.get("memory_used_bytes"))
            or not isinstance(m.get("profile", ""), str)
        ):
            problems[f"mig_devices[{k}]"] = (
                "needs a 'uuid' (text) and whole 'memory_total_bytes'/'memory_used_bytes' (and, if given, a "
                "'profile' as text, e.g. \"3g.40gb\")"
            )
    for k, p in enumerate(g.get("processes", []) if not problems.get("processes") else []):
        if (
            not isinstance(p, dict)
            or _whole(p.get("pid"))
            or _whole(p.get("used_memory_bytes"))
            or not isinstance(p.get("name"), str)
        ):
            problems[f"processes[{k}]"] = "needs a whole 'pid', whole 'used_memory_bytes' and a 'name' (text)"
    wrong = [(k, why) for k, why in problems.items() if why]
    if wrong:
        k, why = wrong[0]
        raise ValueError(f"GPU {i} of {where}: {k!r} {why}. {_BUILD}.")
