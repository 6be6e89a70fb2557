"""The child side of ``gpulab.lightning.fork_hang``: CPU work, then a ``ddp_fork`` fit whose ranks say how far they get.

Run in a fresh interpreter that ``fork_experiment`` can kill (it may hang: that is what it shows), and that ends with
the kernel however the kernel ends (``gpulab.ranks.orphans``). Imports Lightning.
Taught in ``notebooks/06_lightning.ipynb``.
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any

import lightning
import torch

from .classifier import DigitsClassifier

__all__ = ["fork_fit_variants"]


def _say(line: str) -> None:
    """One whole line to stdout in one write: ranks share the pipe, and print() may split a line in two writes."""
    sys.stdout.flush()
    os.write(sys.stdout.fileno(), (line + "\n").encode())


class _PrintProgress(lightning.Callback):
    """Each rank says when it starts (with its thread count), after its first step, and when it ends."""

    def setup(self, trainer: lightning.Trainer, pl_module: lightning.LightningModule, stage: str) -> None:
        _say(f"rank {trainer.global_rank}: started, {torch.get_num_threads()} thread(s)")

    def on_train_batch_end(
        self, trainer: lightning.Trainer, pl_module: lightning.LightningModule, outputs: Any, batch: Any, batch_idx: int
    ) -> None:
        if batch_idx == 0 and trainer.current_epoch == 0:
            _say(f"rank {trainer.global_rank}: first step done")

    def teardown(self, trainer: lightning.Trainer, pl_module: lightning.LightningModule, stage: str) -> None:
        _say(f"rank {trainer.global_rank}: finished")


def fork_fit_variants(
    variants: list[tuple[int, int | None, int]], devices: int = 2, samples: int = 256, *, parent_pid: int | None = None
) -> None:
    """The child side of ``gpulab.lightning.fork_hang``, run in a fresh interpreter. Data and models are prepared on
    one thread (no OpenMP pool yet); then, per (work threads, OMP_NUM_THREADS, fit threads) variant: CPU work as a
    notebook does on that many threads, and a ``ddp_fork`` fit on ``devices`` CPU processes that says how far each
    rank gets. With ``parent_pid`` (the kernel's), a kernel that dies takes this interpreter and its ranks with it."""
    from torch.utils.data import DataLoader, TensorDataset

    from ..ranks.orphans import end_group_with_parent

    if parent_pid is not None:
        end_group_with_parent(parent_pid)

    from ..workload.digits import load_digits

    torch.set_num_threads(1)
    x, y = load_digits().train.tensors
    loader = DataLoader(TensorDataset(x[:samples], y[:samples]), batch_size=32)
    models = [DigitsClassifier(hidden=256) for _ in variants]
    pool_started = False
    _say("parent: ready")
    for k, ((work_threads, omp, fit_threads), model) in enumerate(zip(variants, models)):
        torch.set_num_threads(work_threads)
        a = torch.randn(400, 400)
        (a @ a).sum()  # the notebook's CPU work: on two or more threads it starts OpenMP's thread pool here
        pool_started = pool_started or work_threads > 1
        if omp is None:
            os.environ.pop("OMP_NUM_THREADS", None)
        else:
            os.environ["OMP_NUM_THREADS"] = str(omp)
        torch.set_num_threads(fit_threads)
        _say(f"variant {k}: begin")
        _say(f"parent: OpenMP pool started before the fork: {'yes' if pool_started else 'no'}")
        start = time.perf_counter()
        trainer = lightning.Trainer(
            accelerator="cpu",
            devices=devices,
            strategy="ddp_fork",
            max_epochs=1,
            callbacks=[_PrintProgress()],
            logger=False,
            enable_checkpointing=False,
            enable_progress_bar=False,
            enable_model_summary=False,
        )
        trainer.fit(model, loader)
        _say(f"variant {k}: finished in {time.perf_counter() - start:.2f} s")
