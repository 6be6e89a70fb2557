"""One view of the whole server for the room: every GPU, its memory and utilisation, and who is on it (pure).

What ``nvitop`` or ``gpustat`` show, plus gpulab's reservations: each GPU's row says which processes have a CUDA
context on it (Unix user, kernel) and who holds a gpulab reservation. ``ServerView`` is one reading of the server;
``render_text`` draws it for a terminal (``python -m gpulab watch``), ``render_html`` for a notebook cell. Readings
come from ``server.watch``. Taught in ``notebooks/workshop_guide.ipynb``.
"""

from __future__ import annotations

import html
import time
from collections.abc import Mapping
from dataclasses import dataclass, field

from ..core.readings import GpuInfo, Unavailable, is_known
from ..core.reservable import device_readings
from ..core.scheduler import Allocation
from ..core.units import format_bytes
from ..placement.selection import rank_gpus

__all__ = ["ServerView", "render_text", "render_html", "bar"]

BAR_CHARS = 20
_ANSI = {
    "green": "\x1b[32m",
    "yellow": "\x1b[33m",
    "red": "\x1b[31m",
    "dim": "\x1b[2m",
    "bold": "\x1b[1m",
    "end": "\x1b[0m",
}


@dataclass(frozen=True)
class ServerView:
    """One reading of the server: GPUs (physical numbering), who holds each reservation (by UUID), who runs each
    process (by pid), and whether the GPUs are described (SIMULATED) rather than this machine's."""

    gpus: tuple[GpuInfo, ...]
    holders: Mapping[str, str] = field(default_factory=dict)
    owners: Mapping[int, str] = field(default_factory=dict)
    host: str = ""
    taken_at: float = 0.0
    interval_s: float = 2.0
    simulated: bool = False
    error: str | None = None
    reservations: tuple = ()  # ``reservation_rows.ReservationRow``s: who holds each GPU (user, kernel, notebook, ...)
    unheld: tuple[str, ...] = ()  # JupyterHub servers that run on GPUs no reservation holds, in words
    yours: Mapping[str, str] = field(default_factory=dict)  # UUIDs held for the watching process, or its server
    shares: Mapping[str, tuple[int, int]] = field(default_factory=dict)  # a card held in shares: (held, of how many)
    scheduler: Allocation | None = None  # the SLURM job or Kubernetes pod the watching process runs in, if any

    def __str__(self) -> str:
        return render_text(self)

    def _repr_html_(self) -> str:
        return render_html(self)


def _share(used: object, total: object) -> float | None:
    return used / total if is_known(used) and is_known(total) and total else None  # type: ignore[operator]


def _level(share: float) -> str:
    return "green" if share < 0.5 else "yellow" if share < 0.9 else "red"


def bar(share: float | None, width: int = BAR_CHARS, color: bool = False) -> str:
    """``████████░░░░`` for a share of 0–1 (eighths of a block for the last one); blank when unknown."""
    if share is None:
        return " " * width
    eighths = round(max(0.0, min(share, 1.0)) * width * 8)
    full, part = divmod(eighths, 8)
    text = "█" * full + ("▏▎▍▌▋▊▉"[part - 1] if part else "")
    text = text + "░" * (width - len(text))
    return f"{_ANSI[_level(share)]}{text}{_ANSI['end']}" if color else text


def _holder(view: ServerView, uuid: str) -> str:
    """Who holds the GPU or MIG slice ``uuid``, in words; empty when nobody does."""
    if uuid not in view.holders:
        return ""
    return view.yours.get(uuid) or f"reserved by {view.holders[uuid]}"


def _who(view: ServerView, g: GpuInfo) -> list[str]:
    lines = [_holder(view, g.uuid)] if g.uuid in view.holders else []
    if isinstance(g.processes, Unavailable):
        lines.append(f"processes: {g.processes}")
    else:
        for p in g.processes:
            mem = format_bytes(p.used_memory_bytes) if is_known(p.used_memory_bytes) else "N/A"
            lines.append(f"{view.owners.get(p.pid, f'pid {p.pid} {p.name}')}, {mem}")
    return lines or ["nobody"]


def _title(view: ServerView) -> str:
    when = time.strftime("%H:%M:%S", time.localtime(view.taken_at)) if view.taken_at else ""
    head = f"gpulab watch — {view.host or 'this machine'} — {len(view.gpus)} GPU(s) — {when}"
    return head + (" — SIMULATED: described GPUs, not this machine's" if view.simulated else "")


def _free_line(view: ServerView) -> str:
    """Which GPUs are free now, by the rule every view applies (``placement.selection.judge``), and which are yours."""
    taken = {u: t for u, t in view.holders.items() if u not in view.yours}
    verdicts = rank_gpus(device_readings(view.gpus), taken=taken, yours=view.yours)  # a MIG card: its slices
    free = [v.gpu.label for v in sorted(verdicts, key=_order) if v.free]
    yours = [v.gpu.label for v in sorted(verdicts, key=_order) if v.yours]
    mine = f"; yours: GPU {', '.join(map(str, yours))}" if yours else ""
    n_shares, shares = _free_shares(view)
    if free:
        more = f"; and {n_shares} share(s) of shared cards: {shares}" if n_shares else ""
        return f"free now: GPU {', '.join(map(str, free))} — hold one with gpulab.reserve_gpus(1){more}{mine}"
    if n_shares:
        return (
            f"no whole GPU is free now, but {n_shares} share(s) are: {shares}; gpulab.reserve_gpus(1, wait_s=600) "
            f"waits for a whole GPU{mine}"
        )
    return "no GPU is free now: every one is busy or reserved (gpulab.reserve_gpus(1, wait_s=600) waits for one)" + mine


def _order(verdict) -> tuple[int, int]:
    return verdict.gpu.physical_index, -1 if verdict.gpu.mig_index is None else verdict.gpu.mig_index


def _free_shares(view: ServerView) -> tuple[int, str]:
    """How many shares of the cards held in shares are free, and which, in words (``"1 of GPU 0's 3, …"``), with the
    kernel that takes one."""
    free = [(n - held, n, g.physical_index) for g in view.gpus for held, n in [view.shares.get(g.uuid, (0, 0))]]
    free = [f for f in free if f[0] > 0]
    counts = {n for _, n, _ in free}
    if not free:
        return 0, ""
    how = f"--shares {counts.pop()}" if len(counts) == 1 else "--shares N"
    which = ", ".join(f"{k} of GPU {i}'s {n}" for k, n, i in free)
    return sum(k for k, _, _ in free), (
        f"{which} (a kernel installed with python -m gpulab kernelspec install --n-gpus 1 {how} takes one)"
    )


def render_text(view: ServerView, color: bool = False) -> str:
    """The view as lines of text, one row per GPU (and per MIG slice), who is on it on the right."""
    b = (lambda k: _ANSI[k]) if color else (lambda k: "")
    out = [f"{b('bold')}{_title(view)}{b('end')}", *_scheduler_lines(view)]
    if view.error:
        return "\n".join(out + [f"No GPU can be read: {view.error}"])
    if not view.gpus:
        return "\n".join(out + ["NVML sees no GPU on this machine."])
    out.append(f"{'GPU':>3}  {'name':<20}  {'memory used':<{BAR_CHARS + 20}}  {'util':<{BAR_CHARS // 2 + 6}}  who")
    for g in view.gpus:
        name = g.name.removeprefix("NVIDIA ")[:20]
        share = _share(g.memory_used_bytes, g.memory_total_bytes)
        mem = (
            f"{format_bytes(g.memory_used_bytes)} / {format_bytes(g.memory_total_bytes)}"
            if share is not None
            else str(g.memory_used_bytes)
        )
        util = g.utilization_gpu_percent
        util_text = (
            f"{bar(util / 100, BAR_CHARS // 2, color)} {util:>3} %"
            if is_known(util)
            else f"{'MIG: N/A' if g.mig_enabled is True else 'N/A':<{BAR_CHARS // 2 + 6}}"
        )
        who = _who(view, g)
        out.append(
            f"{g.physical_index:>3}  {name:<20}  {bar(share, BAR_CHARS, color)} {mem:<19}  {util_text}  {who[0]}"
        )
        pad = " " * (3 + 2 + 20 + 2 + BAR_CHARS + 1 + 19 + 2 + BAR_CHARS // 2 + 6 + 2)
        out += [pad + line for line in who[1:]]
        for m in g.mig_devices:  # each slice under its card: its label and profile, its memory, who holds it
            s = _share(m.memory_used_bytes, m.memory_total_bytes)
            mem = f"{format_bytes(m.memory_used_bytes)} / {format_bytes(m.memory_total_bytes)}" if s is not None else ""
            out.append(
                f"{'':>3}  {f'{g.physical_index}/mig{m.mig_index} {m.profile}':<20}  {bar(s, BAR_CHARS, color)} "
                f"{mem:<19}  {'':<{BAR_CHARS // 2 + 6}}  {_holder(view, m.uuid) or 'nobody'}"
            )
    out += _reservation_lines(view)
    out += list(view.unheld)
    out.append(_free_line(view))
    return "\n".join(out)


def _scheduler_lines(view: ServerView) -> list[str]:
    """Under a scheduler: its allocation, and why the reservations shown below decide less than it does."""
    if view.scheduler is None:
        return []
    return [f"in {view.scheduler}", f"  ({view.scheduler.course_tools()})"]


def _reservation_lines(view: ServerView) -> list[str]:
    if not view.reservations:
        return []
    return ["reservations (user · kernel · notebook · idle · ports):"] + [f"  {row}" for row in view.reservations]


def _html_bar(share: float | None) -> str:
    if share is None:
        return "N/A"
    colour = {"green": "#4a4", "yellow": "#cb2", "red": "#c33"}[_level(share)]
    return (
        f"<div style='width:12em;background:#eee;height:0.9em;display:inline-block;vertical-align:middle'>"
        f"<div style='width:{100 * min(share, 1.0):.0f}%;background:{colour};height:100%'></div></div>"
    )


def render_html(view: ServerView) -> str:
    """The same view as an HTML table (the notebook's live cell)."""
    e = html.escape
    head = f"<b>{e(_title(view))}</b>"
    if view.simulated:
        head = head.replace("SIMULATED", "<span style='color:#b00'>SIMULATED</span>")
    head += "".join(f"<br>{e(line)}" for line in _scheduler_lines(view))
    if view.error or not view.gpus:
        return f"<div>{head}<p>{e(view.error or 'NVML sees no GPU on this machine.')}</p></div>"
    rows = []
    for g in view.gpus:
        share = _share(g.memory_used_bytes, g.memory_total_bytes)
        util = g.utilization_gpu_percent
        mem = f"{format_bytes(g.memory_used_bytes)} / {format_bytes(g.memory_total_bytes)}" if share is not None else ""
        rows.append(
            f"<tr><td>{g.physical_index}</td><td>{e(g.name)}</td><td>{_html_bar(share)} {e(mem)}</td>"
            f"<td>{_html_bar(util / 100) + f' {util} %' if is_known(util) else 'N/A'}</td>"
            f"<td>{'<br>'.join(e(w) for w in _who(view, g))}</td></tr>"
        )
        for m in g.mig_devices:  # each slice under its card, as in the terminal
            s = _share(m.memory_used_bytes, m.memory_total_bytes)
            mem = f"{format_bytes(m.memory_used_bytes)} / {format_bytes(m.memory_total_bytes)}" if s is not None else ""
            rows.append(
                f"<tr><td>{g.physical_index}/mig{m.mig_index}</td><td>{e(m.name)}</td><td>{_html_bar(s)} {e(mem)}</td>"
                f"<td></td><td>{e(_holder(view, m.uuid) or 'nobody')}</td></tr>"
            )
    table = (
        "<table style='border-collapse:collapse'><tr><th>GPU</th><th>name</th><th>memory used</th><th>util</th>"
        "<th style='text-align:left'>who</th></tr>" + "".join(rows) + "</table>"
    )
    reservations = "".join(f"<li>{e(str(row))}</li>" for row in view.reservations)
    if reservations:
        reservations = f"<p>reservations (user · kernel · notebook · idle · ports):</p><ul>{reservations}</ul>"
    unheld = "".join(f"<p style='color:#b00'>{e(line)}</p>" for line in view.unheld)
    return f"<div>{head}{table}{reservations}{unheld}<p>{e(_free_line(view))}</p></div>"
