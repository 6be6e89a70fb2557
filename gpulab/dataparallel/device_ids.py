"""Which devices ``torch.nn.DataParallel`` uses, decided from the number of CUDA GPUs alone (pure: no torch).

DataParallel behaves in three ways, and which one a learner meets depends only on how many GPUs the process sees:

- **0 GPUs**: torch finds no CUDA device type, keeps nothing of ``device_ids`` (it becomes ``[]``, silently) and the
  wrapper's forward calls the model as it is, on the CPU: a pass-through. Only the ``module.`` prefix shows.
- **1 GPU**: ``device_ids=[0]`` is the only legal list: ``device_ids=[0, 1]`` raises ``AssertionError: Invalid device
  id`` (one H100, the GPU run of 2026-11-26: ``evidence/2026-11-26-h100-80gb-hbm3.md``). With one device,
  DataParallel moves the model to ``cuda:0`` itself; each forward scatters the whole batch to ``cuda:0`` as one chunk
  and runs the model itself on it (one device: no replica copied, nothing gathered), so the outputs are on ``cuda:0``.
  Nothing is split, but where the batch, the model and the outputs go can be watched.
- **2 or more GPUs**: ``device_ids`` names every GPU; the model must be on ``cuda:0`` (``device_ids[0]``) before the
  first forward; each batch is cut into one chunk per GPU (``Tensor.chunk``'s sizes), one replica per GPU runs its
  chunk, and the outputs are gathered on ``cuda:0``.

``dataparallel_devices(gpu_count)`` returns that decision as ``DataParallelDevices``. The chapter leaves ``device_ids``
out instead (every visible GPU), which this decision matches up to ``at_most``. Tests give it 0, 1, 2 and 8
GPUs; only 0 and 1 have been run for real (a CPU machine, one H100): the 2+ rows are what this decision says, checked
by tests, not seen on a machine. ``notebooks/03_dataparallel.ipynb`` describes the same rows in its
text.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..core.arguments import whole_number
from ..core.tables import Table, TableView

__all__ = ["DataParallelDevices", "dataparallel_devices", "dataparallel_table", "chunk_sizes"]


def chunk_sizes(batch: int, devices: int) -> tuple[int, ...]:
    """How DataParallel cuts ``batch`` rows for ``devices`` devices: ``Tensor.chunk``'s sizes, as torch's scatter
    makes them (every chunk ``ceil(batch / devices)`` rows but the last; fewer chunks when the batch is small)."""
    batch = whole_number(batch, "batch", minimum=1, example="chunk_sizes(64, 2)")
    devices = whole_number(devices, "devices", minimum=1, example="chunk_sizes(64, 2)")
    size = -(-batch // devices)
    return (size,) * (batch // size) + ((batch % size,) if batch % size else ())


@dataclass(frozen=True)
class DataParallelDevices(TableView):
    """DataParallel's devices for ``gpu_count`` GPUs: what to pass as ``device_ids`` and where everything goes."""

    gpu_count: int
    device_ids: tuple[int, ...]  # what to pass to DataParallel: () where there is no GPU (it would keep none anyway)

    @property
    def active(self) -> bool:
        """False on a machine without GPUs: DataParallel then only calls the model (a pass-through)."""
        return bool(self.device_ids)

    @property
    def splits(self) -> bool:
        """True when a batch is cut over two or more GPUs."""
        return len(self.device_ids) >= 2

    @property
    def model_device(self) -> str:
        """Where the model must be before the first forward: ``device_ids[0]``, or the CPU without GPUs."""
        return f"cuda:{self.device_ids[0]}" if self.device_ids else "cpu"

    @property
    def output_device(self) -> str:
        """Where the outputs come back (DataParallel's default ``output_device``), so where the labels must be."""
        return self.model_device

    def batch_goes(self, batch: int) -> tuple[tuple[str, int], ...]:
        """``(device, rows)`` for each chunk of a ``batch``: where each replica's share of it runs."""
        if not self.device_ids:
            return (("cpu", whole_number(batch, "batch", minimum=1, example="batch_goes(64)")),)
        sizes = chunk_sizes(batch, len(self.device_ids))
        return tuple((f"cuda:{i}", n) for i, n in zip(self.device_ids, sizes))

    def what_happens(self) -> str:
        """DataParallel's behaviour with these devices, in a phrase."""
        if not self.active:
            return "pass-through: the model's own forward"
        if not self.splits:
            return "no split: the model itself runs the batch, no replica"
        return "split: a replica per GPU, outputs gathered"

    def row(self, batch: int) -> list[object]:
        """This decision as a row of ``HEADERS``, for one ``batch`` of images."""
        chunks = self.batch_goes(batch)
        if len(chunks) > 2 and len({n for _, n in chunks}) == 1:  # eight equal chunks: one phrase
            goes = f"{chunks[0][1]} → each of {chunks[0][0]}…{chunks[-1][0]}"
        else:
            goes = ", ".join(f"{n} → {d}" for d, n in chunks)
        return [
            self.gpu_count,
            list(self.device_ids),
            self.model_device,
            goes,
            self.output_device,
            self.what_happens(),
            SEEN.get(self.gpu_count, "no: decided, tested"),
        ]

    def table(self) -> Table:
        """The decision as one row for this GPU count: ``device_ids``, where the model, inputs, labels and outputs
        go."""
        return Table(
            HEADERS,
            [self.row(64 * max(1, len(self.device_ids)))],
            title=f"DataParallel's devices with {self.gpu_count} CUDA GPU(s), 64 images per GPU",
        )


HEADERS = [
    "GPUs",
    "device_ids",
    "model on",
    "the batch goes",
    "outputs, labels on",
    "what DataParallel does",
    "seen on a machine?",
]
# The GPU counts the course has run DataParallel on. A run on 2+ GPUs adds its row, citing its evidence file.
SEEN = {0: "yes: CPU runs", 1: "partly: one H100, 2026-11-26 (the model moved to cuda:0)"}


def dataparallel_table(
    gpu_counts: Sequence[int] = (0, 1, 2, 8),
    *,
    batch: int | None = None,
    batch_per_gpu: int = 64,
    at_most: int | None = None,
) -> Table:
    """The decision for several GPU counts side by side, each row saying whether a machine has shown it: for one
    ``batch`` of images on every machine, or ``batch_per_gpu`` images per GPU (the article's recipe)."""
    plans = [dataparallel_devices(n, at_most=at_most) for n in gpu_counts]
    if batch is not None:
        batch = whole_number(batch, "batch", minimum=1, example="batch=6")
    rows = [p.row(batch if batch is not None else batch_per_gpu * max(1, len(p.device_ids))) for p in plans]
    size = f"a batch of {batch}" if batch is not None else f"{batch_per_gpu} images per GPU"
    return Table(
        HEADERS,
        rows,
        title=f"DataParallel's devices by GPU count, {size}",
        notes=[
            "The rows for 2+ GPUs are what dataparallel_devices decides, checked by its tests; the course "
            "has run only on machines with no GPU or one."
        ],
    )


def dataparallel_devices(gpu_count: int, *, at_most: int | None = None) -> DataParallelDevices:
    """DataParallel's devices on a machine with ``gpu_count`` CUDA GPUs (``gpulab.cuda_gpu_count()``): none on 0,
    ``[0]`` on 1, every GPU (or the first ``at_most``) on 2 or more. Never an index the machine lacks."""
    gpu_count = whole_number(gpu_count, "gpu_count", minimum=0, example="dataparallel_devices(gpulab.cuda_gpu_count())")
    if at_most is not None:
        at_most = whole_number(at_most, "at_most", minimum=1, example="at_most=2 for at most two GPUs")
    used = gpu_count if at_most is None else min(gpu_count, at_most)
    return DataParallelDevices(gpu_count, tuple(range(used)))
