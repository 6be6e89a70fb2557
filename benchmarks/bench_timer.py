"""Our timer's overhead next to torch.utils.benchmark's, measured side by side in one run.

    .venv/bin/python benchmarks/bench_timer.py [--device cpu|cuda] [--rounds 5]

For each case both harnesses time the same callable, taking turns round by round so that load from other processes
hits both alike; the table shows the median over rounds of each harness's median, their ratio, and the wall-clock time
each harness spent to produce one measurement. The empty function shows each harness's floor: the time it reports for
no work at all, which is the overhead it adds to every measurement. ``number=1`` rows show the floor when every call
is bracketed by clock reads (or CUDA events), as for long operations.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402
from torch.utils import benchmark as tub  # noqa: E402

from gpulab.core.tables import text_table  # noqa: E402
from gpulab.core.units import format_seconds  # noqa: E402
from gpulab.measure.timing import benchmark  # noqa: E402


def cases(device: str) -> list[tuple[str, object, int | None]]:
    """(name, callable, number): number=None lets each harness pick its block size."""
    small = torch.randn(16, device=device)
    mid = torch.randn(256, 256, device=device)

    def empty() -> None:
        return None

    return [
        ("empty function, auto block", empty, None),
        ("empty function, 1 call per block", empty, 1),
        ("torch.add, 16 floats", lambda: torch.add(small, small), None),
        ("256×256 matmul", lambda: mid @ mid, None),
        ("256×256 matmul, 1 call per block", lambda: mid @ mid, 1),
    ]


def ours(fn: object, number: int | None, device: str) -> float:
    if number is None:  # the smallest power of two of calls whose block lasts 2 ms (capped at a million)
        number = 1
        while (
            number < 1_000_000
            and benchmark(fn, device=device, warmup=0, repeats=1, number=number).median_s * number < 2e-3
        ):
            number *= 2
    return benchmark(fn, device=device, warmup=2, repeats=15, number=number).median_s


def theirs(fn: object, number: int | None) -> float:
    timer = tub.Timer("fn()", globals={"fn": fn}, num_threads=torch.get_num_threads())
    if number is None:
        return timer.blocked_autorange(min_run_time=0.03).median
    return tub.Measurement.merge([timer.timeit(number=number) for _ in range(15)])[0].median


def timed(call: object) -> tuple[float, float]:
    t0 = time.perf_counter()
    value = call()
    return value, time.perf_counter() - t0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu", help="cpu (default) or cuda")
    parser.add_argument("--rounds", type=int, default=5, help="turns each harness takes per case (default 5)")
    args = parser.parse_args()
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        sys.exit("--device cuda asked for, but torch sees no CUDA GPU here; run with --device cpu.")
    rows = []
    for name, fn, number in cases(args.device):
        o, t, ow, tw = [], [], [], []
        for _ in range(args.rounds):
            value, wall = timed(lambda fn=fn, number=number: ours(fn, number, args.device))
            o.append(value)
            ow.append(wall)
            value, wall = timed(lambda fn=fn, number=number: theirs(fn, number))
            t.append(value)
            tw.append(wall)
        om, tm = statistics.median(o), statistics.median(t)
        rows.append(
            [
                name,
                format_seconds(om),
                format_seconds(tm),
                f"{om / tm:.2f}",
                format_seconds(statistics.median(ow)),
                format_seconds(statistics.median(tw)),
            ]
        )
    print(
        f"torch {torch.__version__}, device {args.device}, {torch.get_num_threads()} thread(s), "
        f"{args.rounds} rounds, medians over rounds"
    )
    print(
        text_table(
            ["case", "gpulab median", "torch.utils.benchmark median", "ratio", "gpulab wall", "torch wall"], rows
        )
    )


if __name__ == "__main__":
    main()
