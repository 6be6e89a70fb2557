"""Is DDP faster here? Samples per second of the chapters' digits model: one process, DDP on 1 rank, DDP on 2 ranks.

Each setup trains in processes started by ``launch``: one process uses every usable core as a thread (which is
also what ``DataParallel`` does without GPUs: it runs the module as it is); a DDP rank gets one core (one thread),
as it would get one GPU, so 2 ranks use 2 cores; the ranks talk through gloo and keep the model on the CPU. The
first epoch warms up and is not timed; then every rank counts its samples and time, and the setup's speed is all
samples ÷ the slowest rank's time. On GPUs (``device="cuda"``) each rank has a GPU of its own and NCCL, as the
launcher's decision gives them (``plan_ranks``; refused on fewer than 2 GPUs), and the one-process row uses
``DataParallel``. Taught in ``notebooks/04_ddp.ipynb``.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

from ..core.arguments import whole_number, whole_numbers
from ..core.tables import Table, TableView
from ..core.units import format_rate
from ..core.verdicts import rises_verdict

__all__ = ["SpeedRow", "RankSpeedup", "rank_speedup", "train_rate"]


@dataclass(frozen=True)
class SpeedRow:
    """One setup timed: how many ranks, threads per rank and batch per rank, and the samples per second."""

    setup: str  # "1 process" (DataParallel on GPUs), "DDP"
    world_size: int
    threads_per_rank: int
    batch_per_rank: int
    samples_per_s: float


@dataclass(frozen=True)
class RankSpeedup(TableView):
    """The measured rows, and how many times faster 2 DDP ranks were than 1 at each batch size."""

    rows: tuple[SpeedRow, ...]
    cores: int
    device: str

    def ratio(self, batch_per_rank: int, world_size: int = 2) -> float:
        """DDP on ``world_size`` ranks ÷ DDP on 1 rank, in samples/s, at ``batch_per_rank`` images per rank and step."""
        speed = {
            r.world_size: r.samples_per_s for r in self.rows if r.setup == "DDP" and r.batch_per_rank == batch_per_rank
        }
        return speed[world_size] / speed[1]

    def table(self) -> Table:
        """Each setup's ranks, threads, batch and samples/s, with 2 ranks ÷ 1 per batch size as notes."""
        rows = [
            [r.setup, r.world_size, r.threads_per_rank, r.batch_per_rank, format_rate(r.samples_per_s, "samples")]
            for r in self.rows
        ]
        batches = sorted({r.batch_per_rank for r in self.rows})
        paired = [
            b
            for b in batches
            if {1, 2} <= {r.world_size for r in self.rows if r.setup == "DDP" and r.batch_per_rank == b}
        ]
        notes = [f"batch {b} per rank: 2 DDP ranks ÷ 1 = {self.ratio(b):.2f}×" for b in paired]
        if len(paired) >= 2:  # the chapter's claim about this table, decided here rather than by its prose
            notes.append(
                str(
                    rises_verdict(
                        "2 ranks gain more over 1 as the batch per rank grows",
                        [(f"batch {b}", self.ratio(b)) for b in paired],
                        "{:.2f}×".format,
                    )
                )
            )
        return Table(
            ["setup", "ranks", "threads each", "batch per rank", "speed"],
            rows,
            title=f"digits MLP, {self.device}, {self.cores} usable cores",
            notes=notes,
        )


def train_rate(
    batch_size: int, epochs: int, ddp: bool, device: str = "cpu", images: int | None = None
) -> tuple[int, float]:
    """In a rank: train ``mlp()`` on the digits (the first ``images`` of them), the first epoch untimed; return
    (samples, seconds) of the rest."""
    import torch
    import torch.distributed as dist
    from torch.utils.data import DataLoader, DistributedSampler, RandomSampler, Subset

    from ..workload import load_digits, mlp

    train = load_digits().train
    if images is not None:
        train = Subset(train, range(min(images, len(train))))
    model = mlp().to(device)
    if ddp:
        sampler = DistributedSampler(train, seed=0)
        ids = [torch.device(device).index or 0] if device.startswith("cuda") else None
        model = torch.nn.parallel.DistributedDataParallel(model, device_ids=ids)
    else:
        sampler = RandomSampler(train)
        if device.startswith("cuda"):
            model = torch.nn.DataParallel(model)
    loader = DataLoader(train, batch_size=batch_size, sampler=sampler)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    samples, t0 = 0, time.perf_counter()
    for epoch in range(epochs + 1):
        if epoch == 1:  # after the warm-up epoch, start together
            if dist.is_initialized():
                dist.barrier()
            samples, t0 = 0, time.perf_counter()
        if ddp:
            sampler.set_epoch(epoch)
        for xb, yb in loader:
            xb, yb = xb.to(device), yb.to(device)
            opt.zero_grad(set_to_none=True)
            torch.nn.functional.cross_entropy(model(xb), yb).backward()
            opt.step()
            samples += len(xb)
    if device.startswith("cuda"):
        torch.cuda.synchronize()
    return samples, time.perf_counter() - t0


def rank_speedup(
    batch_sizes: Sequence[int] = (32, 128),
    *,
    epochs: int = 2,
    images: int | None = None,
    device: str = "cpu",
) -> RankSpeedup:
    """Measure one process and DDP on 1 and 2 ranks at each batch size (per rank), side by side.

    ``images`` trains on the first that many digits only (the quick version of a chapter); None: all 1,437.
    """
    from ..machine.host import host_info
    from .launcher import launch
    from .own_device import on_own_device

    if device not in ("cpu", "cuda"):
        raise ValueError(f"device is 'cpu' or 'cuda' (each rank then gets its own GPU); got {device!r}.")
    batch_sizes = whole_numbers(
        batch_sizes, "batch_sizes", minimum=1, example="(32, 128)", empty_ok=False, what="images per rank and step"
    )
    if images is not None:
        images = whole_number(
            images,
            "images",
            minimum=2 * max(batch_sizes),
            example=f"images={4 * max(batch_sizes)}",
            what=f"digits to train on: images must leave each of 2 ranks at least one full batch of {max(batch_sizes)}",
        )
    epochs = whole_number(
        epochs,
        "epochs",
        minimum=1,
        what="timed passes over the data, after one untimed",
        example="rank_speedup((64,), epochs=2)",
    )
    cores = host_info().usable_cores  # the 1-process run uses them all
    backend = _ddp_backend(device)
    rows = []
    for batch in batch_sizes:
        for setup, world_size in (("1 process", 1), ("DDP", 1), ("DDP", 2)):
            threads = cores if setup == "1 process" else 1  # a DDP rank gets one core, as it would get one GPU
            if setup == "DDP":  # each rank trains where the launch plan put it: its own GPU under NCCL, else the CPU
                out = launch(
                    on_own_device(train_rate),
                    world_size,
                    args=(batch, epochs, True),
                    kwargs={"images": images},
                    all_ranks=True,
                    threads_per_rank=threads,
                    backend=backend,
                )
            else:
                out = launch(
                    train_rate,
                    1,
                    args=(batch, epochs, False, device, images),
                    all_ranks=True,
                    threads_per_rank=threads,
                    init_process_group=False,
                )
            rate = sum(n for n, _ in out) / max(s for _, s in out)
            rows.append(
                SpeedRow(
                    setup if device == "cpu" or setup == "DDP" else "DataParallel", world_size, threads, batch, rate
                )
            )
    return RankSpeedup(tuple(rows), cores, device)


def _ddp_backend(device: str) -> str:
    """gloo for ranks on the CPU (the model stays there); NCCL for ``device="cuda"``, where the decision gives every
    rank of the 2 a GPU of its own — refused, with the decision's reason, where it does not."""
    from .plan import plan_ranks

    if device == "cpu":
        return "gloo"
    plan = plan_ranks("auto", 2)
    if plan.backend != "nccl":
        raise ValueError(
            f"device='cuda' gives each of 2 DDP ranks a GPU of its own, which this machine cannot: "
            f"{plan.reason} Use device='cpu' (one core per rank), or a machine with 2 GPUs."
        )
    return plan.backend
