"""``python -m gpulab release GPU [--share K]``: free a reservation of one's own by ending the process that holds it.

A lock belongs to its process, and only ending that process frees it. A Jupyter kernel is shut down through its own
server (``kernel_server``), as JupyterLab's "Shut Down Kernel" does: a kernel merely killed would be started again by
the server's restarter, taking a free GPU again. Where the server cannot be asked, the kernel is stopped with a signal
and the message says it may come back. A student may release only their own reservations; root may release any. The
operating system enforces the same (a student cannot signal another user's process, nor read another's server
token); the refusal here says it first.

A card held in shares (or split into MIG slices) has a holder per share: ``--share K`` names the one to end, and
``release`` waits for that share alone. Without it, a card with one holder is released; one with several is not
(which of several students' kernels to end is the caller's choice): the refusal lists them. Only the standard library
is used, so a student's own Python can run it. Taught in ``notebooks/workshop_guide.ipynb``.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Sequence

from ..core.readings import GpuInfo
from ..reservations.holders import reservation_holders, uid_of
from .kernel_server import NoServer, find_kernel_server, shut_down_kernel
from .reservation_list import ReservationRow, reservation_rows

__all__ = ["release_gpu", "ReleaseRefused"]


class ReleaseRefused(PermissionError):
    """A reservation that is not the caller's, or nothing to release; the message says whose it is and what to do."""


def _part(row: ReservationRow) -> str:
    """``"share 2 of 3 of GPU 4"``, ``"MIG slice 0 of GPU 0"`` or ``"GPU 4"``: what the row holds, in words."""
    part = row.share.split(" ·")[0].split(" (")[0]
    return f"{part} of GPU {row.physical_index}" if part else f"GPU {row.physical_index}"


def _listing(rows: list[ReservationRow]) -> str:
    return "\n".join(f"  {r} (pid {r.pid})" for r in rows)


def _pick(physical_index: int, rows: list[ReservationRow], share: int | None) -> ReservationRow:
    """The row to release: the share asked for, or the card's one holder; ``ReleaseRefused`` says which exist."""
    if not rows:
        raise ReleaseRefused(f"GPU {physical_index} is not reserved by anyone: there is nothing to release.")
    if share is not None:
        picked = [r for r in rows if r.share.startswith(f"share {share} of ")]
        if not picked:
            held = ", ".join(r.share.split(" ·")[0].split(" (")[0] for r in rows if r.share.startswith("share "))
            raise ReleaseRefused(
                f"share {share} of GPU {physical_index} is not held: "
                + (f"the shares held are {held}." if held else "the card is not held in shares.")
                + f" python -m gpulab watch lists who holds what.\n{_listing(rows)}"
            )
        return picked[0]
    if len(rows) == 1:
        return rows[0]
    shares = [r for r in rows if r.share.startswith("share ")]
    how = (
        f"python -m gpulab release {physical_index} --share {shares[-1].share.split()[1]} ends that share's holder "
        "alone"
        if shares
        else "end the one you mean with kill PID, or ask the instructor"
    )
    raise ReleaseRefused(
        f"GPU {physical_index} is held in {'shares' if shares else 'MIG slices'} by {len(rows)} processes; release one "
        f"{'share' if shares else 'slice'} at a time:\n{_listing(rows)}\n{how}."
    )


def _freed(g: GpuInfo, key: str, reservations: str | os.PathLike[str] | None, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while any(r.key == key for r in reservation_rows([g], reservations)):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def release_gpu(
    gpus: Sequence[GpuInfo],
    physical_index: int,
    reservations: str | os.PathLike[str] | None = None,
    *,
    share: int | None = None,
    timeout_s: float = 10.0,
) -> str:
    """End the holder of GPU ``physical_index``'s reservation (or of its share ``share``), if it is the caller's (or
    the caller is root): a Jupyter kernel through its server, so that it stays down; any other process with signals.
    Returns what was done, in words. ``ReleaseRefused`` otherwise."""
    by_index = {g.physical_index: g for g in gpus}
    if physical_index not in by_index:
        raise ValueError(
            f"there is no GPU {physical_index} here: the GPUs are {sorted(by_index)} (physical "
            "numbering, as python -m gpulab watch shows them)."
        )
    g = by_index[physical_index]
    row = _pick(physical_index, reservation_rows([g], reservations), share)
    what = _part(row)
    uid = uid_of(row.pid)
    me = os.geteuid()
    if row.pid is None or uid is None:
        raise ReleaseRefused(
            f"{what} is held by a process this machine cannot see (another container, "
            "or one that has not written its name yet); ask the instructor."
        )
    if row.pid == os.getpid():
        raise ReleaseRefused(
            f"{what} is reserved by this very process: call .release() on its "
            "Reservation (or shut the kernel down) instead."
        )
    if uid != me and me != 0:
        who = f"kernel {row.kernel[:8]}" if row.kernel else f"pid {row.pid}"
        raise ReleaseRefused(
            f"{what} is held by {row.user} ({who}), not by you: a student can "
            f"release only their own reservations. Ask {row.user}, or the instructor (root), to free "
            "it; python -m gpulab watch shows when it comes free."
        )
    holder = reservation_holders([row.key], reservations).get(row.key)
    kernel_id = holder.details.get("kernel", "") if holder is not None and holder.pid == row.pid else ""
    why = ""
    if kernel_id:  # a Jupyter kernel (not a Hub's reservation for a server): its server shuts it down, keeps it down
        try:
            server = find_kernel_server(row.pid)
            shut_down_kernel(server, kernel_id)
        except NoServer as exc:
            why = str(exc)
        else:
            if _freed(g, row.key, reservations, timeout_s):
                return (
                    f"{what} is free: the kernel {row.kernel[:8]} ({row.user}) that held it was shut "
                    f"down through its Jupyter server, {server.url}, as Kernel → Shut Down Kernel does, so Jupyter "
                    "will not start it again. Its notebook stays open; choose a kernel there when you need a GPU again."
                )
            why = f"its server, {server}, shut it down, but it still held the GPU {timeout_s:g} s later"
    _stop(row.pid, g, row.key, what, reservations, timeout_s)
    if not kernel_id:
        return f"{what} is free: the process {row.pid} ({row.user}) that held it was stopped."
    return (
        f"{what} is free for now: the kernel {row.kernel[:8]} ({row.user}) that held it was stopped, "
        f"but its Jupyter server could not be asked to shut it down: {why}. A Jupyter server starts a kernel that "
        "stopped by itself again within seconds, and that kernel takes a free GPU again. To keep it down, shut it down "
        "from JupyterLab (Kernel → Shut Down Kernel) or stop its server; python -m gpulab watch shows whether it came "
        "back."
    )


def _stop(
    pid: int, g: GpuInfo, key: str, what: str, reservations: str | os.PathLike[str] | None, timeout_s: float
) -> None:
    """End a reservation's holder with signals: SIGTERM, then SIGKILL when it held on."""
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        pass  # it ended on its own meanwhile: the reservation is gone too
    if not _freed(g, key, reservations, timeout_s):
        try:
            os.kill(pid, signal.SIGKILL)  # it ignored SIGTERM; its own lock cannot outlive SIGKILL
        except ProcessLookupError:
            pass
        if not _freed(g, key, reservations, timeout_s):
            raise RuntimeError(
                f"{what} is still held after its holder (pid {pid}) was stopped: a "
                "process it started keeps the lock file open. python -m gpulab watch names it; stop "
                "that one too."
            )
