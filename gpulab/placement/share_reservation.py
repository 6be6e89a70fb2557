"""Holding one share of a GPU, when an instructor lets several kernels share each card (a probe: files and locks).

``reserve_share(shares=3)`` holds share ``k`` of 3 of one GPU (``gpulab.reservations.share_slots``: the card's shared
lock, then the share's own), chosen under the machine's selection lock like ``reserve_gpus``. A card nobody holds must
be free by the policy (``selection.judge``); a card held in shares of the same count is a candidate while one of its
shares is free, whatever its memory reads (the other shares' kernels use it, within their caps); a card held whole, or
in shares of another count, never is. Of the candidates, the card with the fewest shares held comes first (a room of 20
on 8 cards spreads out: 3, 3, 3, 3, 2, 2, 2, 2), then a preferred UUID (a restarted kernel), then the best verdict. The
reservation's ``share`` says which share, and its cap (``core.shares``: the card less one CUDA context per kernel,
split evenly); ``env()`` gives ``CUDA_VISIBLE_DEVICES`` and ``GPULAB_MEMORY_CAP``. Never creates a CUDA context.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Collection, Mapping

from ..core.arguments import seconds, whole_number
from ..core.readings import GpuInfo, is_known
from ..core.shares import shares_of
from ..core.visible import visible_map
from ..machine.nvml import GpuReader
from ..machine.resolve import as_reader
from ..reservations.folder import require_flock, reservations_dir, selection_lock
from ..reservations.holders import reservation_holders
from ..reservations.share_slots import hold_share
from ..reservations.yours import yours_and_others
from .reservation import POLL_S, Reservation, validated_details
from .selection import Choice, NoFreeGpu, Policy, judge, rank_gpus, validated_policy

__all__ = ["reserve_share"]


def reserve_share(
    shares: int,
    machine: GpuReader | str | None = None,
    policy: Policy | None = None,
    *,
    reservations: str | os.PathLike[str] | None = None,
    wait_s: float = 0.0,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
    details: Mapping[str, str] | None = None,
    prefer: Collection[str] = (),
    server_digest: str | None = None,
) -> Reservation:
    """Hold one of ``shares`` shares of a GPU against every other process on this machine (see the module's
    docstring); ``NoFreeGpu`` says why each card was passed over when no share is free (after ``wait_s``)."""
    require_flock()
    shares = whole_number(shares, "shares", minimum=1, example="reserve_share(3) for one of 3 shares of a GPU")
    reader = as_reader(machine)
    policy = validated_policy(policy) or Policy()
    wait_s = seconds(wait_s, "wait_s", example="60")
    details = validated_details(details)
    d = reservations_dir(reservations)
    deadline = clock() + wait_s
    while True:
        gpus = [reader.info(i) for i in range(reader.count())]
        allowed = None
        if "CUDA_VISIBLE_DEVICES" in os.environ:
            allowed = {dev.physical_index for dev in visible_map(gpus).devices}
        with selection_lock(d):
            holders = reservation_holders([g.uuid for g in gpus], d)
            yours, taken = yours_and_others(holders)
            ranking = rank_gpus(gpus, policy, taken=taken, yours=yours)
            why: list[str] = []
            for g, _held in _candidates(gpus, holders, policy, shares, allowed, set(prefer), why):
                got = hold_share(d, g.uuid, shares, details, server_digest)
                if got is None:
                    why.append(
                        f"GPU {g.physical_index}: its last share was taken by a process that does not use "
                        f"{d / 'select.lock'}"
                    )
                    continue
                card_fd, share_fd, k = got
                share = shares_of(g.physical_index, _memory_total(g), shares)[k - 1]
                fds = {g.uuid: share_fd, f"{g.uuid}.card": card_fd}
                return Reservation(Choice((g,), ranking), d, fds, share=share)
            if clock() >= deadline:
                raise NoFreeGpu(_no_share(shares, len(gpus), why), ranking)
        sleep(min(POLL_S, max(0.0, deadline - clock())))


def _memory_total(g: GpuInfo) -> int:
    if not is_known(g.memory_total_bytes):
        raise NoFreeGpu(
            f"GPU {g.physical_index}'s memory size cannot be read, so its shares' caps cannot be computed. Check "
            "nvidia-smi, or ask the instructor for a kernel that holds a whole GPU."
        )
    return int(g.memory_total_bytes)


def _candidates(
    gpus: list[GpuInfo],
    holders: Mapping,
    policy: Policy,
    shares: int,
    allowed: set[int] | None,
    prefer: set[str],
    why: list[str],
) -> list[tuple[GpuInfo, int]]:
    """The cards a share may be taken on, best first, each with how many of its shares are held now; ``why`` gets a
    line for each card passed over."""
    out = []
    for g in gpus:
        if allowed is not None and g.physical_index not in allowed:
            continue
        h = holders.get(g.uuid)
        if h is None:
            verdict = judge(g, policy)
            if not verdict.free:
                why.append(f"GPU {g.physical_index}: {verdict.reason}")
                continue
            out.append((g, 0))
        elif not h.shares:
            why.append(f"GPU {g.physical_index}: held whole by {h}")
        elif any(n != shares for _, n, _ in h.shares):
            why.append(f"GPU {g.physical_index}: shared in another number of shares ({h})")
        elif len(h.shares) >= shares:
            why.append(f"GPU {g.physical_index}: {h}")
        else:
            out.append((g, len(h.shares)))
    out.sort(key=lambda c: (c[1], c[0].uuid not in prefer, c[0].physical_index))
    return out


def _no_share(shares: int, n_cards: int, why: list[str]) -> str:
    lines = "\n".join(f"  - {w}" for w in why)
    return (
        f"No free share of a GPU: each of this machine's {n_cards} GPUs is shared by up to {shares} kernels, and "
        f"none has a share free now.\n{lines}"
    )
