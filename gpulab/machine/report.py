"""The classroom environment report: ``python -m gpulab env`` in a terminal, ``gpulab.environment_report()`` in a cell.

Like ``python -m torch.utils.collect_env`` and ``accelerate env``, plus what a learner needs to know next: which GPUs
exist (NVML's physical numbering), which ``cuda:k`` each becomes under the current ``CUDA_VISIBLE_DEVICES`` /
``CUDA_DEVICE_ORDER``, and a ✔/✘ checklist of what each chapter needs. Never creates a CUDA context.
Taught in ``notebooks/00_setup.ipynb``.
"""
from __future__ import annotations

import html
import multiprocessing
import os
from dataclasses import dataclass

from .inventory import Inventory, devices
from ..placement.setter import cuda_state
from .nvml import GpuReader
from .resolve import as_reader
from .software import PACKAGES, TorchFacts, detect_platform, package_version, torch_facts
from ..core.tables import html_table, text_table
from ..placement.visible import VisibleMap, visible_map

__all__ = ["Check", "EnvReport", "environment_report"]


@dataclass(frozen=True)
class Check:
    """One line of the checklist: is ``what`` true here, and what that means for the chapters."""

    ok: bool
    what: str
    meaning: str

    @property
    def mark(self) -> str:
        return "✔" if self.ok else "✘"


@dataclass(frozen=True, repr=False)
class EnvReport:
    platform: str
    simulated: bool
    torch: TorchFacts
    packages: dict[str, str | None]
    inventory: Inventory
    visible: VisibleMap
    checks: tuple[Check, ...]

    @property
    def summary(self) -> str:
        """One sentence: what the lessons will do on this machine."""
        n = self.torch.cuda_device_count
        if n >= 2:
            return f"{n} CUDA GPUs are usable: every chapter runs its GPU and multi-GPU experiments."
        if n == 1:
            return ("1 CUDA GPU is usable: GPU cells run; the multi-GPU lessons run their processes on the CPU (gloo) "
                    "and say what a second GPU would change.")
        why = self.inventory.nvml_error or (
            "PyTorch was built without CUDA" if not self.torch.built_with_cuda else "PyTorch cannot use the GPUs NVML lists")
        return (f"No GPU found ({why.split(':')[0].rstrip('.')}). CPU fallback mode: every chapter runs on the CPU, "
                "GPU-only cells print why they skip, and multi-GPU lessons run real processes on the CPU with gloo.")

    def _sections(self) -> list[tuple[str, list[str], list[list[str]]]]:
        t = self.torch
        torch_rows = [
            ["torch", t.version], ["built with CUDA", t.built_with_cuda or "no (CPU-only build)"],
            ["cuDNN", t.cudnn or "N/A"], ["CUDA usable here", f"{t.cuda_available} ({t.cuda_device_count} GPU(s))"],
            ["CUDA initialised in this process", str(t.cuda_initialized)],
            ["driver", str(self.inventory.driver_version)], ["driver supports CUDA up to", str(self.inventory.cuda_driver_version)],
            ["distributed backends", f"gloo: {'yes' if t.gloo else 'no'}, nccl: {t.nccl or 'no'}"],
        ]
        pkg_rows = [[name, v or "not installed", PACKAGES[name]] for name, v in self.packages.items()]
        env_rows = [[k, repr(os.environ[k]) if k in os.environ else "(unset)"] for k in
                    ("CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "GPULAB_FAST", "GPULAB_SIMULATE_GPUS", "OMP_NUM_THREADS")]
        return [
            ("PyTorch and driver", ["what", "value"], torch_rows),
            ("Packages", ["package", "version", "needed for"], pkg_rows),
            ("Environment variables", ["variable", "value"], env_rows),
        ]

    def _repr_pretty_(self, p, cycle: bool) -> None:  # IPython's text/plain: the readable report, not the fields
        p.text(str(self))

    def __str__(self) -> str:
        out = ["gpulab environment report" + ("  [SIMULATED GPUs: GPULAB_SIMULATE_GPUS is set]" if self.simulated else ""),
               f"Machine: {self.platform}", "", self.summary, ""]
        for title, head, rows in self._sections():
            out += [f"{title}:", text_table(head, rows, indent="  "), ""]
        out += ["GPUs (physical numbering, as nvidia-smi):", _indent(self.inventory.text(brief=True)), ""]
        out += ["What torch will call each GPU:", _indent(str(self.visible)), ""]
        out += ["Checklist:"] + [f"  {c.mark} {c.what} — {c.meaning}" for c in self.checks]
        return "\n".join(out)

    def _repr_html_(self) -> str:
        e = html.escape
        parts = ["<div class='gpulab-report'><h3>gpulab environment report"
                 + (" <span style='color:#b00'>[SIMULATED GPUs]</span>" if self.simulated else "") + "</h3>",
                 f"<p><b>Machine:</b> {e(self.platform)}</p><p><b>{e(self.summary)}</b></p>"]
        for title, head, rows in self._sections():
            parts.append(html_table(head, rows, caption=title))
        parts.append("<h4>GPUs (physical numbering, as nvidia-smi)</h4>" + self.inventory.html(brief=True))
        parts.append("<h4>What torch will call each GPU</h4>" + self.visible._repr_html_())
        checks = "".join(
            f"<li><span style='color:{'#080' if c.ok else '#b00'}'>{c.mark}</span> {e(c.what)} — {e(c.meaning)}</li>"
            for c in self.checks)
        return "".join(parts) + f"<h4>Checklist</h4><ul style='list-style:none'>{checks}</ul></div>"


def _indent(text: str) -> str:
    return "\n".join("  " + line for line in text.splitlines())


def _checks(t: TorchFacts, inv: Inventory, pk: dict[str, str | None]) -> tuple[Check, ...]:
    started = cuda_state()  # torch's flag and whether the driver (libcuda) is already loaded
    widgets = pk.get("ipywidgets")
    return (
        Check(t.built_with_cuda is not None, "PyTorch built with CUDA",
              f"CUDA {t.built_with_cuda} build" if t.built_with_cuda else "a CPU-only build can never use a GPU; "
              "install a CUDA build of torch to use one"),
        Check(inv.nvml_error is None, "NVIDIA driver reachable (NVML)",
              "GPUs can be listed, picked and monitored" if inv.nvml_error is None else inv.nvml_error),
        Check(t.cuda_device_count >= 1, "at least one CUDA GPU usable by PyTorch",
              "GPU cells of chapters 01–02 run" if t.cuda_device_count else "GPU cells print why they skip; CPU cells run"),
        Check(t.cuda_device_count >= 2, "two or more CUDA GPUs",
              "DataParallel and DDP run on GPUs" if t.cuda_device_count >= 2 else
              "DataParallel/DDP lessons run real processes on the CPU (gloo) instead"),
        Check(t.gloo, "gloo backend", "DDP on the CPU works" if t.gloo else "DDP on the CPU is impossible with this build"),
        Check(t.nccl is not None, "NCCL backend",
              f"NCCL {t.nccl}: DDP across GPUs" if t.nccl else "no NCCL: multi-GPU DDP would fall back to gloo"),
        Check("fork" in multiprocessing.get_all_start_methods(), "fork start method",
              "notebook launchers can start worker processes" if "fork" in multiprocessing.get_all_start_methods()
              else "no fork on this OS: multi-process cells use fresh interpreters instead"),
        Check(not started.variable_read, "CUDA not yet started in this kernel",
              "CUDA_VISIBLE_DEVICES can still be changed and workers forked" if not started.variable_read else
              f"{started} Restart the kernel before changing it or forking workers."),
        Check(bool(widgets and int(widgets.split(".")[0]) >= 8), "ipywidgets ≥ 8",
              "the GPU picker and live monitor are interactive" if widgets else "pip install 'ipywidgets>=8'"),
        Check(pk.get("ipympl") is not None, "ipympl", "plots update live" if pk.get("ipympl") else
              "plots are drawn once at the end (pip install ipympl for live ones)"),
        Check(pk.get("lightning") is not None, "lightning", "the Lightning chapter runs" if pk.get("lightning") else
              "pip install 'gpulab[lightning]' for the Lightning chapter"),
    )


def environment_report(reader: GpuReader | str | None = None) -> EnvReport:
    """Collect the report. ``reader`` defaults to NVML (or the simulated GPUs named by ``GPULAB_SIMULATE_GPUS``); a
    preset name (``"workshop-8"``) reports on that described machine, labelled SIMULATED."""
    reader = as_reader(reader)
    inv = devices(reader)
    t = torch_facts()
    pk = {name: package_version(name) for name in PACKAGES}
    return EnvReport(detect_platform(), bool(getattr(reader, "simulated", False)), t, pk, inv,
                     visible_map(inv.gpus), _checks(t, inv, pk))
