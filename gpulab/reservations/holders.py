"""Who holds each GPU's reservation now, read from the kernel's list of locks and the holders' own files (a probe).

``reservation_holders`` is what the picker, the environment report and ``watch`` show. ``/proc/locks`` says which pid
really holds a lock, ``/proc/<pid>`` which user runs it; that user's own files (``folder.write_holder``) say the rest,
believed only when that user owns them and they name that pid. The private details (a notebook's path, a server's
name) are read where this process may read them (its own user, root, the instructor group); otherwise ``Holder.hidden``
names what was kept from it. Where ``/proc/locks`` cannot tell (not Linux, a holder in another pid namespace), the
newest holder file of the GPU is taken at its word.
"""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass, field
from pathlib import Path

from .folder import (
    have_flock,
    lock_path,
    open_lock_file,
    read_record,
    require_flock,
    reservations_dir,
    try_lock,
)
from .server_token import this_server_digest

__all__ = ["THIS_NOTEBOOK", "Holder", "reservation_holders", "left_behind", "uid_of", "user_name"]

# How a reservation held by this very process is named everywhere (picker, watch, environment report): the learner's
# own kernel is not a stranger to be warned about.
THIS_NOTEBOOK = "this notebook"


@dataclass(frozen=True)
class Holder:
    """Who holds a GPU's reservation: the locking ``pid`` and its ``user``, with ``host`` when the holder's own file
    names that pid; ``text`` says it in words (``"pid 4242 (alice@server)"``), including when the holder has not
    named itself; a reservation of this very process reads ``"this notebook"`` and has ``mine`` set."""

    pid: int | None
    user: str | None
    host: str | None
    text: str
    mine: bool = False
    details: dict[str, str] = field(default_factory=dict)
    """What the holder said of the reservation beyond pid, user and host (``reserve_gpus(details=...)``): for example
    the kernel id, the notebook, the JupyterHub user a server was started for, the reservation's ``MASTER_PORT``
    range. Only what this process may read: the private ones of another user's reservation are left out."""
    hidden: tuple[str, ...] = ()
    """The names of the holder's private details that this process may not read (``"notebook"``, ``"server"``)."""
    this_server: bool = False
    """Held for the server this process runs in (the Hub's server model, ``server_token``): this user's GPU."""
    server_digest: str | None = None
    """The digest of the token of the server it is held for (``server_token``), as its holder wrote it."""
    shares: tuple[tuple[int, int, Holder], ...] = ()
    """For a card held in shares (``share_slots``): ``(k, n, holder)`` of each share held, share ``k`` of ``n``."""

    def __str__(self) -> str:
        return self.text


def _read_holder(fd: int, reservations: Path, uuid: str) -> Holder:
    """Who holds the lock on ``fd``'s file (GPU ``uuid``): the pid the kernel names, and what its user wrote."""
    lockers = _flock_pids(fd)
    if os.getpid() in lockers:
        details, hidden = _details_of(reservations, uuid, os.geteuid(), os.getpid())
        return Holder(os.getpid(), None, socket.gethostname(), THIS_NOTEBOOK, mine=True, details=details, hidden=hidden)
    if lockers:
        pid = lockers[0]
        uid = uid_of(pid)
        record = read_record(reservations, uuid, uid) if uid is not None else None
        if record is None or record.get("pid") != pid:
            user = user_name(uid)
            who = f"{user}, " if user else ""
            return Holder(pid, user, None, f"pid {pid} ({who}it has not written its name)")
        return _named(record, reservations, uuid, uid)
    newest = _newest_record(reservations, uuid)  # no /proc/locks here: the newest holder file, at its word
    if newest is None:
        return Holder(None, None, None, "another process (it has not written its name yet)")
    record, uid = newest
    return _named(record, reservations, uuid, uid)


def _this_server(record: dict) -> bool:
    """Whether the holder's file names the server this process runs in (its digest, ``server_token``)."""
    ours = this_server_digest()
    return ours is not None and record.get("server_digest") == ours


def _named(record: dict, reservations: Path, uuid: str, uid: int) -> Holder:
    try:
        pid, user, host = int(record["pid"]), str(record["user"]), str(record["host"])
    except (KeyError, TypeError, ValueError):
        return Holder(None, None, None, "another process (its file is not one gpulab wrote)")
    details, hidden = _details_of(reservations, uuid, uid, pid, record)
    if pid == os.getpid() and host == socket.gethostname() and uid == os.geteuid():
        return Holder(pid, user, host, THIS_NOTEBOOK, mine=True, details=details, hidden=hidden)
    digest = record.get("server_digest")
    return Holder(
        pid,
        user,
        host,
        f"pid {pid} ({user}@{host})",
        details=details,
        hidden=hidden,
        this_server=_this_server(record),
        server_digest=digest if isinstance(digest, str) else None,
    )


def _details_of(
    reservations: Path, uuid: str, uid: int, pid: int, record: dict | None = None
) -> tuple[dict[str, str], tuple[str, ...]]:
    """The holder's details this process may read, and the names of the private ones it may not."""
    record = record if record is not None else read_record(reservations, uuid, uid)
    if record is None or record.get("pid") != pid:
        return {}, ()
    details = _strings(record.get("details"))
    secret = record.get("private")
    secret = [str(k) for k in secret] if isinstance(secret, list) else []
    if secret:
        private = read_record(reservations, uuid, uid, private=True)
        if private is not None:  # its own user, root or the instructor group: every detail
            details.update(_strings(private.get("details")))
        else:
            return details, tuple(secret)
    return details, ()


def _strings(raw: object) -> dict[str, str]:
    """Details as strings; anything else is ignored."""
    if not isinstance(raw, dict):
        return {}
    return {str(k): str(v) for k, v in raw.items()}


def _newest_record(reservations: Path, uuid: str) -> tuple[dict, int] | None:
    found = []
    for path in reservations.glob(f"gpu-{uuid}.holder.*.json"):
        uid_text = path.name.removeprefix(f"gpu-{uuid}.holder.").removesuffix(".json")
        if uid_text.isdigit():
            record = read_record(reservations, uuid, int(uid_text))
            if record is not None and isinstance(record.get("since"), (int, float)):
                found.append((record["since"], record, int(uid_text)))
    if not found:
        return None
    _, record, uid = max(found, key=lambda f: f[0])
    return record, uid


def uid_of(pid: int | None) -> int | None:
    """The real owner of a process (``/proc/<pid>``'s owner), None where it cannot be seen (another container)."""
    if pid is None:
        return None
    try:
        return os.stat(f"/proc/{pid}").st_uid
    except OSError:
        return None


def user_name(uid: int | None) -> str | None:
    """The login name of ``uid`` (``uid N`` where this machine has none, as in a container); None for no uid."""
    import pwd

    if uid is None:
        return None
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:  # a uid with no name here (a container's user)
        return f"uid {uid}"


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
            elif _shared(fd):
                out[uuid] = _shares_holder(d, uuid)
            else:
                out[uuid] = _read_holder(fd, d, uuid)
        finally:
            os.close(fd)
    return out


def _shared(fd: int) -> bool:
    """Whether the card's lock is held only shared (by share holders): a shared lock can be taken (then let go)."""
    fcntl = require_flock()
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    fcntl.flock(fd, fcntl.LOCK_UN)
    return True


def _shares_holder(reservations: Path, uuid: str) -> Holder:
    """A card held in shares, as one holder: each share held with its own holder, in words ``"2 of 3 shares: …"``."""
    from .share_slots import parse_share_key  # share_slots imports folder, like this module

    shares = []
    for path in sorted(reservations.glob(f"gpu-{uuid}.share-*-of-*.lock")):
        key = path.name.removeprefix("gpu-").removesuffix(".lock")
        parsed = parse_share_key(key)
        if parsed is None or parsed[0] != uuid:
            continue
        fd = open_lock_file(path)
        try:
            if try_lock(fd):
                require_flock().flock(fd, require_flock().LOCK_UN)
            else:
                shares.append((parsed[1], parsed[2], _read_holder(fd, reservations, key)))
        finally:
            os.close(fd)
    shares.sort(key=lambda s: (s[1], s[0]))
    n = max((s[1] for s in shares), default=0)
    who = "; ".join(f"share {k}: {h}" for k, _, h in shares)
    text = f"{len(shares)} of {n} shares held ({who})" if shares else "held in shares (their holders are starting)"
    mine = any(h.mine for _, _, h in shares)
    server = any(h.this_server for _, _, h in shares)
    return Holder(None, None, None, text, mine=mine, this_server=server, shares=tuple(shares))


def left_behind(uuids: list[str], reservations: str | os.PathLike[str] | None = None) -> dict[str, Holder]:
    """For the GPUs of ``uuids`` that nobody holds now: the last process of this user that held each, as it named
    itself, with every detail (its pid may be gone). What a JupyterHub restarted after a crash held before it."""
    d = reservations_dir(reservations, create=False)
    try:
        usable = d.is_dir()
    except (OSError, ValueError):
        usable = False
    if not usable or not have_flock():
        return {}
    uid = os.geteuid()
    out: dict[str, Holder] = {}
    for uuid in uuids:
        path = lock_path(d, uuid)
        if not path.exists():
            continue
        fd = open_lock_file(path)
        try:
            if not try_lock(fd):
                continue  # someone holds it now
            require_flock().flock(fd, require_flock().LOCK_UN)
        finally:
            os.close(fd)
        record = read_record(d, uuid, uid)
        if record is not None and isinstance(record.get("pid"), int):
            holder = _named(record, d, uuid, uid)
            if holder.pid is not None:
                out[uuid] = Holder(
                    holder.pid,
                    holder.user,
                    holder.host,
                    str(holder),
                    details=holder.details,
                    server_digest=holder.server_digest,
                )
    return out
