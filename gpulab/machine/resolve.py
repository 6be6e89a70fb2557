"""Which machine a learner meant: this one, a reader, or a described one named by its preset or JSON file (a probe).

Every public function that reads GPUs takes its ``machine=`` through ``as_reader``, so ``gpulab.devices("workshop-8")``,
``gpulab.reserve_gpus(1, "workshop-8")`` and ``gpulab.GpuPicker("workshop-8")`` all mean
``SimulatedGpuReader("workshop-8")`` — always labelled SIMULATED — and anything else is refused at the door with what
to type instead. ``machine=`` means nothing else anywhere: GPUs already read are ``gpus=`` (which GPUs), and
``tests/test_naming.py`` holds every ``machine`` parameter to this door. Reading a machine never creates a CUDA
context. Taught in ``notebooks/00_setup.ipynb``.
"""

from __future__ import annotations

import os
from typing import Any

from ..core.arguments import shown
from ..core.readings import GpuInfo
from .nvml import GpuReader, default_reader
from .simulated import PRESETS, SimulatedGpuReader

__all__ = ["as_reader", "MACHINE_KINDS"]

# What machine= takes besides None: a reader, or a described machine (a preset name, a JSON file's path, a dict).
# Every machine parameter is annotated with these (or fewer of them, a name always among them).
DESCRIBED_KINDS: tuple[type, ...] = (str, os.PathLike, dict)
MACHINE_KINDS: tuple[type, ...] = (GpuReader, *DESCRIBED_KINDS)


def as_reader(reader: Any, name: str = "machine") -> GpuReader:
    """``None`` → this machine (NVML, or ``GPULAB_SIMULATE_GPUS``); a reader → itself; a preset name, a JSON path or a
    dict → the described machine (``SimulatedGpuReader``). Anything else raises ``TypeError`` saying what to pass."""
    if reader is None:
        return default_reader()
    if isinstance(reader, DESCRIBED_KINDS):
        return SimulatedGpuReader(reader)  # refuses an unknown name or a broken file, naming the presets
    if isinstance(reader, GpuReader):
        return reader
    if _already_read(reader):
        what = (
            "an Inventory (what gpulab.devices() returns)"
            if hasattr(reader, "gpus")
            else f"{len(reader)} GpuInfo record(s)"
        )
        raise TypeError(
            f"{name}= was given {what}: GPUs already read, not a machine to read. {name} says which "
            f'machine: name it, e.g. {name}="workshop-8" (the described machine they were read from), '
            "or leave it out for this one. Functions that take GPUs already read call them gpus=."
        )
    raise TypeError(
        f"{name}={shown(reader)} is a {type(reader).__name__}, not a machine to read. Leave {name} out for "
        f'this machine, or name a described one: {name}="workshop-8" (presets: {", ".join(PRESETS)}), '
        f'or pass a reader such as gpulab.SimulatedGpuReader("workshop-8").'
    )


def _already_read(value: Any) -> bool:
    """An ``Inventory`` (``gpulab.devices()``, its ``gpus`` perhaps empty) or a non-empty list of ``GpuInfo``s."""
    gpus = getattr(value, "gpus", value)
    return (
        isinstance(gpus, (tuple, list))
        and (gpus is not value or bool(gpus))
        and all(isinstance(g, GpuInfo) for g in gpus)
    )
