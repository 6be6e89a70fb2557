"""Every reservation on the server, as ``watch`` and ``release`` list it (a probe: lock files, /proc).

One row per held GPU, share of a GPU or MIG slice: the Unix user that holds it (the locking process's owner, read
from ``/proc``, not the name written into the file, which anyone could write), the kernel, the notebook, the idle time
and the reservation's ports.

- **The notebook path and the server's name are private.** A student sees those of their own reservations only; root
  and the members of the instructor group (``GPULAB_INSTRUCTOR_GROUP``, default ``gpulab-instructors``) see every
  one. They are kept in each holder's private file (``gpulab.reservations``), which other students cannot read, so no
  file or command shows them; the rows say that something is hidden.
- **Idle time** is the time since the reservation file was last touched: the kernel provisioner touches it when
  jupyter-server saw the kernel active (its ``last_activity``, the clock the culler uses), so a student's idle
  kernel shows what the culler will act on. A reservation taken with ``reserve_gpus`` in a cell shows how long it is
  held.
- **Release** of one's own (``python -m gpulab release``) is ``release``'s: it ends the process a row names.

Only the standard library is used, so a student's own Python can run it. Taught in ``notebooks/workshop_guide.ipynb``.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..core.readings import GpuInfo, is_known
from ..core.shares import share_cap_bytes
from ..core.units import format_bytes
from ..reservations.folder import DEFAULT_INSTRUCTOR_GROUP, INSTRUCTOR_GROUP_VAR, lock_path, reservations_dir
from ..reservations.holders import Holder, reservation_holders, uid_of, user_name
from ..reservations.share_slots import share_key

__all__ = [
    "ReservationRow",
    "reservation_rows",
    "may_see_all_paths",
    "INSTRUCTOR_GROUP_VAR",
    "DEFAULT_INSTRUCTOR_GROUP",
    "HIDDEN",
    "HIDDEN_SERVER",
]

HIDDEN = "(another user's notebook)"
HIDDEN_SERVER = "(another user's server)"


@dataclass(frozen=True)
class ReservationRow:
    """One held GPU as ``watch`` lists it (``notebook`` is ``HIDDEN`` when the viewer may not see it)."""

    physical_index: int
    uuid: str
    pid: int | None
    user: str
    kernel: str
    notebook: str
    idle_s: float | None
    ports: str
    mine: bool = False
    for_server: bool = False
    """A JupyterHub server's reservation: ``kernel`` is then the server's name (``"(default)"``)."""
    share: str = ""
    """For one share of a card: which, and the memory its holder uses against its cap where NVML names the holder's
    process (``"share 2 of 3 · uses 1.2 GiB of its 25.8 GiB cap"``); for a MIG slice, which (``"MIG slice 0
    (3g.40gb)"``); empty for a whole GPU."""
    key: str = ""
    """The name the reservation goes by in the folder: the GPU's UUID, a share's key, or a MIG slice's UUID."""

    def __str__(self) -> str:
        idle = "" if self.idle_s is None else f" · idle {_duration(self.idle_s)}"
        kernel = (
            f"server {self.kernel}"
            if self.for_server and self.kernel
            else f"kernel {self.kernel[:8]}"
            if self.kernel
            else f"pid {self.pid}"
        )
        where = f" · {self.notebook}" if self.notebook else ""
        ports = f" · ports {self.ports}" if self.ports else ""
        who = "reserved by this notebook" if self.mine else self.user
        share = f" {self.share}" if self.share else ""
        return f"GPU {self.physical_index}{share}: {who} · {kernel}{where}{idle}{ports}"


def _duration(seconds: float) -> str:
    s = max(0, int(seconds))
    return f"{s} s" if s < 60 else f"{s // 60} min" if s < 3600 else f"{s // 3600} h {s % 3600 // 60:02d} min"


def may_see_all_paths(uid: int | None = None) -> bool:
    """True for root and for members of the instructor group (``GPULAB_INSTRUCTOR_GROUP``)."""
    import grp

    uid = os.geteuid() if uid is None else uid
    if uid == 0:
        return True
    name = os.environ.get(INSTRUCTOR_GROUP_VAR) or DEFAULT_INSTRUCTOR_GROUP
    try:
        group = grp.getgrnam(name)
    except KeyError:  # no such group on this machine: nobody is an instructor but root
        return False
    import pwd

    try:
        me = pwd.getpwuid(uid)
    except KeyError:
        return False
    mine = {os.getegid(), *os.getgroups()} if uid == os.geteuid() else {me.pw_gid}
    return group.gr_gid in mine or me.pw_name in group.gr_mem


def reservation_rows(
    gpus: Sequence[GpuInfo],
    reservations: str | os.PathLike[str] | None = None,
    *,
    viewer_uid: int | None = None,
    clock: Callable[[], float] = time.time,
) -> list[ReservationRow]:
    """Every held GPU of ``gpus`` with its holder, as the viewer (default: this process's user) may see it; a card held
    in shares has a row for each share held, with its holder and the memory it uses against its cap."""
    viewer = os.geteuid() if viewer_uid is None else viewer_uid
    see_all = may_see_all_paths(viewer)
    holders = reservation_holders([g.uuid for g in gpus] + [m.uuid for g in gpus for m in g.mig_devices], reservations)
    d = reservations_dir(reservations, create=False)
    rows = []
    for g in gpus:
        for m in g.mig_devices:  # a MIG slice is held by its own UUID, as a whole GPU is
            if m.uuid in holders:
                part = f"MIG slice {m.mig_index}" + (f" ({m.profile})" if m.profile else "")
                rows.append(_row(g, holders[m.uuid], m.uuid, d, viewer, see_all, clock, part))
        h = holders.get(g.uuid)
        if h is None:
            continue
        if h.shares:
            for k, n, share_holder in h.shares:
                text = _share_text(g, k, n, share_holder.pid)
                rows.append(_row(g, share_holder, share_key(g.uuid, k, n), d, viewer, see_all, clock, text))
        else:
            rows.append(_row(g, h, g.uuid, d, viewer, see_all, clock))
    return rows


def _share_text(g: GpuInfo, k: int, n: int, pid: int | None) -> str:
    """``"share 2 of 3 · uses 1.2 GiB of its 25.8 GiB cap"``: the memory NVML shows for the holder's process, where it
    shows one (a Hub-held share's kernels are the server's, not the Hub's: then only the cap)."""
    try:
        cap = format_bytes(share_cap_bytes(int(g.memory_total_bytes), n)) if is_known(g.memory_total_bytes) else None
    except ValueError:
        cap = None
    used = None
    if isinstance(g.processes, tuple):
        used = next((p.used_memory_bytes for p in g.processes if p.pid == pid and is_known(p.used_memory_bytes)), None)
    if cap is None:
        return f"share {k} of {n}"
    if used is None:
        return f"share {k} of {n} ({cap} cap)"
    return f"share {k} of {n} · uses {format_bytes(used)} of its {cap} cap"


def _row(
    g: GpuInfo,
    h: Holder,
    key: str,
    d: Path,
    viewer: int,
    see_all: bool,
    clock: Callable[[], float],
    share: str = "",
) -> ReservationRow:
    """One row of ``watch``: holder ``h`` of GPU ``g`` (or of its share ``key``), as the viewer may see it."""
    uid = uid_of(h.pid)
    own = see_all or (uid is not None and uid == viewer)
    notebook = HIDDEN if "notebook" in h.hidden else h.details.get("notebook", "")
    if notebook and not own:  # this process could read it (root), but the viewer asked about may not
        notebook = HIDDEN
    try:
        idle = clock() - os.stat(lock_path(d, key)).st_mtime if h.details.get("kernel") else None
    except OSError:
        idle = None
    user = user_name(uid) or h.user or "?"
    if h.details.get("for_user"):  # a JupyterHub reservation (gpulab.server.hub): the Hub holds it for a user
        user = f"{h.details['for_user']} via {user}"
    server = HIDDEN_SERVER if "server" in h.hidden or (h.details.get("server") and not own) else ""
    kernel = h.details.get("kernel") or server or h.details.get("server", "")
    return ReservationRow(
        g.physical_index,
        g.uuid,
        h.pid,
        user,
        kernel,
        notebook,
        idle,
        h.details.get("ports", ""),
        h.mine,
        bool(h.details.get("for_user")) and not h.details.get("kernel"),
        share,
        key,
    )
