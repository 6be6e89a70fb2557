"""What gpulab's kernel provisioner adds to a kernel start: a plain ipykernel against one holding a free GPU.

    .venv/bin/python benchmarks/bench_kernel_start.py [--rounds 7]

Each round starts (and shuts down) one kernel of each kind with jupyter_client's ``AsyncKernelManager``, taking
turns, on a described server with 8 free GPUs (``idle-8``) and a scratch lock directory: a plain ``python3``-like
kernelspec, and gpulab's 1-GPU kernelspec, whose start first runs ``gpulab.server.reservation_start`` (reserve, set the
environment, exec). Two times per kind: ``start_kernel`` returning (the process is running, holding its reservation),
and the kernel answering (``wait_for_ready``), which is what a student waits for. Prints the medians and their ratios.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gpulab.server.kernelspec import install_kernelspec  # noqa: E402


async def _one(name: str) -> tuple[float, float]:
    from jupyter_client import AsyncKernelManager

    km = AsyncKernelManager(kernel_name=name)
    t0 = time.perf_counter()
    await km.start_kernel(stderr=subprocess.DEVNULL)
    started = time.perf_counter() - t0
    kc = km.client()
    kc.start_channels()
    await kc.wait_for_ready(timeout=120)
    ready = time.perf_counter() - t0
    kc.stop_channels()
    await km.shutdown_kernel(now=True)
    return started, ready


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="gpulab-bench-kernels-"))
    os.environ.update(
        JUPYTER_PATH=str(tmp / "share" / "jupyter"),
        GPULAB_SIMULATE_GPUS="idle-8",
        GPULAB_RESERVATIONS_DIR=str(tmp / "locks"),
    )
    install_kernelspec(1, prefix=str(tmp))
    plain = tmp / "share" / "jupyter" / "kernels" / "plain"
    plain.mkdir(parents=True)
    (plain / "kernel.json").write_text(
        json.dumps(
            {
                "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
                "display_name": "plain",
                "language": "python",
            }
        )
    )
    times: dict[str, list[tuple[float, float]]] = {"plain": [], "gpulab-1-gpu": []}
    for _ in range(args.rounds):
        for name in times:  # taking turns: load from other programs hits both alike
            times[name].append(asyncio.run(_one(name)))
    med = {name: (statistics.median(s for s, _ in v), statistics.median(r for _, r in v)) for name, v in times.items()}
    print(f"kernel start on a described 8-GPU server, median of {args.rounds} rounds:")
    for name, (s, r) in med.items():
        print(f"  {name:<13} start_kernel returns after {s * 1000:6.0f} ms, kernel ready after {r * 1000:6.0f} ms")
    print(f"provisioned ÷ plain, start_kernel: {med['gpulab-1-gpu'][0] / med['plain'][0]:.2f}×")
    print(f"provisioned ÷ plain, ready: {med['gpulab-1-gpu'][1] / med['plain'][1]:.2f}×")


if __name__ == "__main__":
    main()
