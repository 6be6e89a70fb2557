"""The figures the chapters quote, measured on one device (``device`` is a parameter: the tests run them on the CPU).

Each function returns ``{"value": number, "unit": str}`` with an optional ``peak`` and ``note``, or
``{"not_measured": why}`` where the device cannot show the figure (pinned memory and NCCL need CUDA). A figure that
raises is recorded as not measured with the error, so one broken measurement never hides the others.
"""

from __future__ import annotations

import re
import subprocess
import time
from collections.abc import Callable
from typing import Any

# Data-sheet dense peaks, TFLOP/s: (fp32 without TF32, bf16/fp16 tensor cores). Labelled "data sheet" in the record.
DATASHEET_TFLOPS = {
    "h200": (67.0, 989.0),
    "h100": (67.0, 989.0),
    "h100 pcie": (51.0, 756.0),
    "a100": (19.5, 312.0),
    "l4": (30.3, 121.0),
    "t4": (8.1, 65.0),
    "a10": (31.2, 125.0),
    "v100": (15.7, 125.0),
}
PCIE_LANE_GBPS = {1: 0.25, 2: 0.5, 3: 0.985, 4: 1.969, 5: 3.938, 6: 7.563}  # per lane, per direction, after encoding


def _figure(value: float, unit: str, **extra: Any) -> dict[str, Any]:
    return {"value": float(f"{float(value):.4g}"), "unit": unit, **extra}


def guarded(measure: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    try:
        return measure()
    except Exception as exc:  # recorded in the evidence, visibly: one failure must not hide the other figures
        return {"not_measured": f"{type(exc).__name__}: {exc}"}


def link_peak_gbps(physical_index: int = 0) -> float | None:
    """The PCIe link's peak per direction from nvidia-smi (generation x width); None where it cannot say."""
    try:
        out = subprocess.run(
            [
                "nvidia-smi",
                "-i",
                str(physical_index),
                "--query-gpu=pcie.link.gen.max,pcie.link.width.max",
                "--format=csv,noheader,nounits",
            ],
            capture_output=True,
            text=True,
            timeout=30,
        ).stdout.strip()
        gen, width = (int(x) for x in out.split(","))
    except (OSError, ValueError, subprocess.SubprocessError):
        return None
    return PCIE_LANE_GBPS.get(gen, 0) * width or None


def transfers(device: Any, nbytes: int = 1 << 26) -> dict[str, dict[str, Any]]:
    """H2D and D2H GB/s from pageable and pinned host memory (pinned needs CUDA), against the link's peak."""
    import torch

    from gpulab.measure.transfer import bandwidth_sweep

    dev = torch.device(device)
    pinned = (False, True) if dev.type == "cuda" else (False,)
    sweep = bandwidth_sweep([nbytes], device=dev, pinned=pinned, repeats=5)
    peak = link_peak_gbps(dev.index or 0) if dev.type == "cuda" else None
    out: dict[str, dict[str, Any]] = {}
    for m in sweep.measurements:
        extra = {"peak": round(peak, 3)} if peak else {}
        key = f"{m.direction}_{'pinned' if m.pinned else 'pageable'}_gbps"
        out[key] = _figure(m.bandwidth_gbps, "GB/s", note=f"{nbytes >> 20} MiB copies", **extra)
    for direction in ("h2d", "d2h"):
        out.setdefault(f"{direction}_pinned_gbps", {"not_measured": f"pinned host memory needs CUDA ({dev.type})"})
    return out


# Compute capability by the model's name, for a card named without it (the run reads it from torch where it can).
CAPABILITY = {"h200": (9, 0), "h100": (9, 0), "a100": (8, 0), "a10": (8, 6), "l4": (8, 9), "t4": (7, 5), "v100": (7, 0)}
MATMUL_SIZES = (8192, 4096, 2048, 1024)  # 8192³ fills a large card: an H100 gave 718 TFLOP/s at 4096³, ~800 at 8192³


def _model(gpu_name: str, table: dict[str, Any]) -> str | None:
    """The key of ``table`` that ``gpu_name`` names as a whole word ('NVIDIA A100-SXM4-80GB' -> 'a100', not 'a10')."""
    name = gpu_name.lower()
    return next(
        (k for k in sorted(table, key=len, reverse=True) if re.search(rf"(?<![a-z0-9]){k}(?![a-z0-9])", name)), None
    )


def matmul_plan(gpu_name: str, capability: tuple[int, int] | None, memory_bytes: int) -> dict[str, Any]:
    """What the matmul figure multiplies on a card (pure): ``{"n", "dtype", "peak"}``.

    bf16 where the card has bf16 matrix units (compute capability >= 8.0: A100, H100, L4, ...), fp16 on tensor cores
    before that (7.x: V100, T4), fp32 on older cards; the largest size of ``MATMUL_SIZES`` whose three n x n matrices
    take at most a quarter of the card's memory; and the data sheet's dense peak for that dtype, where the model is
    known (``peak`` None otherwise). ``capability`` None: read from the name where it is known.
    """
    model = _model(gpu_name, CAPABILITY)
    if capability is None:
        capability = CAPABILITY.get(model or "")
    dtype = (
        "bfloat16"
        if capability and capability >= (8, 0)
        else "float16"
        if capability and capability >= (7, 0)
        else "float32"
    )
    size = 2 if dtype != "float32" else 4
    n = next((n for n in MATMUL_SIZES if 3 * n * n * size <= memory_bytes // 4), MATMUL_SIZES[-1])
    sheet = _model(gpu_name, DATASHEET_TFLOPS)
    peak = DATASHEET_TFLOPS[sheet][0 if dtype == "float32" else 1] if sheet else None
    return {"n": n, "dtype": dtype, "peak": peak}


def matmul_tflops(device: Any, n: int | None = None, gpu_name: str = "") -> dict[str, Any]:
    """Dense matmul TFLOP/s against the card's data-sheet peak where known: on CUDA the size and dtype of
    ``matmul_plan`` for this card (``n`` overrides the size), on the CPU fp32 at ``n`` (default 1024)."""
    import torch

    from gpulab.measure.timing import benchmark

    dev = torch.device(device)
    if dev.type == "cuda":
        props = torch.cuda.get_device_properties(dev)
        plan = matmul_plan(gpu_name or props.name, (props.major, props.minor), props.total_memory)
    else:
        plan = {"n": 1024, "dtype": "float32", "peak": None}
    n = n or plan["n"]
    dtype = getattr(torch, plan["dtype"])
    a = torch.randn(n, n, device=dev, dtype=dtype)
    b = torch.randn(n, n, device=dev, dtype=dtype)
    r = benchmark(lambda: a @ b, device=dev, warmup=2, repeats=5, number=1, label="matmul")
    note = f"{n}x{n} {plan['dtype'].replace('bfloat16', 'bf16').replace('float16', 'fp16')}"
    extra = {"peak": plan["peak"], "note": f"{note}; peak: data sheet"} if plan["peak"] else {"note": note}
    return _figure(2 * n**3 / r.median_s / 1e12, "TFLOP/s", **extra)


def non_blocking_overlap(device: Any, numel: int = 1 << 24, matmuls: int = 8) -> dict[str, Any]:
    """How much of a pinned H2D copy hides behind GPU work when issued with non_blocking=True: 1 - t(both)/t(sum)."""
    import torch

    dev = torch.device(device)
    if dev.type != "cuda":
        return {"not_measured": "a copy overlaps GPU work only on CUDA: on the CPU every copy is synchronous"}
    host = torch.ones(numel).pin_memory()
    busy = torch.randn(4096, 4096, device=dev)
    copy_stream = torch.cuda.Stream(dev)

    def timed(fn: Callable[[], None]) -> float:
        torch.cuda.synchronize(dev)
        start = time.perf_counter()
        fn()
        torch.cuda.synchronize(dev)
        return time.perf_counter() - start

    def work() -> None:
        for _ in range(matmuls):
            busy @ busy

    def copy() -> None:
        with torch.cuda.stream(copy_stream):
            host.to(dev, non_blocking=True)

    timed(work), timed(copy)  # warm-up
    t_work, t_copy = timed(work), timed(copy)
    t_both = timed(lambda: (copy(), work()))
    hidden = max(0.0, min(1.0, (t_work + t_copy - t_both) / min(t_work, t_copy)))
    return _figure(
        hidden, "fraction of the shorter hidden", note=f"copy {t_copy * 1e3:.2f} ms, work {t_work * 1e3:.2f} ms"
    )


def cuda_context_bytes(device: Any) -> dict[str, Any]:
    """Device memory a fresh process's CUDA context takes (nvidia-smi's used memory before and after, in a child)."""
    import torch

    dev = torch.device(device)
    if dev.type != "cuda":
        return {"not_measured": "a CUDA context exists only on a CUDA device"}
    index = dev.index or 0
    code = (
        f"import subprocess,torch;q=lambda:int(subprocess.run(['nvidia-smi','-i',str({index}),"
        "'--query-gpu=memory.used','--format=csv,noheader,nounits'],capture_output=True,text=True).stdout);a=q();"
        f"torch.zeros(1,device='cuda:{index}');torch.cuda.synchronize();print(q()-a)"
    )
    import sys

    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    return _figure(int(out.stdout.strip()) * 2**20, "bytes", note="nvidia-smi memory.used, before and after")


def dataparallel_samples_per_s(devices: list[str], batch: int = 64) -> dict[str, Any]:
    """DataParallel's training samples/s on chapter 03's CNN over ``devices`` (2+), and its speedup over one."""
    from gpulab.dataparallel.throughput import training_throughput
    from gpulab.workload.models import cnn

    if len(devices) < 2:
        return {"not_measured": f"DataParallel splits a batch over 2+ devices; {len(devices)} given"}
    if any(not d.startswith("cuda") for d in devices):
        return {
            "not_measured": f"DataParallel runs on GPUs only (devices {devices}); chapter 03 shows 'by hand' on CPUs"
        }
    speed = training_throughput(
        cnn,
        [batch],
        device=devices[0],
        parallel_devices=devices,
        setups=["one device", "DataParallel"],
        repeats=3,
        label="chapter 03's CNN",
    )
    [row] = [r for r in speed.rows if r.setup == "DataParallel"]
    return _figure(
        row.samples_per_s,
        "samples/s",
        note=f"{len(devices)} devices, batch {batch} per device, "
        f"{speed.speedup('DataParallel', batch):.2f}x one device",
    )


def ddp_samples_per_s(device: str = "auto", batch: int = 128, images: int | None = None) -> dict[str, Any]:
    """DDP's samples/s with 2 ranks on chapter 04's workload, and its speedup over 1. ``device="auto"``: where the
    launcher's decision puts 2 ranks (``gpulab.ranks.plan``): each on a GPU of its own with NCCL, else the CPU with
    gloo (the reason goes into the note)."""
    from gpulab.ranks.plan import plan_ranks
    from gpulab.ranks.speed import rank_speedup

    why = ""
    if device == "auto":
        plan = plan_ranks("auto", 2)
        device, why = ("cuda" if plan.backend == "nccl" else "cpu"), f"; {plan.reason}"
    speed = rank_speedup(batch_sizes=(batch,), epochs=1, images=images, device=device)
    ddp = max((r for r in speed.rows if r.setup == "DDP"), key=lambda r: r.world_size)
    return _figure(
        ddp.samples_per_s, "samples/s", note=f"{ddp.world_size} ranks, batch {batch} per rank, on {device}{why}"
    )


def nccl_allreduce_busbw_gbps(n_gpus: int, nbytes: int = 1 << 28) -> dict[str, Any]:
    """NCCL all-reduce bus bandwidth (nccl-tests' definition: 2(n-1)/n x bytes / time) over ``n_gpus`` GPUs."""
    if n_gpus < 2:
        return {"not_measured": f"an all-reduce between GPUs needs 2 or more; this machine has {n_gpus}"}
    from gpulab.ranks.launcher import launch

    t = max(launch(_allreduce_seconds, world_size=n_gpus, backend="nccl", args=(nbytes,), all_ranks=True))
    return _figure(2 * (n_gpus - 1) / n_gpus * nbytes / t / 1e9, "GB/s", note=f"{n_gpus} GPUs, {nbytes >> 20} MiB")


def _allreduce_seconds(nbytes: int) -> float:
    import torch
    import torch.distributed as dist

    x = torch.ones(nbytes // 4, device=f"cuda:{dist.get_rank()}")
    for _ in range(3):
        dist.all_reduce(x)
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(10):
        dist.all_reduce(x)
    torch.cuda.synchronize()
    return (time.perf_counter() - start) / 10
