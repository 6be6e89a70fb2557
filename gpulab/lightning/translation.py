"""The result of translating an old ``Trainer(...)`` call: today's arguments, each change with its reason, the code.

``Translation`` prints as a short lesson (the old call, what Lightning 2.6 says to it, one line per change, today's
call) and renders as HTML in a notebook. ``for_cpu()`` gives the same call for a machine without GPUs (the same number
of processes on CPU cores), which is how the chapter runs every translation for real on a laptop. Pure: the values
that need Lightning (``find_usable_cuda_devices(2)``, ``DeviceStatsMonitor()``) are ``Code`` until
``gpulab.lightning.trainer_args.trainer_kwargs`` builds them. Taught in ``notebooks/06_lightning.ipynb``.
"""

from __future__ import annotations

import html
from dataclasses import dataclass, field, replace

from ..core.arguments import is_whole_number, whole_number
from ..core.tables import html_table
from .call import Code, render_call, render_value

__all__ = ["Change", "Translation", "PREDICTED"]

STATUSES = ("removed", "default changed", "respelled", "unchanged", "in a notebook", "on CPU")


PREDICTED = (
    "Predicted by gpulab.translate_trainer: its reading of the old flags (from Lightning's changelog), "
    "not a call Lightning ran."
)


@dataclass(frozen=True)
class Change:
    """One flag of the old call and what became of it."""

    old: str  # "gpus=[0, 2]", or "(no strategy)" for a default that changed
    new: str  # "accelerator='gpu', devices=[0, 2]", or "(dropped)"
    status: str  # one of STATUSES
    reason: str  # one line
    removed_in: str | None = None  # the Lightning release that stopped accepting the old form

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError(f"status {self.status!r} is not one of {STATUSES}")

    def row(self) -> tuple[str, str, str, str]:
        """The old form, today's, the release that removed the old one, and why."""
        return self.old, self.new, self.removed_in or "—", self.reason

    def __str__(self) -> str:
        when = f"[removed in {self.removed_in}]" if self.removed_in else f"[{self.status}]"
        return f"{self.old}  →  {self.new}  {when}\n    {self.reason}"


@dataclass(frozen=True)
class Translation:
    """An old Trainer call and today's: ``kwargs`` (values; ``Code`` where Lightning builds them), ``changes``,
    ``notes``, ``error_today`` (what Lightning 2.6 raises for the old call, None if it accepts it) and ``code``."""

    old_call: str
    old_kwargs: dict[str, object]
    kwargs: dict[str, object]
    changes: tuple[Change, ...]
    notes: tuple[str, ...] = ()
    error_today: str | None = None
    notebook: bool = False
    on_cpu: bool = field(default=False)

    @property
    def call(self) -> str:
        """Today's call: ``Trainer(accelerator='gpu', devices=[0, 2], ...)``."""
        return render_call(self.kwargs)

    @property
    def imports(self) -> tuple[str, ...]:
        """The import lines today's call needs: ``Trainer``'s, and those of any code it holds
        (``find_usable_cuda_devices``)."""
        found = ["from lightning import Trainer"]
        values = [v for value in self.kwargs.values() for v in (value if isinstance(value, list) else [value])]
        for v in values:
            if isinstance(v, Code):
                found += [line for line in v.imports if line not in found]
        return tuple(found)

    @property
    def code(self) -> str:
        """Today's call as code to paste: the imports it needs, then ``trainer = Trainer(...)``."""
        return "\n".join(self.imports) + "\n\ntrainer = " + self.call

    def for_cpu(self, devices: int | None = None) -> Translation:
        """The same run on a machine without GPUs: ``accelerator='cpu'`` and as many processes as GPUs asked for
        (``devices`` overrides the count; needed when the call asked for all GPUs, ``-1``)."""
        if devices is not None:
            devices = whole_number(
                devices, "devices", minimum=1, what="on a CPU, the number of processes", example=".for_cpu(devices=2)"
            )
        kwargs, changes = dict(self.kwargs), []
        accelerator = kwargs.get("accelerator", "auto")
        if accelerator in ("gpu", "cuda", "auto"):
            asked = kwargs.get("devices", "auto")
            if devices is None and accelerator == "auto" and asked == "auto":
                count = None  # the CPU accelerator's own default: one process
            else:
                count = devices if devices is not None else _gpu_count(asked)
            rest = {k: v for k, v in kwargs.items() if k not in ("accelerator", "devices")}
            kwargs = {"accelerator": "cpu", **({} if count is None else {"devices": count}), **rest}
            old = f"accelerator={accelerator!r}" + (
                f", devices={render_value(asked)}" if "devices" in self.kwargs else ""
            )
            new = "accelerator='cpu'" + ("" if count is None else f", devices={count}")
            changes.append(
                Change(
                    old,
                    new,
                    "on CPU",
                    "the same number of processes on CPU cores (several: DDP over "
                    "gloo instead of NCCL); no GPU is touched",
                )
            )
        elif devices is not None:
            kwargs["devices"] = devices
        if kwargs.get("precision") == "16-mixed":
            kwargs["precision"] = "bf16-mixed"
            changes.append(
                Change(
                    "precision='16-mixed'",
                    "precision='bf16-mixed'",
                    "on CPU",
                    "Lightning's choice: on a CPU it swaps '16-mixed' for 'bf16-mixed' and warns (PyTorch's CPU "
                    "autocast does run float16, with torch.amp.GradScaler('cpu')); written out here",
                )
            )
        return replace(self, kwargs=kwargs, changes=self.changes + tuple(changes), on_cpu=True)

    # -- rendering ------------------------------------------------------------------------------------------------
    @property
    def label(self) -> str:
        """What this is: gpulab's reading of the old flags, not something Lightning did."""
        return PREDICTED

    def _heading(self) -> str:
        where = "a notebook" if self.notebook else "a script"
        return f"Translating {render_call(self.old_kwargs, width=10_000)} (for {where}" + (
            ", adapted to a CPU-only machine)" if self.on_cpu else ")"
        )

    def _verdict(self) -> str:
        if self.error_today is None:
            return "Lightning 2.6 accepts the old call as written."
        return f"Lightning 2.6 refuses the old call: {self.error_today}"

    def __str__(self) -> str:
        lines = [self.label, self._heading(), self._verdict(), ""]
        for c in self.changes:
            lines += ["  " + line for line in str(c).splitlines()]
        if not self.changes:
            lines.append("  nothing to change")
        lines += ["", "Today:", *("  " + line for line in self.code.splitlines())]
        lines += [f"Note: {n}" for n in self.notes]
        return "\n".join(lines)

    def _repr_pretty_(self, p, cycle: bool) -> None:
        p.text(str(self))

    def _repr_html_(self) -> str:
        table = html_table(
            ("article", "today", "removed in", "why"), [c.row() for c in self.changes], caption=self._heading()
        )
        notes = "".join(f"<li>{html.escape(n)}</li>" for n in self.notes)
        return (
            f"<p><em>{html.escape(self.label)}</em></p><p>{html.escape(self._verdict())}</p>{table}<pre>{html.escape(self.code)}</pre>"
            + (f"<ul>{notes}</ul>" if notes else "")
        )


def _gpu_count(devices: object) -> int:
    """How many processes a GPU request means, for the CPU version of the call."""
    if isinstance(devices, Code) and devices.target and devices.target[1] == "find_usable_cuda_devices":
        devices = devices.target[2][0] if devices.target[2] else -1
    if isinstance(devices, list):
        return len(devices)
    if is_whole_number(devices) and devices > 0:
        return devices
    raise ValueError(
        f"devices={render_value(devices)} asks for every GPU the machine has; a CPU has no such count. "
        "Say how many processes to run: .for_cpu(devices=2)."
    )
