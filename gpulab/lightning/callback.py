"""gpulab's live monitor inside a Lightning fit: ``Trainer(callbacks=[MonitorCallback()])`` (imports Lightning).

Importing it costs what importing Lightning costs (several seconds on a cold cache), so only ``gpulab.MonitorCallback``
loads it, on first use. Taught in ``notebooks/06_lightning.ipynb``.
"""

from __future__ import annotations

import os
import sys
import warnings
from typing import Any

import lightning
from lightning.pytorch.utilities.data import extract_batch_size

from ..monitoring.live_monitor import Monitor
from .step_relay import StepRelay

__all__ = ["MonitorCallback"]


def _forked_from_a_notebook(owner_pid: int) -> bool:
    ipython = sys.modules.get("IPython")
    return os.getpid() != owner_pid and ipython is not None and ipython.get_ipython() is not None


class MonitorCallback(lightning.Callback):
    """gpulab's live monitor in a Lightning fit: memory, utilisation, samples/s and epoch marks in one figure.

    ``MonitorCallback()`` starts its own ``gpulab.monitor`` when the fit starts and stops it when the fit ends, in the
    process that runs rank 0 (one device; or ``strategy="ddp"`` in a script, whose rank 0 is the launching process).
    ``MonitorCallback(mon)`` reports into a monitor already running here (``with gpulab.monitor("fit") as mon:``);
    that is the way under ``ddp_notebook``, whose ranks are forked processes: rank 0 sends its steps and marks to the
    notebook through a ``StepRelay``. Only global rank 0 reports; a step counts its batch × the number of processes
    (DDP gives each process a batch of the same size). Other options go to ``gpulab.monitor``.
    """

    def __init__(self, mon: Monitor | None = None, *, title: str = "Lightning fit", **monitor_options: Any) -> None:
        if mon is not None and monitor_options:
            raise TypeError(
                f"options {sorted(monitor_options)} configure a monitor the callback makes itself; the "
                "monitor you passed is already configured."
            )
        self.owner_pid = os.getpid()
        self.title, self.monitor_options = title, monitor_options
        self.relay = StepRelay(mon) if mon is not None else None
        self.monitor: Monitor | None = mon
        self.monitor_passed = mon is not None
        self.summary: Any = None  # the last MonitorSummary of a monitor this callback started
        self._role: str | None = None  # "direct" | "relay" | "own" | None (not reporting in this process)

    def __getstate__(self) -> dict[str, Any]:  # spawn pickles callbacks: the monitor and its pipes stay behind
        return self.__dict__ | {"relay": None, "monitor": None, "_role": None}

    def _choose_role(self, trainer: lightning.Trainer) -> str | None:
        if trainer.global_rank != 0:
            return None
        if self.relay is not None:
            return "direct" if self.relay.in_owner else "relay"
        if self.monitor_passed:  # pickled into a spawned process: the monitor stayed behind
            warnings.warn(
                "MonitorCallback(mon): rank 0 runs in a process started by spawn, which cannot reach the "
                "monitor that was passed in; nothing is monitored. Use strategy='ddp' in a script or "
                "'ddp_notebook' in a notebook, or MonitorCallback() to monitor inside rank 0.",
                stacklevel=2,
            )
            return None
        if _forked_from_a_notebook(self.owner_pid):
            warnings.warn(
                "MonitorCallback(): rank 0 runs in a process forked from the notebook, which cannot draw "
                "there, so nothing is monitored. Start the monitor in the notebook and pass it: "
                "`with gpulab.monitor('fit') as mon:` ... `callbacks=[MonitorCallback(mon)]`.",
                stacklevel=2,
            )
            return None
        return "own"

    def _step(self, samples: int) -> None:
        if self._role == "relay":
            self.relay.send_step(samples)  # type: ignore[union-attr]
        elif self._role in ("direct", "own"):
            self.monitor.step(samples)  # type: ignore[union-attr]

    def _mark(self, label: str) -> None:
        if self._role == "relay":
            self.relay.send_mark(label)  # type: ignore[union-attr]
        elif self._role in ("direct", "own"):
            self.monitor.mark(label)  # type: ignore[union-attr]

    # -- Lightning's hooks ---------------------------------------------------------------------------------------
    def setup(self, trainer: lightning.Trainer, pl_module: lightning.LightningModule, stage: str) -> None:
        """Before a fit: decide how this process reports (start its own monitor, report to the one passed, relay to it
        from a forked rank, or nothing)."""
        if stage != "fit":
            return
        self._role = self._choose_role(trainer)
        if self._role == "own":
            self.monitor = Monitor(self.title, **self.monitor_options).start()
        n = trainer.world_size
        self._mark(f"fit: {n} process{'es' if n > 1 else ''}")

    def on_train_start(self, trainer: lightning.Trainer, pl_module: lightning.LightningModule) -> None:
        """The first step's time counts from here, not from the set-up before it (sanity check, DDP starting)."""
        if self._role == "relay":
            self.relay.send_restart()  # type: ignore[union-attr]
        elif self._role in ("direct", "own"):
            self.monitor.restart_step_clock()  # type: ignore[union-attr]

    def on_train_epoch_start(self, trainer: lightning.Trainer, pl_module: lightning.LightningModule) -> None:
        """Mark the epoch's start on the monitor's time axis."""
        self._mark(f"epoch {trainer.current_epoch + 1}")

    def on_validation_start(self, trainer: lightning.Trainer, pl_module: lightning.LightningModule) -> None:
        """Mark a validation on the time axis (not the sanity check before the first epoch)."""
        if not trainer.sanity_checking:
            self._mark("validation")

    def on_train_batch_end(
        self, trainer: lightning.Trainer, pl_module: lightning.LightningModule, outputs: Any, batch: Any, batch_idx: int
    ) -> None:
        """Count the batch as one step of batch size × processes samples."""
        if self._role is not None:
            self._step(extract_batch_size(batch) * trainer.world_size)

    def teardown(self, trainer: lightning.Trainer, pl_module: lightning.LightningModule, stage: str) -> None:
        """After the fit: stop a monitor this callback started, or send a forked rank's last steps."""
        if stage == "fit":
            self._end("completed")

    def on_exception(
        self, trainer: lightning.Trainer, pl_module: lightning.LightningModule, exception: BaseException
    ) -> None:
        """A fit that failed: mark it on the monitor and end as ``teardown`` does, naming the error."""
        if (
            self._role is None
            and self.relay is not None
            and self.relay.in_owner
            and self.monitor is not None
            and self.monitor.running
        ):  # a forked rank failed; Lightning reports it here, in the notebook
            self.monitor.mark(f"fit failed: {type(exception).__name__}")
        self._end(f"{type(exception).__name__}: {exception}")

    def _end(self, ended_by: str) -> None:
        role, self._role = self._role, None
        if role == "own" and self.monitor is not None and self.monitor.running:
            self.summary = self.monitor.stop(ended_by)
        elif role == "relay":
            relay = self.relay
            if relay is not None and not relay.finish():
                warnings.warn(
                    "MonitorCallback: the notebook's monitor did not confirm the last steps (it had "
                    "stopped?); they are missing from its figure.",
                    stacklevel=2,
                )
