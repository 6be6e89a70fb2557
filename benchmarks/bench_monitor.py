"""What watching costs: the sampler's time per reading, its CPU share at 5 Hz, a CPU training loop with the monitor
off, on, and on with the live figure (JupyterLab), alternated in one run (targets: < 1 % of one core; < 3 % slowdown),
and the live figure's cost per frame, stage by stage.

    GPULAB_FAST=0 .venv/bin/python benchmarks/bench_monitor.py      # full; GPULAB_FAST=1 for a quick look

Readings come from this machine's GPU reader (NVML; on a machine without a driver that part is skipped, which the
output says) and, for comparison, from eight simulated GPUs (``workshop-8``), which show the sampler's own overhead
per GPU but not the driver's. Ratios are measured side by side in one process; arms run in rotating order so that drift
in a shared machine's load falls on both. A round is a training loop of several seconds with its own monitor, so the
live arm pays a monitor's start-up (a first frame drawn in full, and a few more while its limits settle) once per round,
as a cell would; section 4 shows what each kind of frame costs.
"""

from __future__ import annotations

import contextlib
import io
import statistics
import time

import numpy as np
import torch
from PIL import Image

import gpulab
from gpulab.machine.nvml import default_reader
from gpulab.machine.simulated import SimulatedGpuReader
from gpulab.measure.timing import quartiles
from gpulab.monitoring import monitor
from gpulab.monitoring.png import encode_png
from gpulab.monitoring.sampler import Sampler


def cost_per_reading(reader, n: int) -> tuple[float, int, list[str]]:
    s = Sampler(reader=reader)
    for _ in range(20):  # warm-up: first psutil and NVML calls are slower
        s.tick()
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        s.tick()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), len(s.gpus), s.missing


def cpu_share(seconds: float, interval_s: float = 0.2) -> tuple[float, float, int, float]:
    """Process CPU time per wall second while idle, without and with the sampler thread at 1/interval_s Hz, and the
    sampler thread's own CPU time per reading (cold caches: the realistic cost, unlike a tight loop's)."""

    def idle_cpu(with_sampler: bool) -> tuple[float, Sampler]:
        s = Sampler(reader=default_reader(), interval_s=interval_s)
        c0, w0 = time.process_time(), time.perf_counter()
        if with_sampler:
            s.start()
        time.sleep(seconds)
        if with_sampler:
            s.stop()
        return (time.process_time() - c0) / (time.perf_counter() - w0), s

    base, _ = idle_cpu(False)
    on, s = idle_cpu(True)
    return base, on, s.history.appended, s.busy_s / max(s.history.appended, 1)


def training_round(model, opt, data, target, steps: int, batch: int, arm: str) -> tuple[float, int, int, float]:
    """Seconds for ``steps`` steps; live arm: the frames drawn, how many of them in full, the render thread's CPU s."""
    loss_fn = torch.nn.CrossEntropyLoss()
    ctx = contextlib.nullcontext(None)
    if arm != "off":
        ctx = monitor("bench", show=False, live=(arm == "on + live redraw"))
    with contextlib.redirect_stdout(io.StringIO()), ctx as mon:  # live mode prints the widget outside Jupyter
        t0 = time.perf_counter()
        for i in range(steps):
            j = (i * batch) % (len(data) - batch)
            xb, yb = data[j : j + batch], target[j : j + batch]
            opt.zero_grad(set_to_none=True)
            loss_fn(model(xb), yb).backward()
            opt.step()
            if mon is not None:
                mon.step(samples=batch)
        seconds = time.perf_counter() - t0
    live = mon._live if mon is not None else None
    return seconds, (live.draws if live else 0), (live.figure.full_draws if live else 0), (live.cpu_s if live else 0)


def paired_ratios(arm: list[float], off: list[float]) -> tuple[float, float, float]:
    """Median, first and third quartile of arm ÷ off, round by round (paired: same round, same load)."""
    ratios = [a / b for a, b in zip(arm, off)]
    q1, median, q3 = quartiles(ratios)
    return median, q1, q3


def median_ms(f, n: int) -> float:
    """Median thread CPU time of ``f()`` in ms (CPU time: a shared machine's other work is not counted)."""
    costs = []
    for _ in range(n):
        t0 = time.thread_time()
        f()
        costs.append(time.thread_time() - t0)
    return statistics.median(costs) * 1e3


def frame_stages(n: int, reader=None, label: str = "this machine") -> None:
    with monitor("render cost", show=False, machine=reader) as mon:
        for epoch, seconds in enumerate((gpulab.full_or_fast(3.0, 1.0), gpulab.full_or_fast(1.0, 0.4))):
            mon.mark(f"epoch {epoch}")
            end = time.perf_counter() + seconds
            while time.perf_counter() < end:  # a step every 10 ms, so the speed panel has a line
                time.sleep(0.01)
                mon.step(samples=32)
    fig = mon._build_figure()
    fig.set_notes([f"not shown: {m}" for m in mon.missing])
    fig.update_from(mon.history, mon.marks, stepped=True)
    fig.draw_live()  # the first frame: drawn in full, background cached
    update = median_ms(lambda: fig.update_from(mon.history, mon.marks, stepped=True), n)
    blit = median_ms(fig.draw_live, n)
    pixels = np.asarray(fig._canvas.buffer_rgba())
    ours = median_ms(lambda: encode_png(pixels), n)
    pillow = median_ms(lambda: Image.fromarray(pixels).save(io.BytesIO(), format="png"), n)  # as print_png does

    def full_draw(new_layout: bool) -> None:
        fig._background = None  # what a new limit, mark or note does
        if new_layout:
            fig._margins = []  # what a first frame, new notes or wider tick labels do
        fig.draw_live()

    kept, laid_out = (median_ms(lambda new=new: full_draw(new), n) for new in (False, True))
    frame = update + blit + ours
    print(f"4. CPU time per live frame on {label}, by stage (median of {n}; {pixels.shape[1]}×{pixels.shape[0]} px):")
    print(f"   update lines and stepped limits        {update:6.1f} ms")
    print(f"   blit: cached background + lines, marks {blit:6.1f} ms")
    print(f"   encode PNG (unfiltered, zlib level 1)  {ours:6.1f} ms   (Pillow as print_png uses it: {pillow:.1f} ms)")
    print(f"   → a live frame                         {frame:6.1f} ms → {frame / 10:.2f} % of a core at 1 frame/s")
    print(
        f"   a frame drawn in full (new limit or mark): {update + kept + ours:.0f} ms; with a new layout (first "
        f"frame, new notes, wider tick labels): {update + laid_out + ours:.0f} ms"
    )
    t_hour = np.arange(18_000) * 0.2
    _, recorded = mon.history.snapshot()
    hour = recorded[np.arange(t_hour.size) % len(recorded)]  # the readings above, repeated for an hour at 5 Hz
    fig.update(t_hour, hour, mon.marks, stepped=True)
    fig.draw_live()  # the time axis grew: one full draw
    long = median_ms(lambda: (fig.update(t_hour, hour, mon.marks, stepped=True), fig.draw_live()), n)
    print(f"   after an hour (18,000 readings a line, cut to ~2 points per pixel column): update + blit {long:.1f} ms")
    old_kept = median_ms(lambda: (fig.update_from(mon.history, mon.marks), fig.png(relayout=False)), n)
    old_new = median_ms(lambda: (fig.update_from(mon.history, mon.marks), fig.png(relayout=True)), n)
    print(
        f"   before blitting, every frame was a full draw + print_png: {old_kept:.0f} ms (layout kept), "
        f"{old_new:.0f} ms (new layout, every 10th frame)"
    )


def main() -> None:
    fast = gpulab.fast_mode()
    print(
        f"gpulab monitor benchmark ({'fast' if fast else 'full'} mode), torch {torch.__version__}, "
        f"{torch.get_num_threads()} torch threads\n"
    )

    n = gpulab.full_or_fast(3000, 300)
    print(f"1. Cost of one reading in a tight loop (median of {n}; host + speed + each GPU; warm caches):")
    real, gpus, missing = cost_per_reading(default_reader(), n)
    print(
        f"   this machine's reader ({gpus} GPU(s)):    {real * 1e6:8.1f} µs per reading"
        + (f"   [{missing[0][:70]}…]" if missing else "")
    )
    sim, gpus, _ = cost_per_reading(SimulatedGpuReader("workshop-8"), n)
    print(f"   8 simulated GPUs (no driver cost):   {sim * 1e6:8.1f} µs per reading")
    print()

    seconds = gpulab.full_or_fast(20.0, 4.0)
    base, on, readings, per_reading = cpu_share(seconds)
    print(f"2. CPU share of the sampler thread at 5 Hz ({seconds:.0f} s idle, {readings} readings):")
    print(f"   the thread's CPU time per reading (caches cold between wake-ups): {per_reading * 1e6:.1f} µs")
    print(
        f"   process CPU while idle: {base * 100:.3f} % without, {on * 100:.3f} % with the sampler "
        f"→ sampler ≈ {(on - base) * 100:.3f} % of one core (target < 1 %)\n"
    )

    torch.manual_seed(0)
    batch, steps, rounds = 64, gpulab.full_or_fast(6000, 300), gpulab.full_or_fast(6, 3)
    data, target = torch.randn(8192, 64), torch.randint(0, 10, (8192,))
    model = torch.nn.Sequential(
        torch.nn.Linear(64, 512), torch.nn.ReLU(), torch.nn.Linear(512, 512), torch.nn.ReLU(), torch.nn.Linear(512, 10)
    )
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    arms = ["off", "on", "on + live redraw"]
    times: dict[str, list[float]] = {a: [] for a in arms}
    frames: list[tuple[int, int, float]] = []
    training_round(model, opt, data, target, 50, batch, "off")  # warm-up
    for r in range(rounds):
        for arm in arms[r % 3 :] + arms[: r % 3]:  # rotate the order: no arm always runs first
            seconds, *live = training_round(model, opt, data, target, steps, batch, arm)
            times[arm].append(seconds)
            if arm == "on + live redraw":
                frames.append(tuple(live))
    print(
        f"3. CPU training loop (MLP 64-512-512-10, batch {batch}, {steps} steps per round, {rounds} rounds; the "
        "three arms run back to back in each round, in rotating order):"
    )
    for arm in arms:
        med = statistics.median(times[arm])
        line = f"   monitor {arm:17s} median {med:7.3f} s per round ({steps * batch / med:7.0f} samples/s)"
        if arm != "off":
            med, q1, q3 = paired_ratios(times[arm], times["off"])
            line += f"   paired ratio to off: median {med:.3f} (middle half {q1:.3f}–{q3:.3f})"
        print(line)
    drawn, full, cpu = (statistics.mean(f[i] for f in frames) for i in (0, 1, 2))
    print(
        f"   the live arm drew {drawn:.1f} frames per round, {full:.1f} of them in full (a new monitor's first "
        f"frame, limits settling),\n   the rest blitted; its render thread used {cpu * 1e3:.0f} ms of CPU per round "
        f"({cpu / statistics.median(times['off']) * 100:.1f} % of a round). As in JupyterLab: nbval, nbconvert and "
        "scripts never draw live frames\n"
    )
    frame_stages(gpulab.full_or_fast(20, 5))
    print()
    frame_stages(gpulab.full_or_fast(20, 5), SimulatedGpuReader("workshop-8"), "8 simulated GPUs (workshop-8)")


if __name__ == "__main__":
    main()
