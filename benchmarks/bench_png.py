"""The live monitor's PNG writer against Pillow, on a real monitor figure, rounds interleaved.

    .venv/bin/python benchmarks/bench_png.py

Prints each encoder's median time and size per frame and the ratio Pillow ÷ ours, measured side by side in one run.
"""

from __future__ import annotations

import io
import statistics
import time

import matplotlib

matplotlib.use("Agg")
import numpy as np  # noqa: E402
from PIL import Image  # noqa: E402

from gpulab.core.settings import full_or_fast  # noqa: E402
from gpulab.machine.simulated import SimulatedGpuReader  # noqa: E402
from gpulab.monitoring.live_monitor import Monitor  # noqa: E402
from gpulab.monitoring.png import encode_png  # noqa: E402


def frame() -> np.ndarray:
    """A real monitor figure (two described GPUs, host and speed panels) rendered to RGBA."""
    with Monitor("png", machine=SimulatedGpuReader("kaggle-2xT4"), show=False) as mon:
        for _ in range(50):
            mon.step(samples=32)
            time.sleep(0.02)
    fig = mon.figure()
    fig.canvas.draw()
    return np.asarray(fig.canvas.buffer_rgba())


def main() -> None:
    rgba = frame()

    def pillow(level: int) -> bytes:
        out = io.BytesIO()
        Image.fromarray(rgba).save(out, format="PNG", compress_level=level)
        return out.getvalue()

    arms = {
        "gpulab encode_png": lambda: encode_png(rgba),
        "Pillow compress_level=1": lambda: pillow(1),
        "Pillow compress_level=0": lambda: pillow(0),
    }
    times: dict[str, list[float]] = {k: [] for k in arms}
    sizes: dict[str, int] = {}
    for f in arms.values():
        f()  # warm-up
    for r in range(full_or_fast(30, 8)):
        order = list(arms) if r % 2 == 0 else list(reversed(arms))
        for name in order:
            t0 = time.perf_counter()
            sizes[name] = len(arms[name]())
            times[name].append(time.perf_counter() - t0)
    print(f"frame {rgba.shape[1]}×{rgba.shape[0]} RGBA, {len(times['gpulab encode_png'])} interleaved rounds")
    for name in arms:
        print(f"  {name:24s} median {statistics.median(times[name]) * 1e3:6.1f} ms   {sizes[name] / 1024:7.0f} KiB")
    ratio = statistics.median(times["Pillow compress_level=1"]) / statistics.median(times["gpulab encode_png"])
    print(f"Pillow (level 1) ÷ gpulab: {ratio:.2f}")


if __name__ == "__main__":
    main()
