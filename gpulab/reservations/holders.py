"""Who holds each GPU's reservation now, read from the lock files and the kernel's list of locks (a probe: files).

``reservation_holders`` is what the picker, the environment report and ``watch`` show. The name a holder wrote into
its file is checked against ``/proc/locks``, which says which pid really holds the lock: the files are everyone's to
write, and a holder that could open a file only read-only cannot write its name at all.
"""

from __future__ import annotations

import json
import os
import socket
from dataclasses import dataclass, field
from pathlib import Path

from .folder import have_flock, lock_path, open_lock_file, require_flock, reservations_dir, try_lock

__all__ = ["THIS_NOTEBOOK", "Holder", "reservation_holders", "current_holders", "others_only"]

# How a reservation held by this very process is named everywhere (picker, watch, environment report): the learner's
# own kernel is not a stranger to be warned about.
THIS_NOTEBOOK = "this notebook"


@dataclass(frozen=True)
class Holder:
    """Who holds a GPU's reservation: the locking ``pid`` and, when the file's name matches it, ``user`` and ``host``;
    ``text`` says it in words (``"pid 4242 (alice@server)"``), including when the two disagree; a reservation of this
    very process reads ``"this notebook"`` and has ``mine`` set."""

    pid: int | None
    user: str | None
    host: str | None
    text: str
    mine: bool = False
    details: dict[str, str] = field(default_factory=dict)
    """What the holder said of the reservation beyond pid, user and host (``reserve_gpus(details=...)``): for example
    the kernel id, the notebook, the JupyterHub user a server was started for, the reservation's ``MASTER_PORT``
    range."""
    this_server: bool = False
    """Held for the server this process runs in (the Hub's server model, ``server_token``): this user's GPU."""

    def __str__(self) -> str:
        return self.text


def _read_holder(fd: int) -> Holder:
    """Who holds the lock on ``fd``'s file: the name its holder wrote, checked against the kernel's list of locks.

    A holder that could only open the file read-only (another user left it private) cannot write its name, so the
    file may still name an earlier holder; ``/proc/locks`` says which pid really holds it.
    """
    lockers = _flock_pids(fd)
    data = _read_json(fd)
    details = _details(data)
    if os.getpid() in lockers:
        return Holder(os.getpid(), None, socket.gethostname(), THIS_NOTEBOOK, mine=True, details=details)
    try:
        named = f"pid {data['pid']} ({data['user']}@{data['host']})"
    except (KeyError, TypeError):  # no file content, not JSON, or a name missing
        data, named = None, None
    if lockers and data is None:
        return Holder(lockers[0], None, None, f"pid {lockers[0]} (it has not written its name into the file)")
    if lockers and data.get("pid") not in lockers:  # pids of another pid namespace (container) differ too
        return Holder(
            lockers[0],
            None,
            None,
            f"pid {lockers[0]} (the file still names {named}: an earlier holder, "
            "or this one seen from another container)",
        )
    if named is None:
        return Holder(None, None, None, "another process (it has not written its name yet)")
    if not lockers and data["pid"] == os.getpid() and data["host"] == socket.gethostname():
        return Holder(
            data["pid"], data["user"], data["host"], THIS_NOTEBOOK, mine=True, details=details
        )  # no /proc/locks here
    return Holder(data["pid"], data["user"], data["host"], named, details=details, this_server=_this_server(data))


def _this_server(data: dict) -> bool:
    """Whether the file names the server this process runs in (its digest, ``server_token.this_server_digest``)."""
    from .server_token import this_server_digest  # server_token imports this module

    ours = this_server_digest()
    return ours is not None and data.get("server_digest") == ours


def _read_json(fd: int) -> dict | None:
    try:
        data = json.loads(os.pread(fd, 4096, 0) or b"{}")
    except (ValueError, OSError):
        return None
    return data if isinstance(data, dict) else None


def _details(data: object) -> dict[str, str]:
    """The holder's ``details``, as strings; anything else in the file is ignored (the file is everyone's to write)."""
    raw = data.get("details") if isinstance(data, dict) else None
    if not isinstance(raw, dict):
        return {}
    return {str(k): str(v) for k, v in raw.items()}


def _flock_pids(fd: int) -> list[int]:
    """Pids holding a ``flock`` on ``fd``'s file, from ``/proc/locks`` (empty where it cannot tell: not Linux, or
    holders in another pid namespace)."""
    st = os.fstat(fd)
    inode = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
    try:
        lines = Path("/proc/locks").read_text().splitlines()
    except OSError:
        return []
    pids = []
    for line in lines:  # "1: FLOCK  ADVISORY  WRITE 4242 fe:00:2146619 0 EOF"; waiters read "1: -> FLOCK ..."
        f = line.split()
        if len(f) >= 6 and f[1] == "FLOCK" and f[5] == inode and f[4].isdigit() and int(f[4]) > 0:
            pids.append(int(f[4]))
    return pids


def current_holders(uuids: list[str], reservations: str | os.PathLike[str] | None = None) -> dict[str, str]:
    """Which of these GPUs someone holds right now, and who, in words (see ``reservation_holders``)."""
    return {uuid: str(h) for uuid, h in reservation_holders(uuids, reservations).items()}


def others_only(holders: dict[str, Holder]) -> dict[str, str]:
    """The holders that are not this process, in words: what this kernel's own choices must keep away from."""
    return {uuid: str(h) for uuid, h in holders.items() if not h.mine}


def reservation_holders(uuids: list[str], reservations: str | os.PathLike[str] | None = None) -> dict[str, Holder]:
    """Which of these GPUs someone holds right now, and who (checked by trying each lock, then letting go).

    Creates nothing: with no reservations folder yet, nobody holds anything.
    """
    d = reservations_dir(reservations, create=False)
    try:
        usable = d.is_dir()
    except (OSError, ValueError):  # a name too long, or with a NUL in it: no reservations can be there
        usable = False
    if not usable or not have_flock():  # Windows: nobody can hold a gpulab reservation there
        return {}
    out: dict[str, Holder] = {}
    for uuid in uuids:
        path = lock_path(d, uuid)
        if not path.exists():
            continue
        fd = open_lock_file(path)
        try:
            if try_lock(fd):
                require_flock().flock(fd, require_flock().LOCK_UN)
            else:
                out[uuid] = _read_holder(fd)
        finally:
            os.close(fd)
    return out
