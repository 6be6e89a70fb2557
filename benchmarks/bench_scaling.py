"""When do 2 gloo ranks pay on this machine? The scaling sweep, the cost model's error per point, and the best 2-rank
speed-up against the machine's own ceiling, all measured in one run.

    .venv/bin/python benchmarks/bench_scaling.py [--rounds 3] [--tries 2] [--widths 64 256 1024]
                                                 [--batches 8 64 512 2048]

Each round measures, in turn, the machine ceiling (2 independent single-threaded processes doing the same 512×512
matmuls ÷ 1 process), the cost model's inputs — gloo's link (bare all-reduces, the fastest over ``--tries`` launches:
as many fresh process groups as each point's 2-rank step gets) and what 2 DDP ranks pay to meet at each step (a tiny
model) — and then the sweep: each point on 1 rank, its own ceiling (its work on independent processes, no DDP), and
2 ranks, one right after the other, so that load from other programs hits all three alike; ``--tries`` times, keeping
the least disturbed of each. Whole seconds can run slow on a shared machine; with one try per point, its 1-rank step
and its 2-rank step could fall on either side of such a stretch.

"best" is the heavy end, the point with the most work per step (width 1024, batch 2048 per rank by default: compute
dominates a 12.6 MB all-reduce there), the one that should come closest to the ceiling; the benchmark prints how much
of its 2-rank step the all-reduce still takes. (The highest median of any point would reward noise: on a busy machine
a light point's 1-rank run, slowed by other programs more than its 2-rank run, can show a ratio above the ceiling
itself.) On a 2-core machine any other busy program takes a core from one rank, and the pair then runs at the slower
one's pace: the load average is printed. The last two lines are medians over the rounds, for scripts.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gpulab.core.tables import text_table  # noqa: E402
from gpulab.scaling.probes import ddp_sync_s, gloo_link, machine_ceiling  # noqa: E402
from gpulab.scaling.published import SETUPS, predicted_speedups  # noqa: E402
from gpulab.scaling.sweep import scaling_sweep  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--widths", type=int, nargs="+", default=[64, 256, 1024])
    parser.add_argument("--batches", type=int, nargs="+", default=[8, 64, 512, 2048])
    parser.add_argument(
        "--steps",
        type=int,
        default=8,
        help="the fewest timed steps per point (after 2 untimed); light points get up to 200",
    )
    parser.add_argument(
        "--tries",
        type=int,
        default=2,
        help="times each point's 1-rank step, ceiling and 2-rank step are measured in turn; the least "
        "disturbed of each counts",
    )
    parser.add_argument("--ceiling-chunks", type=int, default=20, help="chunks of 5 512×512 matmuls for the ceiling")
    args = parser.parse_args()
    if args.rounds < 3:
        parser.error("--rounds must be at least 3: the last two lines are medians over at least 3 rounds")
    t0, load_before = time.perf_counter(), os.getloadavg()
    ceilings, sweeps = [], []
    for r in range(args.rounds):
        ceilings.append(machine_ceiling(chunks=args.ceiling_chunks).speedup)
        link = gloo_link(launches=args.tries)
        sync = ddp_sync_s(link)
        sweeps.append(
            scaling_sweep(args.widths, args.batches, steps=args.steps, link=link, sync_s=sync, tries=args.tries)
        )
        print(
            f"round {r + 1}: machine ceiling {ceilings[-1]:.2f}×, gloo {link.bandwidth_bytes_per_s / 1e9:.2f} GB/s "
            f"and {link.latency_s * 1e6:.0f} µs per message, meeting {sync}; load "
            f"{os.getloadavg()[0]:.2f}",
            flush=True,
        )
    print(f"\nlast round's sweep (ms: the fastest of each point's steps, at least {args.steps}):\n{sweeps[-1]}\n")
    points = [(p.one.plan.width, p.one.plan.batch) for p in sweeps[0].points]
    rows, medians, unsteady = [], [], 0
    for i, p in enumerate(sweeps[0].points):
        measured = [s.points[i].measured for s in sweeps]
        medians.append(statistics.median(measured))
        unsteady += any(abs(m / medians[-1] - 1) > 0.15 for m in measured)
        errors = [s.points[i].error * 100 for s in sweeps]
        rows.append(
            [
                p.one.plan.width,
                p.one.plan.batch,
                f"{medians[-1]:.2f}×",
                " ".join(f"{m:.2f}" for m in measured),
                " ".join(f"{e:+.0f}" for e in errors),
            ]
        )
    print(text_table(["width", "batch/rank", "median speed-up", "each round", "model error % each round"], rows))
    worst = max(abs(s.points[i].error) for s in sweeps for i in range(len(points)))
    within = sum(abs(s.points[i].error) <= 0.15 for s in sweeps for i in range(len(points)))
    print(
        f"model error: {within} of {len(points) * len(sweeps)} predictions within 15 %, worst {worst * 100:.0f} %; "
        f"median error per point within 15 %: "
        f"{sum(abs(statistics.median(s.points[i].error for s in sweeps)) <= 0.15 for i in range(len(points)))} "
        f"of {len(points)}"
    )
    print(
        f"the measurement itself: at {unsteady} of {len(points)} points a round's measured speed-up is more than "
        f"15 % from the point's median"
    )
    print("\nthe same sweep predicted for GPU setups (predictions from published peak figures, not measurements):")
    for setup in SETUPS:
        print(f"  {setup.label()}")
        print(
            "    "
            + ", ".join(
                f"w{w}/b{b}: {s:.2f}×" for (w, b), s in zip(points, predicted_speedups(setup, points, sweeps[0].depth))
            )
        )
    ceiling = statistics.median(ceilings)
    k = max(range(len(points)), key=lambda i: points[i][0] ** 2 * points[i][1])  # the most FLOPs per step
    print(
        f"\nbest point (the heavy end): width {points[k][0]}, batch {points[k][1]} per rank; {args.rounds} rounds "
        f"in "
        f"{time.perf_counter() - t0:.0f} s; load average (1 min) {load_before[0]:.2f} before, "
        f"{os.getloadavg()[0]:.2f} after; ceiling each round: {', '.join(f'{x:.2f}' for x in ceilings)}"
    )
    heavy = [s.points[k].two for s in sweeps]
    print(
        "all-reduce at the best point, in % of its 2-rank step each round: "
        + ", ".join(f"{t.allreduce_s / t.step_s * 100:.0f} (exposed {t.exposed_s / t.step_s * 100:.0f})" for t in heavy)
    )
    print(f"machine ceiling (2 independent processes ÷ 1): {ceiling:.2f}×")
    print(f"best 2 ranks ÷ 1 rank: {medians[k]:.2f}× ({medians[k] / ceiling * 100:.0f} % of the ceiling)")


if __name__ == "__main__":
    main()
