"""DDP on 2 ranks against 1 rank (and one process with every core as a thread) on the chapters' digits model.

    .venv/bin/python benchmarks/bench_ddp_ranks.py [--rounds 3] [--epochs 3] [--batch 32 128]

Each round measures every setup once, in turns, so that load from other programs hits all alike; the table shows the
median samples/s over rounds and the ratio 2 ranks ÷ 1 rank per batch size (one core per rank). The load average
before and after is printed: on a 2-core machine, any other busy program takes a core from one of the 2 ranks, and
since ranks wait for each other at every step, the pair then runs at the pace of the slower one.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gpulab.core.tables import text_table  # noqa: E402
from gpulab.core.units import format_rate  # noqa: E402
from gpulab.ranks.speed import rank_speedup  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--epochs", type=int, default=3, help="timed epochs per measurement (after one untimed)")
    parser.add_argument("--batch", type=int, nargs="+", default=[32, 128], help="images per rank and step")
    args = parser.parse_args()
    load_before = os.getloadavg()
    runs = [rank_speedup(args.batch, epochs=args.epochs) for _ in range(args.rounds)]
    load_after = os.getloadavg()
    rows, first = [], runs[0]
    for i, row in enumerate(first.rows):
        rates = [run.rows[i].samples_per_s for run in runs]
        rows.append(
            [
                row.setup,
                row.world_size,
                row.threads_per_rank,
                row.batch_per_rank,
                format_rate(statistics.median(rates), "samples"),
                " ".join(f"{r:.0f}" for r in rates),
            ]
        )
    print(text_table(["setup", "ranks", "threads each", "batch per rank", "median speed", "each round"], rows))
    for b in args.batch:
        ratios = [run.ratio(b) for run in runs]
        print(
            f"batch {b} per rank: 2 ranks ÷ 1 rank = {statistics.median(ratios):.2f}× (rounds: "
            f"{', '.join(f'{r:.2f}' for r in ratios)})"
        )
    print(f"{first.cores} usable cores; load average (1 min) {load_before[0]:.2f} before, {load_after[0]:.2f} after")


if __name__ == "__main__":
    main()
