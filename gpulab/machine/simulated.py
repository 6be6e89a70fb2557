"""Described GPUs for machines that have none: the test fake behind our NVML seam, and a classroom demo.

``SimulatedGpuReader`` answers the ``GpuReader`` questions from a description (a preset name or a JSON file), so the
picker, the selection policy, the monitor and the report can be tried — and tested — on a laptop. It is always labelled:
``reader.simulated`` is True and the report says SIMULATED. Set ``GPULAB_SIMULATE_GPUS`` to a preset name
(``two-gpus-mig``, ``kaggle-2xT4``, ``colab-T4``, ``workshop-8``, ``idle-8``) or to a JSON file to make
``default_reader()`` use it. Real torch still sees no GPU: nothing here pretends CUDA exists.
"""

from __future__ import annotations

import copy
import difflib
import json
import os
import threading
import uuid as _uuid
from pathlib import Path
from typing import Any

from ..core.readings import NOT_READ, GpuInfo, GpuProcess, GpuSample, MigInstance, Unavailable
from .described import validated_description

__all__ = ["SimulatedGpuReader", "PRESETS", "simulated_gpu"]

MiB = 1024**2
_NOT_SUPPORTED = "not supported on this GPU"


def _uuid_for(name: str, index: int) -> str:
    return "GPU-" + str(_uuid.uuid5(_uuid.NAMESPACE_DNS, f"gpulab-{name}-{index}"))


def simulated_gpu(
    index: int,
    name: str,
    memory_total_mib: int,
    *,
    used_mib: int = 0,
    util: int = 0,
    unsupported: tuple[str, ...] = (),
    mig_slices_mib: tuple[int, ...] = (),
    mig_profiles: tuple[str, ...] = (),
    processes: tuple[tuple[int, int, str], ...] = (),
) -> dict[str, Any]:
    """One GPU description (plain dict, JSON-ready). ``unsupported`` names fields NVML refuses on this GPU;
    ``mig_slices_mib`` puts it in MIG mode with slices of that memory, ``mig_profiles`` their profiles (``3g.40gb``)."""
    uid = _uuid_for(name, index)
    return {
        "name": name,
        "uuid": uid,
        "pci_bus_id": f"00000000:{0x17 + 0x10 * index:02X}:00.0",
        "memory_total_bytes": memory_total_mib * MiB,
        "memory_used_bytes": used_mib * MiB,
        "utilization_gpu_percent": util,
        "utilization_memory_percent": util // 2,
        "temperature_c": 35 + util // 3,
        "power_w": 30.0 + 2.5 * util,
        "unsupported": list(unsupported)
        + (["utilization_gpu_percent", "utilization_memory_percent"] if mig_slices_mib else []),
        "mig_devices": [
            {
                "uuid": "MIG-" + str(_uuid.uuid5(_uuid.NAMESPACE_DNS, f"{uid}-{k}")),
                "memory_total_bytes": m * MiB,
                "memory_used_bytes": 0,
                "profile": mig_profiles[k] if k < len(mig_profiles) else "",
            }
            for k, m in enumerate(mig_slices_mib)
        ],
        "processes": [{"pid": pid, "used_memory_bytes": mem * MiB, "name": pname} for pid, mem, pname in processes],
    }


PRESETS: dict[str, dict[str, Any]] = {
    # Two different GPUs: an A100 split into two MIG slices (no per-GPU utilisation) and a GeForce card whose
    # power reading NVML refuses — the awkward cases the report and picker must survive.
    "two-gpus-mig": {
        "driver_version": "550.54.15",
        "cuda_driver_version": "12.4",
        "gpus": [
            simulated_gpu(
                0,
                "NVIDIA A100 80GB PCIe",
                81920,
                mig_slices_mib=(40192, 40192),
                mig_profiles=("3g.40gb", "3g.40gb"),  # 40192 MiB each, as on a real A100 80GB
            ),
            simulated_gpu(
                1,
                "NVIDIA GeForce RTX 3090",
                24576,
                used_mib=1210,
                util=37,
                unsupported=("power_w",),
                processes=((4242, 1190, "python"),),
            ),
        ],
    },
    "kaggle-2xT4": {
        "driver_version": "535.161.08",
        "cuda_driver_version": "12.2",
        "gpus": [simulated_gpu(i, "Tesla T4", 15360, used_mib=3) for i in range(2)],
    },
    "colab-T4": {
        "driver_version": "535.104.05",
        "cuda_driver_version": "12.2",
        "gpus": [simulated_gpu(0, "Tesla T4", 15360, used_mib=0)],
    },
    # A shared workshop server mid-session: some GPUs busy, some free.
    "workshop-8": {
        "driver_version": "550.90.07",
        "cuda_driver_version": "12.4",
        "gpus": [
            simulated_gpu(
                i,
                "NVIDIA A100-SXM4-40GB",
                40960,
                used_mib=used,
                util=util,
                processes=((31000 + i, used - 420, "python"),) if used > 500 else (),
            )
            for i, (used, util) in enumerate(
                [(30110, 97), (4, 0), (12290, 45), (4, 0), (39800, 100), (4, 0), (2050, 3), (20480, 61)]
            )
        ],
    },
    # The same server before the workshop starts: all 8 GPUs free (the kernel provisioner's and the Hub's tests).
    "idle-8": {
        "driver_version": "550.90.07",
        "cuda_driver_version": "12.4",
        "gpus": [simulated_gpu(i, "NVIDIA A100-SXM4-40GB", 40960, used_mib=4) for i in range(8)],
    },
}


class SimulatedGpuReader:
    """A ``GpuReader`` over described GPUs. Thread-safe: tests change usage while it is read (``tests.seams``)."""

    simulated = True

    def __init__(
        self, description: dict[str, Any] | str | os.PathLike[str] | None = "two-gpus-mig", *, error: str | None = None
    ) -> None:
        self._lock = threading.Lock()
        self.description = _load(description)
        self._error = error
        self.calls = 0  # how many questions were asked (tests read it)

    @property
    def error(self) -> str | None:
        """``None``, or the NVML failure this described machine plays (``error=`` when made)."""
        return self._error

    def driver_version(self) -> str | Unavailable:  # as NvmlReader answers: the reason itself is in ``error``
        """The described driver version (unavailable, as with NVML, when this reader plays a failure)."""
        return Unavailable("NVML could not start") if self._error else self.description["driver_version"]

    def cuda_driver_version(self) -> str | Unavailable:
        """The newest CUDA the described driver supports (unavailable when this reader plays a failure)."""
        return Unavailable("NVML could not start") if self._error else self.description["cuda_driver_version"]

    def count(self) -> int:
        """How many GPUs are described (0 when this reader plays a failure)."""
        return 0 if self._error else len(self.description["gpus"])

    def _gpu(self, i: int) -> dict[str, Any]:
        self.calls += 1
        if not 0 <= i < self.count():
            raise IndexError(f"there is no GPU with physical index {i}: {self.count()} simulated GPU(s).")
        return self.description["gpus"][i]

    def _value(self, g: dict[str, Any], key: str) -> Any:
        return Unavailable(_NOT_SUPPORTED) if key in g.get("unsupported", ()) else g[key]

    def sample(self, i: int) -> GpuSample:
        """Described GPU ``i``'s memory and utilisation now."""
        with self._lock:
            g = self._gpu(i)
            return GpuSample(
                i, g["memory_used_bytes"], g["memory_total_bytes"], self._value(g, "utilization_gpu_percent")
            )

    def info(self, i: int, *, processes: bool = True) -> GpuInfo:
        """Everything described about GPU ``i``, as ``NvmlReader.info`` answers it (``processes``: its process list
        too)."""
        with self._lock:
            g = self._gpu(i)
            migs = tuple(
                MigInstance(k, m["uuid"], m["memory_total_bytes"], m["memory_used_bytes"], m.get("profile", ""))
                for k, m in enumerate(g.get("mig_devices", ()))
            )
            procs: tuple[GpuProcess, ...] | Unavailable = (
                tuple(GpuProcess(p["pid"], p["used_memory_bytes"], p["name"]) for p in g.get("processes", ()))
                if processes
                else Unavailable(NOT_READ)
            )
            used = g["memory_used_bytes"]
            return GpuInfo(
                physical_index=i,
                uuid=g["uuid"],
                name=g["name"],
                pci_bus_id=g["pci_bus_id"],
                memory_total_bytes=g["memory_total_bytes"],
                memory_used_bytes=used,
                memory_free_bytes=g["memory_total_bytes"] - used,
                utilization_gpu_percent=self._value(g, "utilization_gpu_percent"),
                utilization_memory_percent=self._value(g, "utilization_memory_percent"),
                temperature_c=self._value(g, "temperature_c"),
                power_w=self._value(g, "power_w"),
                mig_enabled=bool(g.get("mig_enabled", migs)),
                mig_devices=migs,
                processes=procs,
                simulated=True,
            )

    def to_json(self) -> str:
        """The description as JSON: save it to a file and pass its path to describe the same machine again."""
        with self._lock:
            return json.dumps(self.description, indent=1)


def _load(description: Any) -> dict[str, Any]:
    """A validated copy of the description: a preset name, a JSON file (path), a dict, or None (no GPU)."""
    if description is None:
        return {"driver_version": "N/A", "cuda_driver_version": "N/A", "gpus": []}
    if isinstance(description, dict):
        return validated_description(copy.deepcopy(description), "the simulated-GPU description given as a dict")
    if isinstance(description, os.PathLike):
        description = os.fspath(description)
    if not isinstance(description, str):
        raise TypeError(
            f"SimulatedGpuReader takes a preset name ({', '.join(PRESETS)}), the path of a JSON "
            f"description, or a dict; got a {type(description).__name__}. Try "
            'SimulatedGpuReader("workshop-8").'
        )
    if description in PRESETS:
        return copy.deepcopy(PRESETS[description])
    path = Path(description)
    try:
        is_file = path.is_file()
    except (OSError, ValueError):  # a name too long for a path, or with a NUL in it: not a file
        is_file = False
    if is_file:
        try:
            data = json.loads(path.read_text())
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise ValueError(
                f"the simulated-GPU description {path} is not valid JSON ({exc}). Fix the file, or use a "
                f"preset: {', '.join(PRESETS)}."
            ) from exc
        except OSError as exc:
            raise ValueError(f"cannot read the simulated-GPU description {path} ({exc.strerror}).") from exc
        return validated_description(data, f"the simulated-GPU description {path}")
    close = difflib.get_close_matches(description, PRESETS, n=1)
    raise ValueError(
        f"unknown simulated-GPU description {description[:80]!r}: it is neither a preset ({', '.join(PRESETS)}) "
        f"nor an existing JSON file."
        + (f" Did you mean {close[0]!r}?" if close else "")
        + " (If it came from GPULAB_SIMULATE_GPUS, check that.)"
    )
