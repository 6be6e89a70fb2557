"""The lock files behind GPU reservations: one shared directory, one ``gpu-<uuid>.lock`` per GPU, ``flock`` on it.

Opening, locking and naming the holder of a lock file, and asking who holds one now (``reservation_holders``, which the
picker, the report and ``watch`` show). Why ``flock``, and why files anyone can write: see ``reservation.py``.
``fcntl`` and ``pwd`` are imported where a lock is taken, so ``import gpulab`` works on Windows too.
"""
from __future__ import annotations

import errno
import json
import os
import socket
import stat
import time
from dataclasses import dataclass, field
from pathlib import Path

from ..core.arguments import path_or_none, shown

__all__ = ["DEFAULT_DIR", "THIS_NOTEBOOK", "Holder", "others_only", "reservations_dir", "current_holders",
           "reservation_holders", "named_dir", "lock_path", "open_lock_file", "flock_module", "have_flock", "try_lock",
           "write_holder"]

DEFAULT_DIR = Path("/tmp/gpulab-reservations")
_DIR_MODE = 0o1777  # like /tmp: everyone may create files, nobody may delete another user's
_FILE_MODE = 0o666
# How a lease held by this very process is named everywhere (picker, watch, environment report): the learner's own
# kernel is not a stranger to be warned about.
THIS_NOTEBOOK = "this notebook"


def named_dir(directory: str | os.PathLike[str] | None) -> Path:
    """The directory asked for, else ``$GPULAB_RESERVATIONS_DIR``, else the default."""
    return Path(path_or_none(directory, "reservations") or os.environ.get("GPULAB_RESERVATIONS_DIR") or DEFAULT_DIR)


def reservations_dir(directory: str | os.PathLike[str] | None = None) -> Path:
    """The shared directory of lock files (created if missing, and opened up to every user if we own it)."""
    d = named_dir(directory)
    try:
        if "\x00" in str(d):
            raise ValueError("a directory name cannot hold a NUL character")
        blocker = next((q for q in (d, *d.parents) if q.exists() and not q.is_dir()), None)
    except (OSError, ValueError) as exc:  # a name too long for the file system, or with a NUL in it
        raise ValueError(f"cannot use {shown(str(d))} as the reservations directory ({exc}). Point reservations= (or "
                         "GPULAB_RESERVATIONS_DIR) at a directory, or leave it out.") from None
    if blocker is not None:
        raise NotADirectoryError(
            f"cannot keep GPU reservations in {d}: {blocker} is a file, not a directory. Point reservations= (or "
            f"GPULAB_RESERVATIONS_DIR) at a directory, e.g. reservations=\"{DEFAULT_DIR}\", or leave it out.")
    try:
        d.mkdir(parents=True, exist_ok=True)
        st = d.stat()
        if st.st_uid == os.geteuid() and stat.S_IMODE(st.st_mode) != _DIR_MODE:
            os.chmod(d, _DIR_MODE)  # mkdir applied our umask; make it usable by the other students
    except OSError as exc:
        raise PermissionError(
            f"cannot use {d} for GPU reservations ({exc.strerror}). Ask the administrator to run "
            f"`mkdir -p {d} && chmod 1777 {d}`, or point GPULAB_RESERVATIONS_DIR at a directory every user can write."
        ) from exc
    return d


def lock_path(d: Path, uuid: str) -> Path:
    return d / f"gpu-{uuid}.lock"


def open_lock_file(path: Path) -> int:
    """Open (creating if needed) a lock file without following links; read-only if another user made it private.

    An existing file is opened without ``O_CREAT``: with ``fs.protected_regular`` (a common systemd default) the kernel
    refuses ``O_CREAT`` on another user's file in a sticky world-writable directory, even when its mode allows writing.
    """
    base = os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
    try:
        try:
            fd = os.open(path, os.O_RDWR | base)
        except FileNotFoundError:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | base, _FILE_MODE)
    except PermissionError:
        try:
            return os.open(path, os.O_RDONLY | base)  # flock works on a read-only descriptor too
        except OSError as exc:
            raise PermissionError(
                f"cannot open the reservation file {path} ({exc.strerror}). Ask the administrator to make the "
                f"directory {path.parent} world-writable and sticky (chmod 1777), or set GPULAB_RESERVATIONS_DIR."
            ) from exc
    except OSError as exc:
        if exc.errno != errno.ELOOP:
            raise
        raise PermissionError(
            f"the reservation file {path} is a symbolic link, and gpulab does not follow links there (one could "
            f"redirect the lock to another user's file). Remove {path}, or set GPULAB_RESERVATIONS_DIR to a directory "
            f"only the course's users can write."
        ) from exc
    if os.fstat(fd).st_uid == os.geteuid():
        os.fchmod(fd, _FILE_MODE)  # our umask narrowed it: open it to the other users
    return fd


def flock_module():
    """The POSIX ``fcntl`` module, imported where a lock is taken, so ``import gpulab`` works on Windows too."""
    try:
        import fcntl
    except ImportError:  # Windows: no flock
        raise OSError(
            "GPU reservations use POSIX file locks (flock), which this system (Windows) does not have. On a laptop "
            "there is nobody to collide with: choose GPUs with gpulab.choose_gpus(n) or set CUDA_VISIBLE_DEVICES "
            "yourself. A shared workshop server (Linux) has them."
        ) from None
    return fcntl


def have_flock() -> bool:
    try:
        flock_module()
    except OSError:
        return False
    return True


def try_lock(fd: int) -> bool:
    fcntl = flock_module()
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except BlockingIOError:
        return False


@dataclass(frozen=True)
class Holder:
    """Who holds a GPU's reservation: the locking ``pid`` and, when the file's name matches it, ``user`` and ``host``;
    ``text`` says it in words (``"pid 4242 (alice@server)"``), including when the two disagree; a lease of this very
    process reads ``"this notebook"`` and has ``mine`` set."""

    pid: int | None
    user: str | None
    host: str | None
    text: str
    mine: bool = False
    details: dict[str, str] = field(default_factory=dict)
    """What the holder said of the lease beyond pid, user and host (``reserve_gpus(details=...)``): for example the
    kernel id, the notebook, the JupyterHub user a server was started for, the lease's ``MASTER_PORT`` range."""

    def __str__(self) -> str:
        return self.text


def read_holder(fd: int) -> Holder:
    """Who holds the lock on ``fd``'s file: the name its holder wrote, checked against the kernel's list of locks.

    A holder that could only open the file read-only (another user left it private) cannot write its name, so the
    file may still name an earlier holder; ``/proc/locks`` says which pid really holds it.
    """
    lockers = flock_pids(fd)
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
        return Holder(lockers[0], None, None, f"pid {lockers[0]} (the file still names {named}: an earlier holder, "
                                              "or this one seen from another container)")
    if named is None:
        return Holder(None, None, None, "another process (it has not written its name yet)")
    if not lockers and data["pid"] == os.getpid() and data["host"] == socket.gethostname():
        return Holder(data["pid"], data["user"], data["host"], THIS_NOTEBOOK, mine=True,
                      details=details)  # no /proc/locks here
    return Holder(data["pid"], data["user"], data["host"], named, details=details)


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


def flock_pids(fd: int) -> list[int]:
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


def current_holders(uuids: list[str], directory: str | os.PathLike[str] | None = None) -> dict[str, str]:
    """Which of these GPUs someone holds right now, and who, in words (see ``reservation_holders``)."""
    return {uuid: str(h) for uuid, h in reservation_holders(uuids, directory).items()}


def others_only(holders: dict[str, Holder]) -> dict[str, str]:
    """The holders that are not this process, in words: what this kernel's own choices must keep away from."""
    return {uuid: str(h) for uuid, h in holders.items() if not h.mine}


def reservation_holders(uuids: list[str], directory: str | os.PathLike[str] | None = None) -> dict[str, Holder]:
    """Which of these GPUs someone holds right now, and who (checked by trying each lock, then letting go).

    Creates nothing: with no reservation directory yet, nobody holds anything.
    """
    d = named_dir(directory)
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
                flock_module().flock(fd, flock_module().LOCK_UN)
            else:
                out[uuid] = read_holder(fd)
        finally:
            os.close(fd)
    return out


def write_holder(fd: int, details: dict[str, str] | None = None) -> bool:
    """Write who holds the lock into the file, with the lease's ``details``; False on a read-only descriptor (the lock
    holds, the name is missing)."""
    import pwd  # POSIX only, like the lock itself

    fcntl = flock_module()
    if fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_ACCMODE == os.O_RDONLY:
        return False
    info = {"pid": os.getpid(), "user": pwd.getpwuid(os.geteuid()).pw_name, "host": socket.gethostname(), "since": time.time()}
    if details:
        info["details"] = dict(details)
    os.ftruncate(fd, 0)
    os.pwrite(fd, json.dumps(info).encode(), 0)
    return True
