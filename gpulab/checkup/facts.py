"""What the report reads and what it concludes, as data: ``Facts`` in, ``Finding`` rows out (pure).

Kept apart from the rules that turn one into the other (``diagnosis.py``, ``build_findings.py``) so that a described
machine, a test or a rehearsal can build either by hand.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from ..core.readings import GpuInfo, Unavailable
from ..machine.software import TorchFacts
from .chapters import Chapter

__all__ = ["Finding", "Facts"]


@dataclass(frozen=True)
class Finding:
    """One finding, a row of the checklist: is ``what`` true here, what that means, and (when not) ``fix``: what to do
    about it.

    ``ok`` is ``None`` where gpulab cannot tell (marked ``?``; its ``fix`` says how to be sure). ``blocks_gpus``: when
    this fails, PyTorch will use no GPU at all, whatever else is true."""

    ok: bool | None
    what: str
    meaning: str
    fix: str = ""
    blocks_gpus: bool = False

    @property
    def mark(self) -> str:
        """``✔`` (true here), ``✘`` (false) or ``?`` (gpulab cannot tell)."""
        return {True: "✔", False: "✘", None: "?"}[self.ok]

    @property
    def fix_label(self) -> str:
        """How the fix is introduced: ``fix`` for a failure, ``to be sure`` where gpulab cannot tell."""
        return "to be sure" if self.ok is None else "fix"

    def __str__(self) -> str:
        return f"{self.mark} {self.what} — {self.meaning}" + (
            f" {self.fix_label.capitalize()}: {self.fix}" if self.fix and self.ok is not True else ""
        )


@dataclass(frozen=True)
class Facts:
    """What the report read (or was given): torch's build, NVML's GPUs and driver, and the process's surroundings."""

    torch: TorchFacts
    gpus: tuple[GpuInfo, ...]
    driver_version: str | Unavailable
    cuda_driver_version: str | Unavailable  # the newest CUDA the driver supports (nvidia-smi's "CUDA Version")
    nvml_error: str | None
    simulated: bool = False
    env: Mapping[str, str] = field(default_factory=dict)
    holders: Mapping[str, str] = field(default_factory=dict)  # uuid -> who holds a gpulab reservation on it
    shm_bytes: int | None = None
    fork: bool = True
    cuda_read: bool | None = False  # has CUDA read CUDA_VISIBLE_DEVICES here (None: cannot tell; CudaState)
    cuda_said: str = ""  # why: the whole state when read or unknown, the evidence when not
    packages: Mapping[str, str | None] = field(default_factory=dict)
    chapters: tuple[Chapter, ...] = ()
    yours: Mapping[str, str] = field(default_factory=dict)  # uuid -> whose, for GPUs held for this process already
