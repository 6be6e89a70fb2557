"""Training speed in samples per second against batch size: one device, ``torch.nn.DataParallel`` over GPUs, and
the by-hand steps of ``gpulab.dataparallel.by_hand`` (on CPU threads where there are no GPUs).

One *step* is what a training loop does per batch: clear the gradients, forward, cross-entropy, backward, an SGD
update. Every step ends by waiting for every device it used, so the host clock measures the work itself; each
setup is timed with ``gpulab.measure.timing.benchmark`` (warm-up, repeats, median). DataParallel is fed
``batch × GPUs`` images per step, as the fourth article does, so each GPU sees the same ``batch`` as the single
device.
Taught in ``notebooks/03_dataparallel.ipynb``; ``benchmarks/bench_dataparallel.py`` prints the ratios side by side.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch

from ..core.arguments import whole_numbers
from ..core.tables import Table, TableView
from ..core.units import format_rate, format_seconds
from ..core.verdicts import rises_verdict
from ..measure.timing import benchmark

__all__ = ["ThroughputRow", "Throughput", "training_throughput", "SETUPS"]

SETUPS = ("one device", "DataParallel", "by hand")


@dataclass(frozen=True)
class ThroughputRow:
    """One setup timed at one batch per device: its devices and median step, and samples per second."""

    setup: str  # "one device", "DataParallel" or "by hand"
    devices: tuple[str, ...]
    batch_per_device: int
    step_s: float  # median seconds per training step
    samples_per_s: float  # batch_per_device × devices / step_s


@dataclass(frozen=True)
class Throughput(TableView):
    """Training speed of one model on one device, DataParallel and by hand, at each batch size measured."""

    rows: tuple[ThroughputRow, ...]
    model: str

    def speedup(self, setup: str, batch_per_device: int) -> float:
        """``setup``'s samples/s ÷ one device's, at the same batch per device."""
        speed = {r.setup: r.samples_per_s for r in self.rows if r.batch_per_device == batch_per_device}
        if "one device" not in speed or setup not in speed:
            raise KeyError(
                f"no '{setup}' and 'one device' rows at batch {batch_per_device} per device; measured: "
                f"{sorted({(r.setup, r.batch_per_device) for r in self.rows})}"
            )
        return speed[setup] / speed["one device"]

    def table(self) -> Table:
        """Each setup's devices, batch, median step and samples/s, with the speedups over one device as notes."""
        rows = [
            [
                r.setup,
                ", ".join(r.devices),
                r.batch_per_device,
                r.batch_per_device * len(r.devices),
                format_seconds(r.step_s),
                format_rate(r.samples_per_s, "samples"),
            ]
            for r in self.rows
        ]
        notes = [
            f"batch {b} per device: {s} ÷ one device = {self.speedup(s, b):.2f}×"
            for b in sorted({r.batch_per_device for r in self.rows})
            for s in SETUPS[1:]
            if {s, "one device"} <= {r.setup for r in self.rows if r.batch_per_device == b}
        ]
        one = sorted((r.batch_per_device, r.samples_per_s) for r in self.rows if r.setup == "one device")
        if len(one) >= 2:  # the chapter's claim about this table, decided here rather than by its prose
            notes.append(
                str(
                    rises_verdict(
                        "one device trains more samples per second at a larger batch",
                        [(f"batch {b}", v) for b, v in one],
                        lambda v: format_rate(v, "samples"),
                    )
                )
            )
        return Table(
            ["setup", "devices", "batch per device", "batch per step", "step (median)", "speed"],
            rows,
            title=f"training speed, {self.model}",
            notes=notes,
        )


def _step_fn(
    setup: str, model: torch.nn.Module, devices: Sequence[torch.device], batch: int, image_shape: tuple[int, ...]
) -> Callable[[], None]:
    from .by_hand import data_parallel_step

    g = torch.Generator().manual_seed(0)
    n = batch * (len(devices) if setup != "one device" else 1)
    x, y = torch.rand(n, *image_shape, generator=g), torch.randint(0, 10, (n,), generator=g)
    x, y = x.to(devices[0]), y.to(devices[0])  # inputs on devices[0], as the article puts them
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    wrapped = torch.nn.DataParallel(model, [d.index for d in devices]) if setup == "DataParallel" else model
    cuda = sorted({d for d in devices if d.type == "cuda"}, key=str)

    def step() -> None:
        if setup == "by hand":
            data_parallel_step(model, x, y, devices)
        else:
            opt.zero_grad(set_to_none=True)
            torch.nn.functional.cross_entropy(wrapped(x), y).backward()
        opt.step()
        for d in cuda:  # note: a CPU-GPU sync point on every device used, so the host clock times the work
            torch.cuda.synchronize(d)

    return step


def training_throughput(
    make_model: Callable[[], torch.nn.Module],
    batch_sizes: Sequence[int],
    *,
    device: str = "cpu",
    parallel_devices: Sequence[str] = (),
    setups: Sequence[str] = ("one device",),
    image_shape: tuple[int, ...] = (1, 28, 28),
    repeats: int = 5,
    label: str = "",
) -> Throughput:
    """Median samples/s of a training step for each setup and batch size (per device), measured in turns.

    ``device`` runs the "one device" setup; ``parallel_devices`` (e.g. ``['cuda:0', 'cuda:1']``, or ``['cpu'] * 2``
    for "by hand") the others. ``make_model()`` builds a fresh model for each measurement.
    """
    from .by_hand import resolve_devices

    unknown = [s for s in setups if s not in SETUPS]
    if unknown or not setups:
        raise ValueError(f"setups are some of {SETUPS}; got {list(setups)!r}.")
    batch_sizes = list(
        whole_numbers(
            batch_sizes,
            "batch_sizes",
            minimum=1,
            example="[32, 128, 512]",
            empty_ok=False,
            what="images per device and step",
        )
    )
    one = resolve_devices([device])
    many = resolve_devices(parallel_devices) if set(setups) - {"one device"} else []
    if "DataParallel" in setups and many[0].type != "cuda":
        raise ValueError(
            "DataParallel runs on GPUs only: on a machine without them it calls the module as it is "
            "(device_ids becomes []), which is the 'one device' row. Use setup 'by hand' to run its "
            "steps on CPU threads."
        )
    rows = []
    for batch in batch_sizes:
        for setup in setups:
            devices = one if setup == "one device" else many
            model = make_model().to(devices[0])
            result = benchmark(
                _step_fn(setup, model, devices, batch, image_shape),
                device="cpu",
                warmup=1,
                repeats=repeats,
                number=1,
                label=f"{setup}, batch {batch}",
            )
            n = batch * len(devices)
            rows.append(ThroughputRow(setup, tuple(map(str, devices)), batch, result.median_s, n / result.median_s))
    return Throughput(tuple(rows), label or type(make_model()).__name__)
