"""The hang watchdog's cost: what it adds to a launch that works, and how soon it reports a hang.

    .venv/bin/python benchmarks/bench_watchdog.py [--repeats 7] [--steps 200] [--timeout 3] [--hangs 3]

1. Overhead: the same 2-rank gloo launch (each rank: ``--steps`` all-reduces of a 1000-float tensor with a small matmul
   between them) with ``watchdog=True`` and ``watchdog=False``, alternated in one process after a warm-up launch;
   medians side by side and their ratio (goal: ≤ 1.01, i.e. ≤ 1 %).
2. Time to the report: rank 0 calls ``all_reduce`` that rank 1 never joins, with ``timeout_s=--timeout``. Rank 0
   writes the time it entered the collective; the timeout fires ``--timeout`` seconds later; the report is there when
   ``launch`` raises ``RankFailed``. Printed: the median of (raise − firing) with the watchdog, and without it (what
   the launcher alone takes to stop the ranks and raise), goal ≤ 2 s with the watchdog.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

from gpulab.ranks.failures import RankFailed  # noqa: E402
from gpulab.ranks.launcher import launch  # noqa: E402


def work(steps: int) -> int:
    x = torch.ones(1000)
    m = torch.randn(64, 64)
    for _ in range(steps):
        m = torch.tanh(m @ m)
        dist.all_reduce(x)
    return steps


def hang(stamp_dir: str) -> None:
    if dist.get_rank() == 0:
        with open(os.path.join(stamp_dir, "entered"), "w") as f:
            f.write(repr(time.time()))
        dist.all_reduce(torch.ones(2))
    else:
        time.sleep(120)


def overhead(repeats: int, steps: int) -> tuple[float, float]:
    launch(work, 2, args=(steps,))  # warm-up: the fork server's import of torch is not part of either
    with_w, without = [], []
    for i in range(repeats):
        for on in (True, False) if i % 2 == 0 else (False, True):
            t0 = time.perf_counter()
            launch(work, 2, args=(steps,), watchdog=on)
            (with_w if on else without).append(time.perf_counter() - t0)
    return statistics.median(with_w), statistics.median(without)


def time_to_report(timeout_s: float, hangs: int, watchdog: bool) -> tuple[float, bool]:
    delays, named = [], True
    for _ in range(hangs):
        with tempfile.TemporaryDirectory() as d:
            try:
                launch(hang, 2, args=(d,), timeout_s=timeout_s, watchdog=watchdog)
            except RankFailed as exc:
                raised = time.time()
                text = str(exc)
            else:
                raise SystemExit("the hang did not fail: nothing to measure")
            fired = float(Path(d, "entered").read_text()) + timeout_s
            delays.append(raised - fired)
            named = named and ("rank 1 is in" in text and "never called all_reduce" in text) == watchdog
    return statistics.median(delays), named


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeats", type=int, default=7)
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--timeout", type=float, default=3.0)
    p.add_argument("--hangs", type=int, default=3)
    a = p.parse_args()
    on, off = overhead(a.repeats, a.steps)
    print(
        f"launch, 2 ranks, {a.steps} all-reduces: with watchdog {on:.3f} s, without {off:.3f} s "
        f"(median of {a.repeats} each, alternated)"
    )
    print(f"watchdog overhead ratio (with / without): {on / off:.4f}  (goal ≤ 1.01)")
    late_on, named_on = time_to_report(a.timeout, a.hangs, True)
    late_off, _ = time_to_report(a.timeout, a.hangs, False)
    print(
        f"collective timeout fired -> RankFailed with the report: {late_on:.2f} s (median of {a.hangs}; goal ≤ 2 s; "
        f"report names rank 1 and all_reduce: {named_on})"
    )
    print(f"collective timeout fired -> RankFailed without the watchdog: {late_off:.2f} s (the launcher alone)")


if __name__ == "__main__":
    main()
