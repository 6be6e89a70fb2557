"""Checkers for the exercises of notebooks/05_live_monitor.ipynb: reporting a loop's work to the monitor, reading its
records (NaN where a value could not be read), finding with torch.profiler the operation that allocates most, and an
evaluation loop that keeps no graph alive."""

from __future__ import annotations

import math
from typing import Any

from ..core.arguments import is_real_number
from ..monitoring.summary import MonitorSummary
from .feedback import Exercise, Hint, NotAnswered, WrongType, call_learner, exercise, kind

EXERCISES: dict[str, Exercise] = {}

UNDER_MONITOR = "“Watching it live: gpulab.monitor”"
PROFILER = "“Where the time and memory go: torch.profiler”"
KEEPING = "“Keeping the numbers”"
EPOCHS, BATCH = 2, 256


def expected_work() -> tuple[int, int]:
    """(steps, samples) of ``EPOCHS`` passes over the digits' training images in batches of ``BATCH``."""
    from ..workload.digits import load_digits

    data = load_digits()
    return EPOCHS * len(data.loader(batch_size=BATCH)), EPOCHS * len(data.train)


@exercise(
    EXERCISES,
    "ch05-ex1",
    "report a loop's work to the monitor",
    section=UNDER_MONITOR,
    expects="the monitor of your loop (the name after `as` in `with gpulab.monitor(...) as ...`)",
)
def _reported(answer: Any) -> str:
    # a Monitor is recognised by what it does (this module does not import the monitor's view)
    if isinstance(answer, MonitorSummary):
        summary = answer
    elif callable(getattr(answer, "summary", None)) and hasattr(answer, "running"):
        if answer.running:
            raise Hint("the monitor is still running: check it after the with block has ended.", UNDER_MONITOR)
        summary = answer.summary()
    else:
        raise WrongType(f"pass the monitor itself (or its .summary()), not {kind(answer)}.")
    if not isinstance(summary, MonitorSummary):
        raise WrongType(f"pass the monitor from `with gpulab.monitor(...) as ...`, not {kind(answer)}.")
    steps, samples = expected_work()
    labels = [label for _, label in summary.marks]
    if summary.steps_total == 0 and not labels:  # the skeleton's loop, untouched: it tells the monitor nothing
        raise NotAnswered(
            "the monitor saw no step and no mark: the loop still tells it nothing. Report each batch and mark each "
            "epoch, then run this check again.",
            UNDER_MONITOR,
        )
    if summary.steps_total == 0:
        raise Hint(
            "the monitor saw no step: the loop has to report each batch to it, and the chapter shows two ways.",
            UNDER_MONITOR,
        )
    if summary.steps_total != steps:
        raise Hint(
            f"the monitor counted {summary.steps_total} steps, not one per batch of every epoch: report each "
            f"batch once, in both epochs.",
            UNDER_MONITOR,
        )
    if summary.samples_total != samples:
        raise Hint(
            f"{summary.steps_total} steps, but {summary.samples_total} samples: a step's samples are the "
            "images in its batch, not 1.",
            UNDER_MONITOR,
        )
    if labels != [f"epoch {k}" for k in range(1, EPOCHS + 1)]:
        raise Hint(
            f"the steps are right; the marks are {labels or 'missing'}: put one mark, labelled "
            f"'epoch 1', 'epoch 2', ..., at the start of each epoch.",
            UNDER_MONITOR,
        )
    return (
        f"{steps} steps, {samples} samples ({EPOCHS} epochs of the {samples // EPOCHS} training images in batches "
        f"of {BATCH}) and a mark per epoch: the summary counts exactly what the loop reported."
    )


MiB = 2**20
NAN = math.nan
# process_rss_bytes per reading, in MiB; NaN where the reading could not be taken
RUNS: tuple[tuple[float, ...], ...] = ((NAN, 100, 300, NAN, 140), (250, NAN, 120))


def records_for(rss_mib: tuple[float, ...]) -> list[dict[str, Any]]:
    """Rows shaped like ``mon.records()`` for one run (the columns this exercise reads, and two more)."""
    return [
        {"elapsed_s": 0.2 * i, "host_cpu_percent": 50.0, "process_rss_bytes": m * MiB, "marks": ""}
        for i, m in enumerate(rss_mib)
    ]


@exercise(
    EXERCISES,
    "ch05-ex2",
    "the peak memory from the records",
    section=KEEPING,
    expects="a function peak_rss_mib(records) that returns the largest process_rss_bytes in MiB",
)
def _peak(answer: Any) -> str:
    for run in RUNS:
        result = call_learner(answer, records_for(run), name="peak_rss_mib", expects="a function peak_rss_mib(records)")
        if not is_real_number(result):
            raise WrongType(f"peak_rss_mib returned {kind(result)}: return a number (MiB).")
        readable = [m for m in run if not math.isnan(m)]
        truth = max(readable)
        if math.isnan(result):
            raise Hint(
                "the result is NaN. A reading that could not be taken is NaN, and NaN compares false with "
                "everything, so max() and np.max can return it: leave those readings out.",
                KEEPING,
            )
        if math.isclose(result, truth):
            continue
        if math.isclose(result, truth * MiB):
            raise Hint("that is in bytes: the column is process_rss_bytes; the answer is in MiB.", KEEPING)
        if math.isclose(result, truth * MiB / 1e6):
            raise Hint("that is in megabytes (10**6 bytes); a MiB is 2**20 bytes.", KEEPING)
        if math.isclose(result, sum(readable) / len(readable)):
            raise Hint("that is the mean of the readings; the peak is the largest one.", KEEPING)
        raise Hint(
            f"for readings of {', '.join('NaN' if math.isnan(m) else f'{m:g} MiB' for m in run)} your "
            "function gave another number than the largest readable one.",
            KEEPING,
        )
    return (
        "the largest readable reading, in MiB, with the NaN readings left out: the same rule the summary's peak "
        "table follows."
    )


def profiled_steps() -> dict[str, Any]:
    """Two small steps whose largest allocation comes from different operations (a matrix product, a concatenation),
    and whose time goes mostly to an in-place operation that allocates nothing (``IN_PLACE``)."""
    import torch

    gen = torch.Generator().manual_seed(0)
    x, w = torch.randn(256, 64, generator=gen), torch.randn(64, 2048, generator=gen)
    parts = [torch.randn(512, 256, generator=gen) for _ in range(4)]
    work = torch.randn(4_000_000, generator=gen)

    def busy() -> None:
        for _ in range(20):
            work.mul_(1.0)

    return {"a matrix product": lambda: (busy(), x @ w), "a concatenation": lambda: (busy(), torch.cat(parts))}


IN_PLACE = "aten::mul_"  # where profiled_steps spend their time, allocating nothing


def top_operation(step: Any, key: str) -> str:
    """The name of the operation of one ``step()`` with the largest ``key`` (a column of ``key_averages()``)."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        step()
    return max(prof.key_averages(), key=lambda e: getattr(e, key)).key


@exercise(
    EXERCISES,
    "ch05-ex3",
    "which operation allocates most?",
    section=PROFILER,
    expects="a function top_allocator(step) that returns an operation's name, such as 'aten::empty'",
)
def _top_allocator(answer: Any) -> str:
    found = []
    for what, step in profiled_steps().items():
        result = call_learner(answer, step, name="top_allocator", expects="a function top_allocator(step)")
        if not isinstance(result, str):
            raise WrongType(
                f"top_allocator returned {kind(result)}: return the operation's name, the table's Name column "
                "(an event's .key), such as 'aten::empty'.",
                PROFILER,
            )
        truth = top_operation(step, "self_cpu_memory_usage")
        if result == truth:
            found.append(f"{truth} in {what}")
            continue
        if "aten::" + result == truth:
            raise Hint(f"write the name as the profiler does, with its namespace: 'aten::{result}'.", PROFILER)
        if result == top_operation(step, "cpu_memory_usage"):
            raise Hint(
                f"in {what}, {result!r} has the largest total (CPU Mem), which includes what the operations it "
                "called allocated. Take what an operation allocated itself: self_cpu_memory_usage (Self CPU Mem).",
                PROFILER,
            )
        if result == IN_PLACE:
            raise Hint(
                f"in {what}, {result!r} is the operation that took the most time, allocating nothing. Sort by the "
                "memory an operation "
                "allocated itself: profile with profile_memory=True and read self_cpu_memory_usage.",
                PROFILER,
            )
        raise Hint(
            f"in {what} your function named {result!r}, which is not the operation that allocated most itself. "
            "Profile step() with profile_memory=True and take the largest self_cpu_memory_usage of key_averages().",
            PROFILER,
        )
    return (
        f"the largest self-allocating operation in each step: {'; '.join(found)}. The profiler counts memory an "
        "operation allocated itself apart from what the operations it called allocated."
    )


LEAK = "“A memory leak, found with torch's tools”"
LEAK_MIB = 2.0  # an evaluation that keeps each batch's graph holds tens of MiB here; a number holds none


def leak_run(evaluate: Any) -> tuple[Any, float, float]:
    """Run the learner's ``evaluate(model, loader)`` on the digits' training images under torch.profiler: what it
    returned, the MiB it allocated and had not freed while that result was still held, and the true mean loss."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    from ..workload import load_digits, mlp

    torch.manual_seed(0)
    model, loader = mlp(), load_digits().loader(batch_size=32)
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        result = evaluate(model, loader)  # held until the end of this function: what it keeps alive, stays
    held_mib = sum(e.self_cpu_memory_usage for e in prof.key_averages()) / 2**20  # allocated minus freed, in the block
    with torch.no_grad():
        truth = sum(torch.nn.functional.cross_entropy(model(x), y).item() for x, y in loader) / len(loader)
    return result, held_mib, truth


@exercise(
    EXERCISES,
    "ch05-ex4",
    "find the leak",
    section=LEAK,
    expects="a function evaluate(model, loader) that returns the mean loss as a number and keeps no graph",
)
def _no_leak(answer: Any) -> str:
    from .feedback import empty_body

    if answer is ... or empty_body(answer):
        raise NotAnswered("Write evaluate(model, loader) in the cell, then run the check again.")
    if not callable(answer):
        raise WrongType(f"evaluate should be a function (model, loader); got {kind(answer)}.")
    result, held_mib, truth = call_learner(
        leak_run, answer, name="evaluate", expects="a function evaluate(model, loader)"
    )
    if getattr(result, "grad_fn", None) is not None:
        raise Hint(
            "your evaluate returns a tensor that still carries the autograd graph, and with it every batch's "
            "activations, held as long as the result lives: keep loss.item() (a number) or loss.detach() of each "
            "batch, or evaluate under torch.no_grad().",
            LEAK,
        )
    if held_mib > LEAK_MIB:
        raise Hint(
            f"your result carries no graph, but {held_mib:.1f} MiB stayed allocated while it lived: something still "
            "holds each batch's loss or output (a list of tensors?). Keep numbers, not tensors.",
            LEAK,
        )
    value = float(result.item() if hasattr(result, "item") else result) if result is not None else math.nan
    if not is_real_number(value) or math.isnan(value) or abs(value - truth) > 1e-3 * max(1.0, abs(truth)):
        raise Hint(
            f"no leak, but your evaluate returned {result!r}, not the mean loss over the batches ({truth:.4f}): sum "
            "each batch's cross-entropy and divide by the number of batches.",
            LEAK,
        )
    return (
        f"the mean loss ({value:.4f}) with {held_mib:.2f} MiB held: a number in the running sum keeps no batch's "
        "graph alive, so nothing waits for the loop to end to be freed."
    )
