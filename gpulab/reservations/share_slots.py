"""Shares of one GPU in the reservations folder: a lock file per share, beside the card's own (a probe: files, locks).

An instructor may let ``n`` kernels share each GPU (``gpulab.core.shares``). Share ``k`` of ``n`` of the GPU ``uuid``
is held by an exclusive ``flock`` on ``gpu-<uuid>.share-<k>-of-<n>.lock``, exactly as a whole GPU is held on
``gpu-<uuid>.lock`` (``folder.hold``), so a share has the same guarantees: never held twice, and let go however its
holder ends (shutdown, culling, ``kill -9``, a Hub stop). Its holder names itself in files of its own
(``gpu-<uuid>.share-<k>-of-<n>.holder.<uid>.json`` and the private one), with the same privacy as a whole GPU's.

Whole GPUs and shares never meet on one card, and the kernel, not a convention, keeps them apart. A share holder first
takes a *shared* ``flock`` on the card's own lock file, then the share's exclusive one; a whole-GPU holder takes an
*exclusive* ``flock`` on the card's lock file. The kernel grants an exclusive lock only while no shared one is held, and
a shared one only while no exclusive one is, so a card is held either whole or in shares, whatever order processes
race in, with or without the machine's selection lock. A share is held only while its card's shared lock is held
(both go with the process). Kernels that asked for different numbers of shares of one card would split it twice: a
share holder gives its share back when it sees a share of another count held on the same card.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from .folder import _HELD, lock_path, open_lock_file, require_flock, try_lock, write_holder

__all__ = [
    "SharesHeld",
    "share_key",
    "parse_share_key",
    "share_lock_path",
    "hold_share",
    "held_shares",
]

_SHARE = re.compile(r"^(?P<uuid>.+)\.share-(?P<k>[0-9]+)-of-(?P<n>[0-9]+)$")


def share_key(uuid: str, share: int, shares: int) -> str:
    """The name a share goes by in the folder, where a whole GPU's UUID goes: ``<uuid>.share-<k>-of-<n>``."""
    return f"{uuid}.share-{share}-of-{shares}"


def parse_share_key(key: str) -> tuple[str, int, int] | None:
    """``(uuid, k, n)`` of a share's key, None for a whole GPU's UUID."""
    m = _SHARE.match(key)
    return (m["uuid"], int(m["k"]), int(m["n"])) if m else None


def share_lock_path(reservations: Path, uuid: str, share: int, shares: int) -> Path:
    """The file whose exclusive lock holds share ``share`` of ``shares`` of the GPU ``uuid``."""
    return lock_path(reservations, share_key(uuid, share, shares))


@dataclass(frozen=True)
class SharesHeld:
    """The shares of one card held now, by any process: ``share number -> share count``, as the lock files say."""

    held: tuple[tuple[int, int], ...]

    @property
    def counts(self) -> set[int]:
        """The share counts the card is held in now (one, unless kernels that asked for different counts met)."""
        return {n for _, n in self.held}


def _shared_lock(fd: int) -> bool:
    fcntl = require_flock()
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        return True
    except BlockingIOError:
        return False


def held_shares(reservations: Path, uuid: str) -> SharesHeld:
    """Which share lock files of the card are held now (tried, then let go)."""
    fcntl = require_flock()
    found = []
    for path in reservations.glob(f"gpu-{uuid}.share-*-of-*.lock"):
        parsed = parse_share_key(path.name.removeprefix("gpu-").removesuffix(".lock"))
        if parsed is None or parsed[0] != uuid:
            continue
        fd = open_lock_file(path)
        try:
            if try_lock(fd):
                fcntl.flock(fd, fcntl.LOCK_UN)
            else:
                found.append((parsed[1], parsed[2]))
        finally:
            os.close(fd)
    return SharesHeld(tuple(sorted(found)))


def hold_share(
    reservations: Path,
    uuid: str,
    shares: int,
    details: Mapping[str, str] | None = None,
    server_digest: str | None = None,
    prefer: int | None = None,
) -> tuple[int, int, int] | None:
    """Hold a free share of ``shares`` of the GPU ``uuid``: ``(card_fd, share_fd, k)``, the card's shared lock, the
    share's exclusive lock and the share's number (from 1), with the holder's files written; None when the card is
    held whole, every share of it is held, or it is held in shares of another count. ``prefer`` is tried first."""
    fcntl = require_flock()
    card = open_lock_file(lock_path(reservations, uuid))
    if not _shared_lock(card):  # held whole
        os.close(card)
        return None
    order = [prefer] if prefer and 1 <= prefer <= shares else []
    order += [k for k in range(1, shares + 1) if k not in order]
    for k in order:
        fd = open_lock_file(share_lock_path(reservations, uuid, k, shares))
        if not try_lock(fd):
            os.close(fd)
            continue
        if any(n != shares for n in held_shares(reservations, uuid).counts):  # split another way already
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)
            break
        _HELD[fd] = (reservations, share_key(uuid, k, shares))
        write_holder(fd, details, server_digest)
        return card, fd, k
    fcntl.flock(card, fcntl.LOCK_UN)
    os.close(card)
    return None
