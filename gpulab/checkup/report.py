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
import textwrap
from dataclasses import dataclass

from ..core.scheduler import Allocation, allocation
from ..core.tables import html_table, text_table
from ..core.visible import VisibleMap, visible_map
from ..machine.cuda import CudaState, cuda_state
from ..machine.cuda_start import CudaStart
from ..machine.host import shared_memory_bytes
from ..machine.inventory import Inventory, devices
from ..machine.nvml import GpuReader
from ..machine.resolve import as_reader
from ..machine.software import PACKAGES, TorchFacts, detect_platform, package_version, torch_facts
from ..reservations.holders import reservation_holders
from ..reservations.yours import yours_and_others
from .chapters import Chapter, chapters
from .diagnosis import diagnose, headline
from .facts import Facts, Finding
from .recorded_cells import RecordedCell, read_bundles, recordings_folder

__all__ = ["Finding", "EnvReport", "environment_report"]


@dataclass(frozen=True, repr=False)
class EnvReport:
    """The environment report: platform, torch, packages, GPUs, what ``CUDA_VISIBLE_DEVICES`` makes of them, the
    checklist's findings, and the headline; ``str()`` and HTML show it all."""

    platform: str
    simulated: bool
    torch: TorchFacts
    packages: dict[str, str | None]
    inventory: Inventory
    visible: VisibleMap
    findings: tuple[Finding, ...]
    usable_gpus: int = 0  # GPUs PyTorch will use here (would use, on a described machine)
    summary: str = ""  # the headline: what the lessons will do here, or the real reason they cannot use a GPU
    chapters: tuple[Chapter, ...] = ()
    cuda_started_by: CudaStart | None = None  # the line that started CUDA here (or tried to)
    cuda: CudaState | None = None  # whether CUDA has read CUDA_VISIBLE_DEVICES here, and the driver's own answer
    recordings: tuple[RecordedCell, ...] = ()  # the GPU cells recorded on GPU machines (make test-gpu's bundles)
    scheduler: Allocation | None = None  # the SLURM job or Kubernetes pod that gave this process its GPUs, if any

    def _sections(self) -> list[tuple[str, list[str], list[list[str]]]]:
        t = self.torch
        torch_rows = [
            ["torch", t.version],
            ["built with CUDA", t.built_with_cuda or "no (CPU-only build)"],
            ["cuDNN", t.cudnn or "N/A"],
            [
                "GPUs PyTorch will use",
                f"{self.usable_gpus} (predicted for the described GPUs)"
                if self.simulated
                else f"{self.usable_gpus} (torch.cuda.device_count() says {t.cuda_device_count})",
            ],
            ["CUDA initialised in this process", str(t.cuda_initialized)],
            ["CUDA driver in this process", self.cuda.driver.summary if self.cuda is not None else "not asked"],
            [
                "first CUDA call here",
                str(self.cuda_started_by) if self.cuda_started_by is not None else "none since gpulab was imported",
            ],
            ["driver", str(self.inventory.driver_version)],
            ["driver supports CUDA up to", str(self.inventory.cuda_driver_version)],
            ["distributed backends", f"gloo: {'yes' if t.gloo else 'no'}, nccl: {t.nccl or 'no'}"],
        ]
        pkg_rows = [[name, v or "not installed", PACKAGES[name]] for name, v in self.packages.items()]
        env_rows = [
            [k, repr(os.environ[k]) if k in os.environ else "(unset)"]
            for k in (
                "CUDA_VISIBLE_DEVICES",
                "CUDA_DEVICE_ORDER",
                "GPULAB_FAST",
                "GPULAB_SIMULATE_GPUS",
                "OMP_NUM_THREADS",
            )
        ]
        chapter_rows = [[c.name, c.title, c.plan(self.usable_gpus)] for c in self.chapters] or [
            ["(none found)", "not a checkout of the course: the chapters are its notebooks/NN_*.ipynb", ""]
        ]
        scheduler_rows = (
            [["allocation", str(self.scheduler)], ["course tools", self.scheduler.course_tools()]]
            if self.scheduler is not None
            else [["none", "no SLURM job or Kubernetes pod: gpulab's reservations share this machine's GPUs"]]
        )
        return [
            ("PyTorch and driver", ["what", "value"], torch_rows),
            ("Scheduler", ["what", "value"], scheduler_rows),
            ("Chapters here, and what they will do", ["chapter", "question", "on this machine"], chapter_rows),
            (
                "GPU recordings (shown under GPU cells that skip here)",
                ["recorded run", "machine", "what it holds"],
                recording_rows(self.recordings),
            ),
            ("Packages", ["package", "version", "needed for"], pkg_rows),
            ("Environment variables", ["variable", "value"], env_rows),
        ]

    def _repr_pretty_(self, p, cycle: bool) -> None:  # IPython's text/plain: the readable report, not the fields
        p.text(str(self))

    def __str__(self) -> str:
        out = [
            "gpulab environment report" + ("  [SIMULATED GPUs: GPULAB_SIMULATE_GPUS is set]" if self.simulated else ""),
            f"Machine: {self.platform}",
            "",
            textwrap.fill(self.summary, 116),
            "",
        ]
        for title, head, rows in self._sections():
            out += [f"{title}:", text_table(head, rows, indent="  "), ""]
        out += ["GPUs (physical numbering, as nvidia-smi):", _indent(self.inventory.text(brief=True)), ""]
        out += ["What torch will call each GPU:", _indent(str(self.visible)), ""]
        out += ["Checklist:"]
        for c in self.findings:
            out.append(f"  {c.mark} {c.what} — {c.meaning}")
            if c.fix and c.ok is not True:
                out.append(f"      {c.fix_label}: {c.fix}")
        return "\n".join(out)

    def _repr_html_(self) -> str:
        e = html.escape
        parts = [
            "<div class='gpulab-report'><h3>gpulab environment report"
            + (" <span style='color:#b00'>[SIMULATED GPUs]</span>" if self.simulated else "")
            + "</h3>",
            f"<p><b>Machine:</b> {e(self.platform)}</p><p><b>{e(self.summary)}</b></p>",
        ]
        for title, head, rows in self._sections():
            parts.append(html_table(head, rows, caption=title))
        parts.append("<h4>GPUs (physical numbering, as nvidia-smi)</h4>" + self.inventory.html(brief=True))
        parts.append("<h4>What torch will call each GPU</h4>" + self.visible._repr_html_())
        findings = "".join(
            f"<li><span style='color:{_COLOURS[c.ok]}'>{c.mark}</span> {e(c.what)} — {e(c.meaning)}"
            + (f"<br><b>{c.fix_label}:</b> {e(c.fix)}" if c.fix and c.ok is not True else "")
            + "</li>"
            for c in self.findings
        )
        return "".join(parts) + f"<h4>Checklist</h4><ul style='list-style:none'>{findings}</ul></div>"


_COLOURS = {True: "#080", False: "#b00", None: "#a60"}


def recording_rows(cells: tuple[RecordedCell, ...] | list[RecordedCell]) -> list[list[str]]:
    """One row per recorded run: its folder, the machine (label's words) and how many GPU cells it holds."""
    runs: dict[str, list[RecordedCell]] = {}
    for c in cells:
        runs.setdefault(c.bundle.folder.name, []).append(c)
    rows = []
    for name, held in sorted(runs.items(), reverse=True):
        b = held[0].bundle
        ran = sum(c.ran for c in held)
        rows.append(
            [
                f"evidence/{name}/",
                b.label.removeprefix("recorded on ").removesuffix("; not run here"),
                f"{len({c.chapter for c in held})} chapters, {ran} of {len(held)} GPU cells ran there",
            ]
        )
    folder = recordings_folder().name
    return rows or [
        [
            "(none)",
            f"no recording of the chapters' GPU cells in {folder}/",
            f"the GPU test runs' results and figures in {folder}/*.json are not cell outputs",
        ]
    ]


def _indent(text: str) -> str:
    return "\n".join("  " + line for line in text.splitlines())


def environment_report(machine: GpuReader | str | None = None, *, torch: TorchFacts | None = None) -> EnvReport:
    """Collect the report. ``machine`` defaults to NVML (or the described GPUs named by ``GPULAB_SIMULATE_GPUS``); a
    preset name (``"workshop-8"``) reports on that described machine, labelled SIMULATED. ``torch`` defaults to this
    PyTorch's facts — pass described ones to see what the report says about another install."""
    reader = as_reader(machine)
    inv = devices(reader)
    t = torch if torch is not None else torch_facts()
    pk = {name: package_version(name) for name in PACKAGES}
    simulated = bool(getattr(reader, "simulated", False))
    started = cuda_state()  # torch's flag, gpulab's record of the first CUDA call, the loaded driver's own answer
    read = started.variable_read
    held = reservation_holders([g.uuid for g in inv.gpus])
    facts = Facts(
        t,
        inv.gpus,
        inv.driver_version,
        inv.cuda_driver_version,
        inv.nvml_error,
        simulated,
        dict(os.environ),
        {uuid: str(h) for uuid, h in held.items()},
        shared_memory_bytes(),
        "fork" in multiprocessing.get_all_start_methods(),
        read,
        started.evidence if read is False else str(started),
        pk,
        chapters(),
        yours_and_others(held)[0],
    )
    findings, usable = diagnose(facts)
    return EnvReport(
        detect_platform(),
        simulated,
        t,
        pk,
        inv,
        visible_map(inv.gpus),
        findings,
        usable,
        headline(facts, findings, usable),
        facts.chapters,
        started.started_by,
        started,
        tuple(read_bundles()),
        allocation(os.environ),
    )
