"""What ``import gpulab`` costs a fresh interpreter, beside a bare ``python -c pass`` started in the same run.

    .venv/bin/python benchmarks/bench_import.py [--rounds 30] [--root CHECKOUT]

The course's rule (``DESIGN.md``): ``import gpulab`` costs ≤ 10 ms, because every rank process, every kernel and every
``python -c`` a chapter starts pays it. Each round starts three interpreters, taking turns so that load from other
programs hits them alike: ``python -c pass``, ``python -c "import gpulab"``, and the same under ``-X importtime``, which
says where the time went. Prints the wall times (min and median over the rounds), their ratio and difference, and
``-X importtime``'s cumulative figure for ``gpulab`` and for each module its import loads (min over the rounds). The
gpulab imported is this checkout's, or ``--root``'s (``PYTHONPATH``), whatever the interpreter has installed: two
checkouts, measured one after the other on a quiet machine, compare a change.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

RULE_MS = 10.0


def _env(root: Path) -> dict[str, str]:
    path = os.environ.get("PYTHONPATH")
    return {**os.environ, "PYTHONPATH": str(root) + (os.pathsep + path if path else "")}


def _run(args: list[str], env: dict[str, str], **kwargs: object) -> subprocess.CompletedProcess[str]:
    """``python args`` in the checkout's root (``-c`` puts the working directory first on ``sys.path``)."""
    return subprocess.run(
        [sys.executable, *args], env=env, cwd=env["PYTHONPATH"].split(os.pathsep)[0], check=True, text=True, **kwargs
    )


def _wall(args: list[str], env: dict[str, str]) -> float:
    """Seconds from starting ``python args`` to its exit."""
    t0 = time.perf_counter()
    _run(args, env, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t0


def _importtime(env: dict[str, str]) -> dict[str, tuple[int, int]]:
    """``-X importtime``'s (depth, cumulative µs) for each module ``import gpulab`` loads, and for ``gpulab``."""
    out = _run(["-X", "importtime", "-c", "import gpulab"], env, capture_output=True).stderr.splitlines()
    rows = []
    for line in out:
        if not line.startswith("import time:") or "|" not in line or "self [us]" in line:
            continue
        _, cumulative, name = line.removeprefix("import time:").split("|")
        rows.append((name.rstrip(), int(cumulative)))
    # gpulab's line comes after the modules it loaded (importtime prints a module once its import ends), deeper indented
    top = max(i for i, (name, _) in enumerate(rows) if name.strip() == "gpulab")
    found = {"gpulab": (0, rows[top][1])}
    for name, cumulative in reversed(rows[:top]):
        depth = (len(name) - len(name.lstrip()) - 1) // 2  # one space after the bar, then two per level
        if depth == 0:
            break  # a module imported before gpulab started
        found[name.strip()] = (depth, cumulative)
    return found


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:6.1f} ms"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument(
        "--root",
        type=Path,
        default=Path(__file__).resolve().parents[1],
        help="the checkout whose gpulab is imported (default: this one)",
    )
    args = parser.parse_args()
    env = _env(args.root.resolve())
    _wall(["-c", "import gpulab"], env)  # once before timing: the first run may write gpulab's .pyc files
    where = _run(["-c", "import gpulab; print(gpulab.__file__)"], env, capture_output=True).stdout.strip()
    bare: list[float] = []
    gpulab: list[float] = []
    cumulative: dict[str, list[int]] = {}
    depth: dict[str, int] = {}
    for _ in range(args.rounds):
        bare.append(_wall(["-c", "pass"], env))
        gpulab.append(_wall(["-c", "import gpulab"], env))
        for name, (d, us) in _importtime(env).items():
            cumulative.setdefault(name, []).append(us)
            depth[name] = d
    diff = [g - b for b, g in zip(bare, gpulab)]
    print(f"{sys.executable} (Python {sys.version.split()[0]}), {where}, {args.rounds} rounds, taking turns")
    print(f"  python -c pass                {_ms(min(bare))} min {_ms(statistics.median(bare))} median")
    print(f"  python -c 'import gpulab'     {_ms(min(gpulab))} min {_ms(statistics.median(gpulab))} median")
    print(
        f"  import gpulab ÷ bare          {min(gpulab) / min(bare):6.2f}×    min "
        f"{statistics.median(gpulab) / statistics.median(bare):6.2f}×    median"
    )
    print(
        f"  import gpulab − bare          {_ms(min(gpulab) - min(bare))} min {_ms(statistics.median(diff))} median "
        "(of each round's difference)"
    )
    print("-X importtime, cumulative, min over the rounds (what import gpulab loads, as it nests; 0.1 ms or more):")
    for name, times in cumulative.items():  # each parent before what it loaded
        if min(times) >= 100:
            print(f"  {'  ' * depth[name]}{name:<{44 - 2 * depth[name]}} {min(times) / 1000:6.2f} ms")
    median = statistics.median(diff) * 1000
    print(
        f"the course's rule, import gpulab ≤ {RULE_MS:.0f} ms: {'met' if median <= RULE_MS else 'NOT met'} "
        f"({median:.1f} ms, the median difference)"
    )


if __name__ == "__main__":
    main()
