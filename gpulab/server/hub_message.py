"""What a JupyterHub spawn page says when a student's server cannot get a GPU (or a share of one): who holds which GPU,
as that student may read it (another student's server name and notebook stay theirs), how many GPUs or shares are free,
and what to do. ``gpulab.server.hub``'s hooks raise it as ``NoGpuForServer``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..machine.resolve import as_reader
from ..placement.selection import Policy, rank_gpus
from ..reservations.holders import reservation_holders

__all__ = ["no_gpu_message"]


def _holder_words(holder: Any, viewer: str) -> str:
    """Who holds a GPU, as the student ``viewer`` may read it: the Hub reads every private detail, but a server's name
    and a notebook's path are said only to their own user."""
    d = holder.details
    if holder.shares:  # a card held in shares: each share's holder, in the same words
        n = max(n for _, n, _ in holder.shares)
        each = "; ".join(f"share {k}: {_holder_words(h, viewer)}" for k, _, h in holder.shares)
        return f"{len(holder.shares)} of {n} shares held ({each})"
    if "for_user" in d:
        server = d.get("server", "(default)") if d["for_user"] == viewer else "(default)"
        return f"{d['for_user']}'s server" + ("" if server == "(default)" else f" {server!r}")
    who = holder.user or str(holder)
    if "kernel" in d or "notebook" in d:
        own = who == viewer and d.get("notebook")
        return f"a kernel of {who}" + (f" ({d['notebook']})" if own else "")
    return str(holder) if holder.mine else f"{who} (pid {holder.pid})"


def no_gpu_message(
    user: str, n_gpus: int, machine: str | None, policy: Policy | None, reservations: Path, *, shares: int = 1
) -> str:
    """What the Hub's spawn page says when a server cannot get its GPUs: who holds which GPU (each share of a shared
    one), how many GPUs (or shares) are free, and what to do."""
    reader = as_reader(machine)
    infos = [reader.info(i) for i in range(reader.count())]
    holders = reservation_holders([g.uuid for g in infos], reservations)
    taken = {uuid: _holder_words(h, user) for uuid, h in holders.items()}
    verdicts = rank_gpus(infos, policy, taken=taken)
    free = sum(v.free for v in verdicts)
    if shares > 1:
        free_shares = sum(_free_shares(v, holders.get(v.gpu.uuid), shares) for v in verdicts)
        head = (
            f"No GPU for {user}'s server: it needs one of {shares} shares of a GPU, and {free_shares} of this "
            f"machine's {len(infos) * shares} shares ({len(infos)} GPUs × {shares}) "
            f"{'is' if free_shares == 1 else 'are'} free now."
        )
    else:
        head = (
            f"No GPU for {user}'s server: it needs {n_gpus} free GPU(s), and {free} of this machine's {len(infos)} "
            f"{'is' if free == 1 else 'are'} free now."
        )
    lines = [head]
    for v in sorted(verdicts, key=lambda v: v.gpu.physical_index):
        lines.append(f"  GPU {v.gpu.physical_index}: {v.reason}")
    lines.append(
        "What to do: wait until someone stops their server (File > Hub Control Panel > Stop My Server) and "
        "start yours again, or ask the instructor to stop an idle server; a server that dies frees its "
        "GPUs within the Hub's poll interval."
    )
    return "\n".join(lines)


def _free_shares(verdict: Any, holder: Any, shares: int) -> int:
    """How many shares of ``shares`` of one card a server could take now: all of a free card, the unheld ones of a
    card shared in as many shares, none of a card held whole or busy."""
    if holder is None:
        return shares if verdict.free else 0
    if holder.shares and all(n == shares for _, n, _ in holder.shares):
        return max(shares - len(holder.shares), 0)
    return 0
