"""Why the GPU lessons would not run here, and what to do: the report's checklist, decided from facts read elsewhere.

Nothing here reads the machine: ``diagnose`` takes the facts (``Facts``: torch's build, NVML's GPUs and driver, the
environment, reservations, ``/dev/shm``), so every diagnosis can be tried on a described machine with described
torch facts. Each ``Finding`` (a row of the report's checklist) names what was examined, what it means for the
chapters, and — when it fails — the fix. The classroom's classic failures, in the order they bite:

- a torch build newer than the driver: a CUDA 13 build on a driver for CUDA 12.4 finds no GPU (``torch.cuda.
  is_available()`` is False, "The NVIDIA driver on your system is too old"); within one major version CUDA's
  minor-version compatibility lets it run;
- a CPU-only torch on a GPU machine; ``CUDA_VISIBLE_DEVICES`` hiding every GPU; a MIG GPU with no slices;
- every GPU busy or reserved by others; no NCCL for multi-GPU work; a container's 64 MiB ``/dev/shm``, too small
  for DataLoader workers.

Taught in ``notebooks/00_setup.ipynb``.
"""

from __future__ import annotations

from ..core.units import format_bytes
from ..core.visible import visible_map
from ..core.visible_text import parse_visible_devices
from ..placement.selection import rank_gpus
from ..reservations.holders import THIS_NOTEBOOK
from .build_findings import build_findings, major_minor
from .chapters import Chapter
from .facts import Facts, Finding

__all__ = ["diagnose", "usable_gpus", "headline"]

SHM_ENOUGH_BYTES = 1 << 30


def _names(chapters: tuple[Chapter, ...]) -> str:
    return ", ".join(c.name for c in chapters) or "none of the chapters here"


def _visibility_findings(f: Facts) -> list[Finding]:
    out = [
        Finding(
            f.nvml_error is None,
            "NVIDIA driver reachable (NVML)",
            "GPUs can be listed, picked and monitored" if f.nvml_error is None else f.nvml_error,
        )
    ]
    if not f.gpus:
        return out
    raw = f.env.get("CUDA_VISIBLE_DEVICES")
    visible = visible_map(f.gpus, f.env)
    if raw is None:
        out.append(Finding(True, "CUDA_VISIBLE_DEVICES", "unset: this process may use every GPU"))
    elif not visible.devices:
        spec = parse_visible_devices(raw)
        why = "; ".join(visible.notes or spec.notes) or "it names no GPU"
        out.append(
            Finding(
                False,
                "CUDA_VISIBLE_DEVICES",
                f"CUDA_VISIBLE_DEVICES={raw!r} hides every GPU from this process ({why}).",
                "start the kernel without it, or set it to GPUs that exist "
                f"(0–{len(f.gpus) - 1} here) before anything starts CUDA; `python -m gpulab visible` "
                "explains the value.",
                True,
            )
        )
    else:
        shown = ", ".join(f"cuda:{d.cuda_index} = GPU {d.physical_index}" for d in visible.devices)
        out.append(Finding(True, "CUDA_VISIBLE_DEVICES", f"{raw!r}: {shown}"))
    seen = [g for g in f.gpus if g.physical_index in {d.physical_index for d in visible.devices}]
    only_empty_mig = bool(seen) and all(g.mig_enabled is True and not g.mig_devices for g in seen)
    for g in f.gpus:
        if g.mig_enabled is True and not g.mig_devices:
            out.append(
                Finding(
                    False,
                    f"GPU {g.physical_index} MIG slices",
                    f"GPU {g.physical_index} ({g.name}) is in MIG mode with no MIG instance: CUDA sees no "
                    "device on it.",
                    f"an administrator creates instances (sudo nvidia-smi mig -i "
                    f"{g.physical_index} -cgi <profile> -C) or turns MIG off (sudo nvidia-smi -i "
                    f"{g.physical_index} -mig 0, then reset the GPU).",
                    only_empty_mig,
                )
            )
        elif g.mig_enabled is True:
            out.append(
                Finding(
                    True,
                    f"GPU {g.physical_index} MIG slices",
                    f"{len(g.mig_devices)} slice(s); a process uses one slice, named in CUDA_VISIBLE_DEVICES "
                    "by its MIG-… UUID (nvidia-smi -L lists them)",
                )
            )
    allowed = {d.physical_index for d in visible.devices} if raw is not None else None
    pool = [g for g in f.gpus if allowed is None or g.physical_index in allowed]
    if pool:
        # a reservation of this very process, or of the server it runs in, is this user's GPU, not a
        # stranger's: "yours", by the rule every view applies (placement.selection.judge), and said so
        yours = dict(f.yours) | {u: f"reserved by {h}" for u, h in f.holders.items() if h == THIS_NOTEBOOK}
        ranking = rank_gpus(pool, taken={u: h for u, h in f.holders.items() if u not in yours}, yours=yours)
        free = [v.gpu.physical_index for v in ranking if v.free]
        mine = sorted(v.gpu.physical_index for v in ranking if v.yours)
        if free or mine:
            whose = "; ".join(sorted({yours[g.uuid] for g in pool if g.uuid in yours}))
            said = f"GPU {', '.join(map(str, mine))} yours ({whose})" if mine else ""
            now = f"{len(free)} free now (GPU {', '.join(map(str, free))}); " if free else ""
            out.append(
                Finding(
                    True,
                    "a free GPU to work on",
                    now
                    + (f"{said}; " if said and free else said)
                    + ("hold one with gpulab.reserve_gpus(1)" if free else ""),
                )
            )
        else:
            out.append(
                Finding(
                    False,
                    "a free GPU to work on",
                    "every GPU this process may use is busy or reserved: "
                    + "; ".join(f"GPU {v.gpu.physical_index} {v.reason}" for v in ranking)
                    + ".",
                    "wait for one (gpulab.reserve_gpus(1, wait_s=600)), ask who holds one to release it "
                    "(`python -m gpulab watch` shows who), or share one knowingly: gpulab.reserve_gpus(1, "
                    "policy=gpulab.placement.selection.Policy(max_memory_used_fraction=0.5)).",
                )
            )
    return out


def usable_gpus(f: Facts, findings: list[Finding] | tuple[Finding, ...]) -> int:
    """How many GPUs PyTorch will use here (for a described machine: would use, with this torch)."""
    if any(c.blocks_gpus and not c.ok for c in findings):
        return 0
    if not f.gpus:
        return 0 if f.simulated else f.torch.cuda_device_count
    by_index = {g.physical_index: g for g in f.gpus}
    devices = visible_map(f.gpus, f.env).devices
    whole = sum(1 for d in devices if by_index[d.physical_index].mig_enabled is not True)
    # CUDA enumerates a single MIG slice per process (CUDA 11/R450 and 12/R525), whatever the variable lists.
    mig = any(
        by_index[d.physical_index].mig_enabled is True and by_index[d.physical_index].mig_devices for d in devices
    )
    predicted = whole + int(mig)
    return predicted if f.simulated else min(predicted, f.torch.cuda_device_count)


def _use_findings(f: Facts, usable: int) -> list[Finding]:
    t, ch = f.torch, f.chapters
    gpu_ch = tuple(c for c in ch if c.gpu_cells)
    multi_ch = tuple(c for c in ch if c.multigpu_cells)
    out = [
        Finding(
            usable >= 1,
            "at least one CUDA GPU usable by PyTorch",
            f"the GPU cells run ({_names(gpu_ch)})"
            if usable
            else f"GPU cells print why they skip ({_names(gpu_ch)}); every other cell runs on the CPU",
        ),
        Finding(
            usable >= 2,
            "two or more CUDA GPUs",
            f"the multi-GPU cells run ({_names(multi_ch)})"
            if usable >= 2
            else f"multi-GPU cells skip, saying why ({_names(multi_ch)}); worker processes run on the CPU with gloo",
        ),
        Finding(
            t.gloo,
            "gloo backend",
            "distributed work on the CPU runs"
            if t.gloo
            else "no gloo in this build: distributed work on the CPU is impossible",
            "" if t.gloo else "install torch from pytorch.org or PyPI (every official build has gloo).",
        ),
    ]
    if len(f.gpus) >= 2 or usable >= 2:
        out.append(
            Finding(
                t.nccl is not None,
                "NCCL backend (DDP across GPUs)",
                f"NCCL {t.nccl}"
                if t.nccl
                else "this torch has no NCCL (Windows and macOS builds never "
                "do): DDP across this machine's GPUs would have to use gloo, which copies through the CPU",
                "on Linux, install the CUDA build of torch from pytorch.org (it bundles NCCL); on Windows "
                "use backend='gloo', or WSL2.",
            )
        )
    else:
        out.append(
            Finding(
                True,
                "NCCL backend (DDP across GPUs)",
                f"NCCL {t.nccl}" if t.nccl else "no NCCL, and not needed with fewer than two GPUs",
            )
        )
    out.append(
        Finding(
            f.fork,
            "fork start method",
            "notebook launchers can start worker processes"
            if f.fork
            else "no fork on this OS: multi-process cells start fresh interpreters instead",
        )
    )
    out.append(_cuda_finding(f))
    if f.shm_bytes is not None:
        enough = f.shm_bytes >= SHM_ENOUGH_BYTES
        out.append(
            Finding(
                enough,
                "shared memory for DataLoader workers",
                f"/dev/shm is {format_bytes(f.shm_bytes)}"
                + (
                    ""
                    if enough
                    else ": DataLoader workers (num_workers > 0) hand batches over through it and die with 'ERROR: "
                    "Unexpected bus error encountered in worker. This might be caused by insufficient shared "
                    "memory (shm)'."
                ),
                ""
                if enough
                else "start the container with --shm-size=2g (or "
                "--ipc=host; on Kubernetes mount an emptyDir with medium: Memory at /dev/shm), or use "
                "num_workers=0.",
            )
        )
    widgets = f.packages.get("ipywidgets")
    widgets_ok = (major_minor(widgets) or (0, 0)) >= (7, 7)  # 7.7 (Colab's) and 8 are both tested
    out.append(
        Finding(
            widgets_ok,
            "ipywidgets ≥ 7.7",
            "the GPU picker and the live monitor are interactive"
            if widgets_ok
            else f"{widgets} is too old: the picker does not show"
            if widgets
            else "not installed: the picker cannot show",
            "pip install 'ipywidgets>=7.7.1', then reload the page.",
        )
    )
    light = tuple(c for c in ch if c.uses_lightning)
    if light:
        have = f.packages.get("lightning") is not None
        out.append(
            Finding(
                have,
                "lightning",
                f"{_names(light)} can run" if have else f"{_names(light)} need it",
                "pip install 'gpulab[lightning]'.",
            )
        )
    return out


def _cuda_finding(f: Facts) -> Finding:
    if f.cuda_read is None:
        return Finding(
            None,
            "CUDA not yet started in this kernel: cannot tell",
            f.cuda_said,
            "restart the kernel and change CUDA_VISIBLE_DEVICES or fork workers before any cell that uses CUDA.",
        )
    if f.cuda_read:
        return Finding(
            False,
            "CUDA not yet started in this kernel",
            f.cuda_said,
            "restart the kernel before changing it or forking workers.",
        )
    said = f"{f.cuda_said}: " if f.cuda_said else ""
    return Finding(
        True,
        "CUDA not yet started in this kernel",
        f"{said}CUDA_VISIBLE_DEVICES can still be changed and workers forked",
    )


def diagnose(f: Facts) -> tuple[tuple[Finding, ...], int]:
    """The checklist for these facts, and how many GPUs PyTorch will use (would use, on a described machine)."""
    findings = build_findings(f) + _visibility_findings(f)
    usable = usable_gpus(f, findings)
    return tuple(findings + _use_findings(f, usable)), usable


def headline(f: Facts, findings: tuple[Finding, ...], usable: int) -> str:
    """One sentence (two at most) for the top of the report: what the lessons will do here, or the real reason not."""
    plan = (
        "CPU fallback mode: every chapter runs on the CPU, GPU-only cells print why they skip, and multi-GPU "
        "lessons run real processes on the CPU with gloo."
    )
    predicted = "On this described machine (SIMULATED), this PyTorch would" if f.simulated else "PyTorch will"
    blocker = next((c for c in findings if c.blocks_gpus and not c.ok), None)
    if blocker is not None:
        text = (
            f"{predicted} use none of the {len(f.gpus)} GPU(s) NVML lists. Cause: {blocker.meaning} "
            f"Fix: {blocker.fix} Until then, the chapters run in CPU fallback mode."
        )
    elif usable >= 2:
        text = (
            f"{usable} CUDA GPUs are usable: every chapter runs its GPU and multi-GPU cells."
            if not f.simulated
            else f"{predicted} use {usable} CUDA GPUs: every chapter would run its GPU and multi-GPU cells."
        )
    elif usable == 1:
        text = (
            "1 CUDA GPU is usable: GPU cells run; multi-GPU cells skip and the multi-process lessons run their "
            "workers on the CPU (gloo)."
            if not f.simulated
            else f"{predicted} use 1 CUDA GPU: GPU cells would run; multi-GPU cells would skip."
        )
    elif f.gpus:
        text = (
            f"PyTorch sees none of the {len(f.gpus)} GPU(s) NVML lists, for a reason this report cannot tell: "
            '`python -c "import torch; torch.cuda.init()"` prints PyTorch\'s own error. ' + plan
        )
    else:
        why = f.nvml_error or (
            "PyTorch was built without CUDA" if f.torch.built_with_cuda is None else "NVML lists no GPU"
        )
        text = f"No GPU found ({why.split(':')[0].rstrip('.')}). {plan}"
    busy = next((c for c in findings if c.what == "a free GPU to work on" and not c.ok), None)
    if busy is not None and blocker is None and usable:
        text += " Right now every GPU is busy or reserved: see the checklist."
    return text
