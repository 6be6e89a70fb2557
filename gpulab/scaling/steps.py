"""A DDP step taken apart on real ranks: compute, all-reduce and its exposed part, measured in the rank (a probe).

Run inside ranks started by ``gpulab.launch`` (or torchrun), ``time_plans`` trains a stack of ``Linear(width,
width)`` layers for a few steps under each ``StepPlan`` and times every step four ways:

- **all-reduce**: a DDP communication hook starts each bucket's all-reduce and notes the time; a callback on its
  future notes when the reduced gradients arrived (so it includes waiting for the other rank to get there). Part of
  it may run while the backward pass still computes (overlap);
- **exposed**: the part of those all-reduce spans that lies after the last gradient was computed (a
  post-accumulate-grad hook on every parameter): the all-reduce the backward pass did not hide, never more than the
  all-reduce (``cost.StepCost.exposed_s`` predicts it);
- **tail**: from the last gradient until ``backward()`` returned: the exposed all-reduce, plus what DDP does around
  it once the gradients are computed (launching the last bucket, waiting for the other rank, copying the sums back
  into ``.grad``). It is what the step on several ranks spends beyond its compute;
- **compute**: the rest of the step (forward, backward up to the last gradient, optimiser step).

compute + tail = the step, exposed ≤ all-reduce and exposed ≤ tail. Nothing is estimated. On a GPU the hooks see
when work was *queued*, not done, so there only the step time (synchronised) is meaningful. Taught in
``notebooks/07_scaling.ipynb``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import Any

from ..core.arguments import whole_number

__all__ = ["StepPlan", "StepSplit", "time_plans", "own_work_seconds", "allreduce_seconds", "matmul_seconds"]


@dataclass(frozen=True)
class StepPlan:
    """What one measurement trains: the model's size, the batch per rank, and how many steps (DDP's defaults)."""

    width: int
    batch: int
    depth: int = 3
    steps: int = 6

    def __post_init__(self) -> None:
        for name in ("width", "batch", "depth", "steps"):
            value = getattr(self, name)
            whole_number(value, f"StepPlan.{name}", minimum=1, example="StepPlan(width=64, batch=8)")

    def but(self, **changes: Any) -> StepPlan:
        """This plan with ``changes`` (``plan.but(batch=64)``), validated again."""
        return replace(self, **changes)


@dataclass(frozen=True)
class StepSplit:
    """The fastest timed step of one plan on ``world_size`` ranks (as long as its slowest rank; rank 0's split of
    it)."""

    plan: StepPlan
    world_size: int
    threads_per_rank: int
    step_s: float
    compute_s: float
    allreduce_s: float
    exposed_s: float
    tail_s: float = 0.0  # last gradient → end of backward(): exposed all-reduce + DDP's own work around it

    @property
    def samples_per_s(self) -> float:
        """Samples per second over all ranks at this step time."""
        return self.world_size * self.plan.batch / self.step_s


def _union_s(spans: list[tuple[float, float]]) -> float:
    total, end = 0.0, float("-inf")
    for a, b in sorted(spans):
        if b > end:
            total += b - max(a, end)
            end = b
    return total


def _model(plan: StepPlan, device: str) -> Any:
    import torch

    torch.manual_seed(0)
    layers: list[Any] = []
    for _ in range(plan.depth):
        layers += [torch.nn.Linear(plan.width, plan.width), torch.nn.ReLU()]
    return torch.nn.Sequential(*layers[:-1]).to(device)


def _clipped_s(spans: list[tuple[float, float]], after: float) -> float:
    """The time the spans cover after ``after``."""
    return _union_s([(max(a, after), b) for a, b in spans if b > after])


def _one_plan(plan: StepPlan, device: str, ddp: bool = True) -> list[tuple[float, float, float, float, float]]:
    """(step, compute, all-reduce, exposed, tail) seconds of each timed step of ``plan`` in this rank. ``ddp=False``
    in a process group: no DDP, every step started after a barrier (independent processes computing at the same
    time)."""
    import torch
    import torch.distributed as dist

    grouped = dist.is_initialized()
    ddp = ddp and grouped
    world_size = dist.get_world_size() if ddp else 1
    model = _model(plan, device)
    last_grad = [0.0]
    for p in model.parameters():
        p.register_post_accumulate_grad_hook(lambda _p: last_grad.__setitem__(0, time.perf_counter()))
    spans: list[tuple[float, float]] = []
    if ddp:
        ids = [torch.device(device).index or 0] if device.startswith("cuda") else None
        model = torch.nn.parallel.DistributedDataParallel(model, device_ids=ids)

        def timed_allreduce(_state, bucket):  # no annotations: DDP checks them against its own types
            start = time.perf_counter()
            buffer = bucket.buffer().div_(world_size)
            future = dist.all_reduce(buffer, async_op=True).get_future()

            def arrived(f):
                spans.append((start, time.perf_counter()))
                return f.value()[0]

            return future.then(arrived)

        model.register_comm_hook(None, timed_allreduce)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    x = torch.randn(plan.batch, plan.width, device=device)
    sync = torch.cuda.synchronize if device.startswith("cuda") else (lambda: None)
    records = []
    for step in range(plan.steps + 2):  # two untimed steps first
        if grouped and (step == 2 or not ddp):
            dist.barrier()
        spans.clear()
        sync()
        t0 = time.perf_counter()
        model(x).square().mean().backward()
        tail = time.perf_counter() - last_grad[0]
        exposed = _clipped_s(spans, last_grad[0])
        opt.step()
        opt.zero_grad(set_to_none=True)
        sync()
        step_s = time.perf_counter() - t0
        if step >= 2:
            records.append((step_s, step_s - tail, _union_s(spans), exposed, tail))
    return records


def time_plans(plans: list[StepPlan], device: str = "cpu") -> list[list[tuple[float, float, float, float, float]]]:
    """In a rank: every plan's timed steps (see the module's docstring). Without a process group: no DDP at all."""
    return [_one_plan(p, device) for p in plans]


def own_work_seconds(plans: list[StepPlan]) -> list[list[float]]:
    """In a process: every plan's timed steps trained on the CPU without DDP (no all-reduce). With a process group,
    each step starts after a barrier, so that independent processes really do the same work at the same time: the
    ceiling of ``probes.machine_ceiling(plan)``."""
    return [[r[0] for r in _one_plan(p, "cpu", ddp=False)] for p in plans]


def summarise(
    plans: list[StepPlan], per_rank: list[list[list[tuple[float, ...]]]], threads_per_rank: int
) -> list[StepSplit]:
    """The fastest timed step of each plan: a step is as long as its slowest rank's; the split is rank 0's in that
    step. The fastest, not the median: on a shared machine other programs only ever make a step slower, so the fastest
    step is the one they disturbed least (``timeit`` reports its minimum for the same reason)."""
    out = []
    for i, plan in enumerate(plans):
        ranks = [r[i] for r in per_rank]
        steps = [max(r[k][0] for r in ranks) for k in range(len(ranks[0]))]
        k = min(range(len(steps)), key=steps.__getitem__)
        _, compute, reduce, exposed, tail = ranks[0][k]
        out.append(StepSplit(plan, len(per_rank), threads_per_rank, steps[k], compute, reduce, exposed, tail))
    return out


def allreduce_seconds(sizes_bytes: list[int], repeats: int = 7, device: str = "cpu") -> list[float]:
    """In a rank: the fastest of ``repeats`` all-reduces of float32 tensors of each size (after one untimed), on
    ``device`` (``"cuda:k"``: the GPU is synchronised before and after each, so the time is the transfer's)."""
    import torch
    import torch.distributed as dist

    sync = torch.cuda.synchronize if device.startswith("cuda") else (lambda: None)
    out = []
    for size in sizes_bytes:
        t = torch.ones(max(1, size // 4), device=device)
        times = []
        for k in range(repeats + 1):
            sync()
            dist.barrier()
            t0 = time.perf_counter()
            dist.all_reduce(t)
            sync()
            if k:
                times.append(time.perf_counter() - t0)
        out.append(min(times))
    return out


def matmul_seconds(n: int = 512, chunks: int = 8, per_chunk: int = 5) -> list[float]:
    """In a process: seconds of each chunk of ``per_chunk`` float32 ``n``×``n`` matmuls (one untimed first) — the
    machine ceiling's work. With a process group, every chunk starts after a barrier, so that the processes really
    compute at the same time."""
    import torch
    import torch.distributed as dist

    a, b = torch.randn(n, n), torch.randn(n, n)
    a @ b
    out = []
    for _ in range(chunks):
        if dist.is_initialized():
            dist.barrier()
        t0 = time.perf_counter()
        for _ in range(per_chunk):
            a @ b
        out.append(time.perf_counter() - t0)
    return out
