"""What ``explain()`` found: one ``Step`` per statement, and the ``Explanation`` of a snippet (pure).

An explanation is a prediction from PyTorch's rules, never an observation of a GPU, and its text and HTML say so
(SIMULATED, when the machine is a described one). Taught in ``notebooks/02_choosing_gpus.ipynb``.
"""

from __future__ import annotations

import html
from dataclasses import dataclass

from ..core.visible import LogicalDevice, VisibleMap

__all__ = ["Step", "Explanation"]


@dataclass(frozen=True)
class Step:
    """One statement: where its result lives (``cuda_indices``, mapped to ``physical``), why, or the error it raises."""

    code: str
    sentence: str
    cuda_indices: tuple[int, ...] = ()
    physical: tuple[LogicalDevice, ...] = ()
    error: str | None = None
    on_cpu: bool = False

    def __str__(self) -> str:
        head = f"{self.code}\n  → "
        return head + (f"raises {self.error}\n    " if self.error else "") + self.sentence


@dataclass(frozen=True)
class Explanation:
    """The steps of a snippet under one environment, on one (real or described) machine."""

    visible: VisibleMap
    steps: tuple[Step, ...]
    gpu_count: int = 0

    @property
    def prediction(self) -> str:
        """Where the answer comes from: always PyTorch's rules read by gpulab, never an observation of a GPU."""
        if self.visible.simulated:
            where = "on a SIMULATED machine (described GPUs, not this computer's)"
        elif self.gpu_count:
            where = f"for {self.gpu_count} GPU(s) as NVML lists them"
        else:
            where = "for a machine with no GPU"
        return f"Predicted by gpulab.explain {where}: nothing ran on a GPU."

    @property
    def error(self) -> str | None:
        """The error the snippet would raise (PyTorch's message, from its last statement), or None."""
        return self.steps[-1].error if self.steps else None

    @property
    def physical_indices(self) -> tuple[int, ...]:
        """Physical GPUs (nvidia-smi numbers) the last statement's work lands on; empty for the CPU or an error."""
        return tuple(d.physical_index for d in self.steps[-1].physical) if self.steps else ()

    def __str__(self) -> str:
        return "\n".join([self.prediction, self.visible.environment_line(), *(str(s) for s in self.steps)])

    def _repr_html_(self) -> str:
        rows = "".join(
            f"<tr><td><code>{html.escape(s.code)}</code></td><td>"
            + (f"<b style='color:#b00'>raises {html.escape(s.error)}</b><br>" if s.error else "")
            + f"{html.escape(s.sentence)}</td></tr>"
            for s in self.steps
        )
        label = html.escape(self.prediction).replace("SIMULATED", "<b style='color:#b00'>SIMULATED</b>", 1)
        return (
            f"<div><p><i>{label}</i></p><code>{html.escape(self.visible.environment_line())}</code>"
            f"<table style='border-collapse:collapse'>{rows}</table></div>"
        )
