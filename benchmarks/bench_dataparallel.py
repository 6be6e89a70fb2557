"""Samples/s of a training step: one device against DataParallel's steps, and against bigger batches, side by side.

    .venv/bin/python benchmarks/bench_dataparallel.py [--model small|article] [--rounds 5] [--batches 16,64,256]

On the CPU: one device, and the five DataParallel steps by hand on two CPU "devices" (two threads), once with
torch's default intra-op threads and once with one thread per operation (each replica thread then runs on one core,
as a replica runs on one GPU). On a machine with 2+ GPUs: one GPU, ``torch.nn.DataParallel`` over all GPUs and the
by-hand steps on them. The setups take turns round by round, so load from other processes hits all alike; the table
shows the median over rounds of each setup's median step, and the ratios to one device at the same batch per
device and to one device at the smallest batch.

Read the single-thread rows for what the machinery costs. With two OpenMP threads per operation, each replica thread
brings its own team of threads, and on a machine where other programs also run, an operation whose threads are not
all scheduled waits for them: on the course's shared 2-core machine those rows moved by more than 10× between runs,
while the single-thread rows stayed within about 30 %.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402

from gpulab.core.tables import text_table  # noqa: E402
from gpulab.core.units import format_rate  # noqa: E402
from gpulab.dataparallel.throughput import training_throughput  # noqa: E402
from gpulab.machine.cuda import cuda_gpu_count  # noqa: E402
from gpulab.workload.models import cnn  # noqa: E402


def configurations(gpus: int) -> list[tuple[str, int | None, dict]]:
    """(name, torch threads or None for the default, training_throughput arguments)."""
    if gpus >= 2:
        ids = [f"cuda:{i}" for i in range(gpus)]
        return [
            (
                "GPUs",
                None,
                {"device": "cuda:0", "parallel_devices": ids, "setups": ["one device", "DataParallel", "by hand"]},
            )
        ]
    cpu = {"device": "cpu", "parallel_devices": ["cpu", "cpu"], "setups": ["one device", "by hand"]}
    return [(f"CPU, {torch.get_num_threads()} threads per op", None, cpu), ("CPU, 1 thread per op", 1, cpu)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--model",
        choices=["small", "article"],
        default="small",
        help="small: cnn((8, 16), 64) (default); article: the article's 25.8 M-parameter CNN",
    )
    parser.add_argument("--rounds", type=int, default=5, help="turns each setup takes (default 5)")
    parser.add_argument("--repeats", type=int, default=3, help="timed steps per turn (default 3)")
    parser.add_argument("--batches", default="16,64,256", help="batch sizes per device, comma-separated")
    args = parser.parse_args()
    batches = [int(b) for b in args.batches.split(",")]
    make = cnn if args.model == "article" else (lambda: cnn((8, 16), 64))
    default_threads = torch.get_num_threads()
    gpus = cuda_gpu_count()
    configs = configurations(gpus)
    speeds: dict[tuple[str, str, int], list[float]] = {}
    for _ in range(args.rounds):
        for name, threads, kwargs in configs:
            torch.set_num_threads(threads or default_threads)
            result = training_throughput(make, batches, repeats=args.repeats, **kwargs)
            for r in result.rows:
                speeds.setdefault((name, r.setup, r.batch_per_device), []).append(r.samples_per_s)
    torch.set_num_threads(default_threads)
    rows = []
    for (name, setup, batch), values in speeds.items():
        speed = statistics.median(values)
        one = statistics.median(speeds[(name, "one device", batch)])
        smallest = statistics.median(speeds[(name, "one device", batches[0])])
        rows.append(
            [name, setup, batch, format_rate(speed, "samples"), f"{speed / one:.2f}", f"{speed / smallest:.2f}"]
        )
    print(
        f"torch {torch.__version__}, model {args.model}, {gpus} CUDA GPU(s), {args.rounds} rounds × "
        f"{args.repeats} steps, medians over rounds"
    )
    print(
        text_table(
            [
                "configuration",
                "setup",
                "batch per device",
                "speed",
                "÷ one device, same batch",
                f"÷ one device, batch {batches[0]}",
            ],
            rows,
        )
    )
    if gpus < 2:
        print(
            "Not measured here: DataParallel on GPUs (this machine has fewer than 2). The by-hand rows run the "
            "same five steps on CPU threads, which share the same cores."
        )


if __name__ == "__main__":
    main()
