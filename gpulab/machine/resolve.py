"""Which machine a learner meant: this one, a reader, or a described one named by its preset or JSON file (a probe).

Every public function that reads GPUs takes its ``machine=`` through ``as_reader``, so ``gpulab.devices("workshop-8")``,
``gpulab.reserve_gpus(1, "workshop-8")`` and ``gpulab.GpuPicker("workshop-8")`` all mean
``SimulatedGpuReader("workshop-8")`` — always labelled SIMULATED — and anything else is refused at the door with what
to type instead. Reading a machine never creates a CUDA context. Taught in ``notebooks/00_setup.ipynb``.
"""
from __future__ import annotations

import os
from typing import Any

from ..core.arguments import gpu_list, shown
from ..core.readings import GpuInfo
from .nvml import GpuReader, default_reader
from .simulated import PRESETS, SimulatedGpuReader

__all__ = ["as_reader", "machine_gpus"]


def as_reader(reader: Any, name: str = "machine") -> GpuReader:
    """``None`` → this machine (NVML, or ``GPULAB_SIMULATE_GPUS``); a reader → itself; a preset name, a JSON path or a
    dict → the described machine (``SimulatedGpuReader``). Anything else raises ``TypeError`` saying what to pass."""
    if reader is None:
        return default_reader()
    if isinstance(reader, (str, os.PathLike, dict)):
        return SimulatedGpuReader(reader)  # refuses an unknown name or a broken file, naming the presets
    if isinstance(reader, GpuReader):
        return reader
    raise TypeError(f"{name}={shown(reader)} is a {type(reader).__name__}, not a machine to read. Leave {name} out for "
                    f"this machine, or name a described one: {name}=\"workshop-8\" (presets: {', '.join(PRESETS)}), "
                    f"or pass a reader such as gpulab.SimulatedGpuReader(\"workshop-8\").")


def machine_gpus(gpus: Any, name: str = "machine") -> tuple[GpuInfo, ...]:
    """The GPUs of a machine named like ``as_reader`` does, or GPUs already read (``GpuInfo``s, an ``Inventory``)."""
    if gpus is None or isinstance(gpus, (str, os.PathLike, dict)):
        gpus = as_reader(gpus, name)
    return gpu_list(gpus, name)
