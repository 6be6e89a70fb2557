"""What the GPU picker says, as plain text: its header, its free rule, who holds each GPU, why a ticked GPU is not free.

Kept apart from ``picker.py`` (the widget) so that the words are the same in the widget, in its text form and in a
printed handout, and can be read and tested without ipywidgets. ``GPULAB_PICK_GPUS`` (``"2,0"`` or ``"free:2"``) is read
here too: it is text a person writes.
"""

from __future__ import annotations

import html
import textwrap
from collections.abc import Mapping, Sequence
from typing import Any

from ..core.arguments import index_list, is_whole_number
from ..core.readings import GpuInfo, Unavailable, is_known
from ..core.tables import text_table
from ..core.units import format_bytes
from ..machine.host import host_info
from .selection import Policy

PICK_ENV = "GPULAB_PICK_GPUS"
HEADER = ("GPU", "model", "memory", "utilisation", "in use by")
WIDTHS = (130, 190, 250, 90, 330)  # px, one per HEADER column: the widget's rows and header line up
# one colour per state, for the badge and the bar's fill alike; the legend under the table names them
BADGE = {"free": "#2a7d2a", "yours": "#1f5fa8", "busy": "#b36200", "hidden": "#777"}
BAR_STYLE = {"free": "success", "yours": "info", "busy": "warning", "hidden": ""}
SIMULATED_BANNER = (
    "<b style='color:#a60'>SIMULATED machine</b> (described GPUs, not this computer's): nothing you apply here "
    "changes this kernel."
)


def parse_pick(text: str) -> tuple[int, ...] | int:
    """``"2,0"`` → physical GPUs 2 then 0; ``"free:2"`` → pick two free ones (returned as the int 2)."""
    if not isinstance(text, str):
        raise TypeError(f'{PICK_ENV} is text such as "2,0" or "free:2"; got a {type(text).__name__}.')
    t = text.strip()
    try:
        if t.startswith("free:"):
            n = int(t[5:])
            if n >= 1:
                return n
            raise ValueError
        return tuple(int(x) for x in t.split(",") if x.strip())
    except ValueError:
        raise ValueError(
            f"{PICK_ENV}={text!r} is not understood: give physical GPU numbers in the order cuda:0, "
            'cuda:1, … should get them ("2,0"), or "free:N" to pick N free GPUs.'
        ) from None


BADGE_COLOURS = {"free": "green", "yours": "blue", "busy": "orange", "hidden": "grey"}
"""The colour word the legend gives each state; the widget paints the badge (and the bar's fill) in it."""


def free_rule(policy: Policy | None) -> str:
    """The free rule in one sentence, as the widget states it under the table (``selection.judge`` applies it)."""
    p = policy or Policy()
    procs = "" if p.allow_processes else ", no process on it"
    c = BADGE_COLOURS
    return (
        f"free ({c['free']} badge) = at most {p.max_memory_used_fraction * 100:.0f} % of memory used, at most "
        f"{p.max_utilization_percent} % utilisation{procs}, not reserved by anyone — the rule Pick and "
        f"gpulab.choose_gpus apply. yours ({c['yours']} badge) = reserved by this notebook or for the server it "
        f"runs in: Pick ticks these first. busy ({c['busy']} badge) = anything else. The bar shows the memory used."
    )


def who_uses(
    g: GpuInfo,
    allowed: set[int],
    holders: dict[str, str],
    hidden: str = "hidden from this kernel by CUDA_VISIBLE_DEVICES",
) -> str:
    """The "in use by" column: hidden from this kernel (``hidden``: why), whose reservation (``holders``: the words,
    "reserved by …" or "reserved for …"), which processes (or why unknown)."""
    who = []
    if g.physical_index not in allowed:
        who.append(hidden)
    if g.uuid in holders:
        who.append(holders[g.uuid])
    if isinstance(g.processes, Unavailable):
        who.append(f"processes {g.processes}")
    elif g.processes:
        who.append(", ".join(f"pid {p.pid} {p.name}" for p in g.processes))
    return "; ".join(who) or "no process"


def who_words(
    gpus: Sequence[GpuInfo], holders: Mapping[str, Any], taken: Mapping[str, str], yours: Mapping[str, str]
) -> dict[str, str]:
    """The "in use by" words of each held GPU (``taken``: others', ``yours``: this kernel's or its server's); a card
    held in shares reads this kernel's share as ``"reserved by this notebook: share 2 of 3 of GPU 4 (25.8 GiB cap)"``,
    else how many of its shares are held and by whom."""
    from ..core.shares import GpuShare, share_cap_bytes

    out = {**{u: f"reserved by {t}" for u, t in taken.items()}, **yours}
    for g in gpus:
        h = holders.get(g.uuid)
        if h is None or not h.shares:
            continue
        mine = [(k, n) for k, n, holder in h.shares if holder.mine or holder.this_server]
        if mine and is_known(g.memory_total_bytes):
            k, n = mine[0]
            share = GpuShare(g.physical_index, k, n, share_cap_bytes(int(g.memory_total_bytes), n))
            whose = "this notebook" if h.mine else "the server this kernel runs in"
            out[g.uuid] = f"reserved by {whose}: {share}"
        else:
            out[g.uuid] = f"reserved: {h}"
    return out


def not_free_warning(g: GpuInfo, policy: Policy | None, taken: dict[str, str]) -> str | None:
    """One sentence on why a ticked GPU is not free (who holds it, how full, how busy), or None when it is free.

    ``taken`` holds other kernels' reservations only: this kernel's own is no reason to untick."""
    policy = policy or Policy()
    why = []
    if g.uuid in taken:
        why.append(f"reserved by {taken[g.uuid]}")
    used, total = g.memory_used_bytes, g.memory_total_bytes
    if is_known(used) and is_known(total) and total and used / total > policy.max_memory_used_fraction:
        why.append(f"{used / total:.0%} full ({format_bytes(used)} of {format_bytes(total)})")
    if is_known(g.utilization_gpu_percent) and g.utilization_gpu_percent > policy.max_utilization_percent:
        why.append(f"{g.utilization_gpu_percent} % busy")
    if not isinstance(g.processes, Unavailable) and g.processes and not policy.allow_processes:
        why.append(f"{len(g.processes)} process(es) on it (pid {', '.join(str(p.pid) for p in g.processes)})")
    if g.mig_enabled is True:
        why.append("in MIG mode: CUDA uses its MIG slices, not the whole GPU")
    if not why:
        return None
    return (
        f"GPU {g.label} is not free: {', '.join(why)}. Work sent there shares it with others and may run "
        "slowly or out of memory; untick it, or press the 'Pick N free' button."
    )


def status_html(text: str, ok: bool | None) -> str:
    """The picker's status line: green when done, red when refused, amber when done with a caveat (``ok`` None)."""
    color = {True: "#060", False: "#b00", None: "#a60"}[ok]
    return (
        f"<pre style='color:{color};white-space:pre-wrap;word-break:normal;overflow-wrap:anywhere'>"
        f"{html.escape(text)}</pre>"
    )  # at spaces: JupyterLab's own pre style breaks mid-word


def cpu_lines(reader_error: str | None) -> list[str]:
    """What the picker shows on a machine without a GPU: the CPU, why no GPU is listed, what would appear."""
    h = host_info()
    why = reader_error or "NVML lists no GPU"
    return [
        f"CPU: {h.cpu_model}, {h.usable_cores} usable cores — the only device here.",
        f"No NVIDIA GPU: {why}",
        f"On a GPU machine one row per GPU appears here ({' · '.join(HEADER)}); ticking rows builds "
        "`CUDA_VISIBLE_DEVICES` and shows which `cuda:k` each becomes.",
    ]


def memory_text(g: GpuInfo) -> str:
    """``"1.2 GiB / 80 GiB"``, or why the memory is unknown."""
    used, total = g.memory_used_bytes, g.memory_total_bytes
    return f"{format_bytes(used)} / {format_bytes(total)}" if is_known(used) and is_known(total) else str(used)


def utilisation_text(g: GpuInfo) -> str:
    """``"37 %"``; ``"N/A (MIG)"`` for a GPU in MIG mode, which reports no whole-GPU utilisation."""
    u = g.utilization_gpu_percent
    return "N/A (MIG)" if g.mig_enabled is True else f"{u} %" if is_known(u) else str(u)


def starting_pick(start: object) -> tuple[int, ...] | int | None:
    """The picker's starting selection from ``selected=`` (or ``GPULAB_PICK_GPUS``): physical GPUs in order, a
    number of free GPUs to pick, or None. A bare number is refused: it could mean either."""
    if is_whole_number(start):
        raise TypeError(
            f"selected={start} is ambiguous: for physical GPU {start} write selected=[{start}]; for "
            f'{start} free GPU(s) write selected="free:{start}".'
        )
    if start is None:
        return None
    if isinstance(start, str):
        return parse_pick(start)
    return index_list(start, "selected", example='[2, 3] or "free:2"')


def text_form(head: str, rows: Sequence[tuple[GpuInfo, str, str]], rule: str, mapping: str, warnings: list[str]) -> str:
    """The picker as text: ``head``, one row per GPU (the GPU, its badge, who uses it) under the widget's header, the
    free rule, then the selection's ``mapping`` and its ``warnings`` (when something is selected)."""
    table = [[f"{g.label} [{state}]", g.name, memory_text(g), utilisation_text(g), who] for g, state, who in rows]
    lines = [
        head,
        text_table(HEADER, table, indent="  "),
        textwrap.fill(rule, 110, initial_indent="  ", subsequent_indent="  "),
    ]
    if mapping:
        lines += [mapping, *(f"  ⚠ {w}" for w in warnings)]
    return "\n".join(lines)
