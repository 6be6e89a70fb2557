"""What the CUDA driver loaded in a process says about its own start, read from facts (pure).

A process whose ``/proc/self/maps`` lists ``libcuda.so`` has the driver *loaded*, which is not the same as
*initialised*: on a GPU machine ``import torch`` maps libcuda without calling ``cuInit``, and a
``CUDA_VISIBLE_DEVICES`` set after that import still takes effect (the H100 run of 2026-11-26,
``gpu-runs/2026-11-26-h100/diag.txt``, lines B-D). Only ``cuInit`` reads the variable. NVIDIA's driver API reference
(Initialization): "If cuInit() has not been called, any function from the driver API will return
CUDA_ERROR_NOT_INITIALIZED". So ``cuDeviceGetCount``, asked of a libcuda that is already loaded, answers 3 before
``cuInit`` and 0 after, without starting anything. This module reads the maps text and interprets that answer;
``gpulab.machine.cuda`` asks it.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "CUDA_SUCCESS",
    "CUDA_ERROR_NOT_INITIALIZED",
    "result_name",
    "mapped_drivers",
    "driver_in_maps",
    "DriverAnswer",
]

CUDA_SUCCESS = 0
CUDA_ERROR_NOT_INITIALIZED = 3
# CUresult values a learner may meet here (cuda.h); any other is printed by number
_RESULTS = {
    0: "CUDA_SUCCESS",
    1: "CUDA_ERROR_INVALID_VALUE",
    3: "CUDA_ERROR_NOT_INITIALIZED",
    4: "CUDA_ERROR_DEINITIALIZED",
    34: "CUDA_ERROR_STUB_LIBRARY",
    35: "CUDA_ERROR_INSUFFICIENT_DRIVER",
    100: "CUDA_ERROR_NO_DEVICE",
    101: "CUDA_ERROR_INVALID_DEVICE",
    999: "CUDA_ERROR_UNKNOWN",
}


def result_name(code: int) -> str:
    """``3`` → ``'CUDA_ERROR_NOT_INITIALIZED (3)'``."""
    return f"{_RESULTS.get(code, 'CUresult')} ({code})"


def mapped_drivers(maps_text: str) -> tuple[str, ...]:
    """The paths of the CUDA driver library (``libcuda.so*``) in a ``/proc/<pid>/maps`` listing, each once, in order.

    A line is ``address perms offset dev inode [path]``; the path may hold spaces. ``libcudart`` (the runtime) and
    ``libnvidia-ml`` (NVML) are not the driver."""
    found: list[str] = []
    for line in maps_text.splitlines():
        fields = line.split(maxsplit=5)
        path = fields[5].strip() if len(fields) == 6 else ""
        if path.rsplit("/", 1)[-1].startswith("libcuda.so") and path not in found:
            found.append(path)
    return tuple(found)


def driver_in_maps(maps_text: str) -> bool:
    """True if a ``/proc/<pid>/maps`` listing shows the CUDA driver library mapped in (loaded, maybe not started)."""
    return bool(mapped_drivers(maps_text))


@dataclass(frozen=True)
class DriverAnswer:
    """What this process's CUDA driver says about itself.

    ``loaded``: libcuda is mapped here (``None``: this system has no ``/proc/self/maps`` to tell). ``initialised``:
    the driver's own answer, ``True`` after ``cuInit``, ``False`` before, ``None`` when it was not asked or gave no
    clear answer. ``said``: what was asked and answered, for messages."""

    loaded: bool | None
    initialised: bool | None
    said: str

    @classmethod
    def not_loaded(cls) -> DriverAnswer:
        """No libcuda is mapped in this process: CUDA cannot have started."""
        return cls(False, None, "libcuda is not loaded in this process")

    @classmethod
    def unlisted(cls, platform: str) -> DriverAnswer:
        """``platform`` is ``sys.platform``: no ``/proc/self/maps`` there to find a loaded driver in."""
        name = {"win32": "Windows", "darwin": "macOS"}.get(platform, platform)
        return cls(None, None, f"not asked: gpulab finds the driver through /proc/self/maps, which {name} lacks")

    @classmethod
    def answered(cls, path: str, code: int, count: int | None = None) -> DriverAnswer:
        """Interpret ``cuDeviceGetCount``'s result ``code`` from the libcuda at ``path``: only 0 and 3 are clear."""
        name = path.rsplit("/", 1)[-1]
        said = f"{name} answers {result_name(code)} to cuDeviceGetCount"
        if code == CUDA_SUCCESS:
            return cls(True, True, said + (f" ({count} GPU(s))" if count is not None else ""))
        if code == CUDA_ERROR_NOT_INITIALIZED:
            return cls(True, False, said)
        return cls(True, None, said)

    @classmethod
    def unanswered(cls, path: str, why: str) -> DriverAnswer:
        """The libcuda at ``path`` is loaded but could not be asked (``why``): whether CUDA started stays unknown."""
        return cls(True, None, f"{path.rsplit('/', 1)[-1]} is loaded but could not be asked ({why})")

    @staticmethod
    def combined(answers: tuple[DriverAnswer, ...]) -> DriverAnswer:
        """One answer for several libcuda files mapped at once: initialised if any says so, not initialised only if
        all say so, otherwise unclear."""
        if not answers:
            return DriverAnswer.not_loaded()
        if len(answers) == 1:
            return answers[0]
        said = "; ".join(a.said for a in answers)
        if any(a.initialised is True for a in answers):
            return DriverAnswer(True, True, said)
        return DriverAnswer(True, False if all(a.initialised is False for a in answers) else None, said)

    @property
    def summary(self) -> str:
        """A table cell: ``loaded, not initialised (…)``."""
        if self.loaded is False:
            return "not loaded"
        if self.loaded is None:
            return self.said
        state = {True: "loaded and initialised", False: "loaded, not initialised", None: "loaded; cannot tell"}
        return f"{state[self.initialised]} ({self.said})"
