"""``gpulab.doctor()`` / ``%gpulab doctor``: one screen on this kernel's GPU state, each problem with its fix.

The environment report (``report``) asks "will the chapters run on this machine?"; the doctor asks "will my next
launch work in *this kernel*, as it is now?": whether CUDA started and by which line, ``CUDA_VISIBLE_DEVICES`` at the
kernel's start and now, the reservation held, the start method and whether a fork is safe, OpenMP's threads, a process
group left open, ports held, and whether Lightning's ``ddp_notebook`` or accelerate's ``notebook_launcher`` would
refuse or hang here — said before the learner tries. The findings (``findings``) read only a ``KernelState``
(``kernel_state`` reads it); each quotes the launcher's own condition, with its source in a comment.
Taught in ``notebooks/04_ddp.ipynb``.
"""

from __future__ import annotations

import html
import os
from dataclasses import dataclass

from ..machine.nvml import GpuReader
from .facts import Finding
from .kernel_state import KernelState, kernel_state
from .launcher_findings import RESTART as _RESTART
from .launcher_findings import accelerate_finding as _accelerate
from .launcher_findings import lightning_finding as _lightning

__all__ = ["Doctor", "doctor", "findings"]


@dataclass(frozen=True, repr=False)
class Doctor:
    """The doctor's findings on this kernel: ``problems`` lists those that fail; ``str()`` / HTML show them all."""

    findings: tuple[Finding, ...]

    @property
    def problems(self) -> tuple[Finding, ...]:
        """The findings that fail here (``✘``): what would stop or hang the next launch."""
        return tuple(c for c in self.findings if c.ok is False)

    @property
    def unknowns(self) -> tuple[Finding, ...]:
        """The findings gpulab cannot decide here (``?``): not problems, but said, with how to be sure."""
        return tuple(c for c in self.findings if c.ok is None)

    def _head(self) -> str:
        n, unknown = len(self.problems), len(self.unknowns)
        head = f"{n} problem(s) in this kernel" if n else "no problem in this kernel"
        return head + (f", {unknown} thing(s) it cannot tell" if unknown else "")

    def finding(self, what: str) -> Finding:
        """The finding whose ``what`` starts with ``what`` (``doctor().finding("OpenMP")``)."""
        for c in self.findings:
            if c.what.startswith(what):
                return c
        raise KeyError(f"no finding named {what!r}; the findings are: {', '.join(c.what for c in self.findings)}")

    def __str__(self) -> str:
        out = [f"gpulab doctor: {self._head()}"]
        for c in self.findings:
            out.append(f"  {c.mark} {c.what} — {c.meaning}")
            if c.fix and c.ok is not True:
                out.append(f"      {c.fix_label}: {c.fix}")
        return "\n".join(out)

    def _repr_pretty_(self, p, cycle: bool) -> None:
        p.text(str(self))

    def _repr_html_(self) -> str:
        e = html.escape
        colour = {True: "#080", False: "#b00", None: "#a60"}
        rows = "".join(
            f"<li><span style='color:{colour[c.ok]}'>{c.mark}</span> <b>{e(c.what)}</b> — {e(c.meaning)}"
            + (f"<br><b>{c.fix_label}:</b> {e(c.fix)}" if c.fix and c.ok is not True else "")
            + "</li>"
            for c in self.findings
        )
        return (
            f"<div class='gpulab-doctor'><h4>gpulab doctor: {e(self._head())}</h4>"
            f"<ul style='list-style:none'>{rows}</ul></div>"
        )


def doctor(machine: GpuReader | str | None = None, *, reservations: str | os.PathLike[str] | None = None) -> Doctor:
    """Examine this kernel (``machine``: whose GPUs reservations are looked up on; ``reservations``: the reservations
    folder).

    Starts nothing: no CUDA, no process group, no fork. Taught in ``notebooks/04_ddp.ipynb``."""
    return Doctor(findings(kernel_state(machine, reservations)))


def findings(s: KernelState) -> tuple[Finding, ...]:
    """Every finding on a state (pure: a state built by hand gives the same findings as a kernel in that state)."""
    return (
        _cuda(s),
        _visible(s),
        _reservation(s),
        _start_method(s),
        _openmp(s),
        _group(s),
        _ports(s),
        _lightning(s),
        _accelerate(s),
    )


def _cuda(s: KernelState) -> Finding:
    rec = s.cuda_started_by
    read = s.cuda.variable_read
    if read is True:
        by = f" {rec}" if rec else " (before gpulab was imported, or not through torch, so the line is unknown)"
        return Finding(
            False,
            "CUDA started in this kernel",
            f"{s.cuda._state()}{by}",
            f"{_RESTART}; move it into the function you launch. gpulab.launch still works (its ranks come "
            "from a fork server that never touched CUDA); fork-based launchers do not.",
        )
    if rec is not None:
        return Finding(
            False,
            "CUDA asked for in this kernel",
            f"{rec} On a GPU machine that line starts CUDA, and fork-based launchers then refuse.",
            f"{_RESTART}; move it into the function you launch, or after the launch.",
        )
    if read is None:
        return Finding(
            None,
            "CUDA started in this kernel? cannot tell",
            s.cuda._state(),
            "if a cell before this one used CUDA (torch.cuda.is_available(), a tensor on a GPU), restart the "
            "kernel (Kernel → Restart) and run that line after the launch, or inside the launched function.",
        )
    return Finding(
        True,
        "CUDA not started",
        f"no CUDA call since gpulab was imported, and {s.cuda.evidence}: "
        "CUDA_VISIBLE_DEVICES can still be changed and any launcher may fork this kernel",
    )


def _visible(s: KernelState) -> Finding:
    start, now = s.visible_at_start, s.visible_now
    said = f"at kernel start {_shown(start)}, now {_shown(now)}"
    if start == now:
        return Finding(True, "CUDA_VISIBLE_DEVICES unchanged", said)
    if s.cuda.variable_read is None and s.cuda_started_by is None:
        return Finding(
            None,
            "CUDA_VISIBLE_DEVICES changed; whether CUDA had read it first cannot be told",
            f"{said}; {s.cuda.evidence}",
            "if a cell before the change used CUDA, restart the kernel (Kernel → Restart) with "
            "gpulab.set_visible_devices(...) or reservation.apply() as the first cell.",
        )
    if s.cuda.variable_read or s.cuda_started_by is not None:
        return Finding(
            False,
            "CUDA_VISIBLE_DEVICES changed after CUDA was asked",
            f"{said}; CUDA reads it once, when it starts, so this kernel keeps the GPUs of that moment "
            "(child processes get the new value)",
            f"{_RESTART}, with gpulab.set_visible_devices(...) or reservation.apply() as the first cell.",
        )
    return Finding(True, "CUDA_VISIBLE_DEVICES changed before CUDA started", f"{said}: CUDA will read the new value")


def _reservation(s: KernelState) -> Finding:
    pairs = s.reservation or s.server_held
    if not pairs:
        return Finding(
            True,
            "no GPU reserved by this notebook",
            "nothing held (gpulab.reserve_gpus(n) holds GPUs against the other notebooks on this machine)",
        )
    # the reservation of the server this kernel runs in (JupyterHub's server model) is this user's: yours too
    whose = "reserved by this notebook" if s.reservation else "yours: reserved for the server this kernel runs in"
    held = ", ".join(f"GPU {i}" for i, _ in pairs)
    tokens = [t.strip() for t in (s.visible_now or "").split(",") if t.strip()]
    points = bool(tokens) and all(
        any(t == str(i) or (t.startswith("GPU-") and u.startswith(t)) for i, u in pairs) for t in tokens
    )
    if points:
        return Finding(True, f"{held} {whose}", f"CUDA_VISIBLE_DEVICES={s.visible_now!r} uses them")
    return Finding(
        False,
        f"{held} {whose}, but not used",
        f"CUDA_VISIBLE_DEVICES={_shown(s.visible_now)} does not point at them, so work here may land on "
        "another user's GPU",
        "call reservation.apply() before CUDA starts (or pass reservation.env() to the processes you "
        "start); release() what you do not use.",
    )


def _fork_unsafe(s: KernelState) -> list[str]:
    why = []
    if s.cuda.initialized:
        why.append("CUDA is initialised here (a forked child cannot use it)")
    elif s.cuda.variable_read is True:  # cuInit ran (is_available() is enough): CUDA does not survive a fork after it
        why.append("the CUDA driver has started here (a forked child cannot use CUDA)")
    if s.extra_threads:
        why.append(
            f"OpenMP's thread pool is running ({s.extra_threads} thread(s) beyond torch's own): a forked "
            "child's first multi-threaded op waits for threads that were not copied"
        )
    return why


def _start_method(s: KernelState) -> Finding:
    method = s.start_method or "not set yet (Python's default)"
    why = _fork_unsafe(s)
    if not s.fork_available:
        return Finding(True, f"start method: {method}", "this platform has no fork: every launcher spawns")
    if not why:
        return Finding(True, f"start method: {method}", "a fork is safe now")
    return Finding(
        False,
        f"start method: {method}; a fork is not safe now",
        "; ".join(why),
        "use gpulab.launch (its ranks come from a fork server started clean), or restart the kernel and "
        "launch before any CPU or CUDA work.",
    )


def _openmp(s: KernelState) -> Finding:
    if s.torch_threads is None:
        return Finding(True, "OpenMP threads: torch not imported", "no thread pool yet")
    if not s.extra_threads:
        return Finding(
            True,
            f"OpenMP threads: pool not started (torch uses {s.torch_threads})",
            "no CPU op has run on two or more threads here yet",
        )
    return Finding(
        False,
        f"OpenMP threads: pool started ({s.extra_threads} thread(s) beyond torch's own, torch uses {s.torch_threads})",
        "a process forked from this kernel hangs at its first op on two or more threads (GNU OpenMP does "
        "not survive fork; notebooks/06_lightning.ipynb shows it)",
        "launch with gpulab.launch; with a fork-based launcher set OMP_NUM_THREADS=1 and "
        "torch.set_num_threads(1) before any CPU work (restart the kernel first).",
    )


def _group(s: KernelState) -> Finding:
    if s.process_group is None:
        return Finding(True, "no process group open", "torch.distributed.is_initialized() is False here")
    return Finding(
        False,
        f"a {s.process_group} process group is open in this kernel",
        "init_process_group ran in the notebook itself: a second one raises, and its store keeps a port",
        "torch.distributed.destroy_process_group(); start process groups inside the launched function "
        "(gpulab.launch does it for you).",
    )


def _ports(s: KernelState) -> Finding:
    last = (
        f" (the last gpulab.launch used {s.launch_port}, now free)"
        if s.launch_port and s.launch_port not in s.ports
        else ""
    )
    if not s.ports:
        return Finding(True, "no port held by this kernel", "besides Jupyter's own" + last)
    default = " including 29500, torchrun's and notebook_launcher's default," if 29500 in s.ports else ""
    return Finding(
        False,
        f"port(s) {', '.join(map(str, s.ports))} held by this kernel",
        f"this kernel listens on them{default} besides Jupyter's own: a store or process group from an "
        "earlier launch or cell is still open, and a launcher that picks one of these ports fails with "
        "'address already in use'",
        "destroy_process_group() / `del store` in the cell that opened them, or restart the kernel; "
        "gpulab.launch picks a free port every time.",
    )


def _shown(value: str | None) -> str:
    return "(unset)" if value is None else repr(value)
