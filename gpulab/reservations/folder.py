"""The reservations folder and its files: one ``gpu-<uuid>.lock`` per GPU, held with ``flock``, and what each holder
wrote about itself (a probe: files).

A GPU is reserved while some process holds an exclusive ``flock`` on its lock file. The kernel drops a ``flock`` when
the process that holds it ends, however it ends (crash, ``kill -9``, kernel restart), so a reservation never outlives
its holder, and a file left behind means nothing until someone locks it again. The folder (``$GPULAB_RESERVATIONS_DIR``,
default ``/tmp/gpulab-reservations``) is sticky and world-writable like ``/tmp``, and the lock files are openable by
everyone, so that students who are different Unix users can all lock them. The lock files therefore say nothing:
anyone could write into them.

What a holder says about itself goes into two files of its own, which nobody else can write (``write_holder``):

- ``gpu-<uuid>.holder.<uid>.json`` (mode 0644): what the room may see: pid, Unix user, host, since when, and the
  public details (``PUBLIC_DETAILS``: kernel id, the JupyterHub user a server is for, the port range). The user and the
  kernel id are no secret on a shared server (``ps`` shows both), and "GPU 3: alice, idle 40 min" is what the next
  student needs to know whom to ask.
- ``gpu-<uuid>.private.<uid>.json``: every other detail (the notebook's path, the JupyterHub server's name, anything a
  caller adds): mode 0640 when the folder gives its files the instructor group (``chgrp gpulab-instructors`` and the
  setgid bit, ``chmod 3777``), else 0600. Students read their own; root and the instructor group read everyone's.

A file is believed only when its owner is the uid in its name (the folder is sticky: nobody can replace another user's
file, and a name squatted by another user is ignored). ``fcntl``, ``grp`` and ``pwd`` are imported where they are
needed, so ``import gpulab`` works on Windows too.
"""

from __future__ import annotations

import errno
import json
import os
import socket
import stat
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from ..core.arguments import path_or_none, shown

__all__ = [
    "DEFAULT_DIR",
    "reservations_dir",
    "lock_path",
    "require_flock",
    "selection_lock",
    "hold",
    "let_go",
    "write_holder",
    "record_path",
    "read_record",
    "instructor_gid",
    "PUBLIC_DETAILS",
    "INSTRUCTOR_GROUP_VAR",
    "DEFAULT_INSTRUCTOR_GROUP",
]

DEFAULT_DIR = Path("/tmp/gpulab-reservations")
_DIR_MODE = 0o1777  # like /tmp: everyone may create files, nobody may delete another user's
_FILE_MODE = 0o666  # lock files: every student locks the same file
_PUBLIC_MODE = 0o644
_PRIVATE_MODE = 0o600
_INSTRUCTOR_MODE = 0o640  # a private file whose group is the instructor group
INSTRUCTOR_GROUP_VAR = "GPULAB_INSTRUCTOR_GROUP"
DEFAULT_INSTRUCTOR_GROUP = "gpulab-instructors"
# The details every user may read; every other key a reservation's details have is private to its holder.
PUBLIC_DETAILS = frozenset({"kernel", "user", "for_user", "ports"})
# lock descriptor -> (folder, GPU uuid) of every lock this process took with ``hold``: where ``write_holder`` writes
_HELD: dict[int, tuple[Path, str]] = {}


def reservations_dir(reservations: str | os.PathLike[str] | None = None, *, create: bool = True) -> Path:
    """The folder of reservations: the one asked for, else ``$GPULAB_RESERVATIONS_DIR``, else ``DEFAULT_DIR``.

    With ``create`` (for a process about to reserve) it is made if missing and opened up to every user if we own it;
    without (for a process that only reads who holds what) nothing is created or checked.
    """
    d = Path(path_or_none(reservations, "reservations") or os.environ.get("GPULAB_RESERVATIONS_DIR") or DEFAULT_DIR)
    if not create:
        return d
    try:
        if "\x00" in str(d):
            raise ValueError("a directory name cannot hold a NUL character")
        blocker = next((q for q in (d, *d.parents) if q.exists() and not q.is_dir()), None)
    except (OSError, ValueError) as exc:  # a name too long for the file system, or with a NUL in it
        raise ValueError(
            f"cannot use {shown(str(d))} as the reservations directory ({exc}). Point reservations= (or "
            "GPULAB_RESERVATIONS_DIR) at a directory, or leave it out."
        ) from None
    if blocker is not None:
        raise NotADirectoryError(
            f"cannot keep GPU reservations in {d}: {blocker} is a file, not a directory. Point reservations= (or "
            f'GPULAB_RESERVATIONS_DIR) at a directory, e.g. reservations="{DEFAULT_DIR}", or leave it out.'
        )
    try:
        d.mkdir(parents=True, exist_ok=True)
        st = d.stat()
        if st.st_uid == os.geteuid() and stat.S_IMODE(st.st_mode) & _DIR_MODE != _DIR_MODE:
            os.chmod(d, stat.S_IMODE(st.st_mode) | _DIR_MODE)  # mkdir applied our umask; open it to the other students
        if st.st_uid == os.geteuid():
            _give_instructor_group(d, st)
    except OSError as exc:
        raise PermissionError(
            f"cannot use {d} for GPU reservations ({exc.strerror}). Ask the administrator to run "
            f"`mkdir -p {d} && chgrp {DEFAULT_INSTRUCTOR_GROUP} {d} && chmod 3777 {d}`, or point "
            "GPULAB_RESERVATIONS_DIR at a directory every user can write."
        ) from exc
    return d


def _give_instructor_group(d: Path, st: os.stat_result) -> None:
    """Let the folder hand its files the instructor group (setgid), so that instructors can read the private ones;
    only where that group exists and we may (root, or a member of it)."""
    gid = instructor_gid()
    if gid is None or (st.st_gid == gid and st.st_mode & stat.S_ISGID):
        return
    try:
        os.chown(d, -1, gid)
        os.chmod(d, stat.S_IMODE(os.stat(d).st_mode) | _DIR_MODE | stat.S_ISGID)
    except OSError:  # a student who is not an instructor made the folder: private files stay 0600
        pass


def lock_path(reservations: Path, uuid: str) -> Path:
    """The file whose lock reserves the GPU ``uuid`` (its modification time is the holder's last activity)."""
    return reservations / f"gpu-{uuid}.lock"


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


def require_flock():
    """The POSIX ``fcntl`` module, or an ``OSError`` saying that this system (Windows) cannot hold a reservation."""
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
    """Whether this system has POSIX file locks (not Windows), so that GPUs can be reserved."""
    try:
        require_flock()
    except OSError:
        return False
    return True


def try_lock(fd: int) -> bool:
    """Take the lock on ``fd``'s file if nobody holds it: True if taken, False at once if held (never waits)."""
    fcntl = require_flock()
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except BlockingIOError:
        return False


@contextmanager
def selection_lock(reservations: Path) -> Iterator[None]:
    """One chooser at a time on this machine, so that two kernels never split the free GPUs between them halfway."""
    fcntl = require_flock()
    fd = open_lock_file(reservations / "select.lock")
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing drops the lock


def hold(
    reservations: Path, uuid: str, details: Mapping[str, str] | None = None, server_digest: str | None = None
) -> int | None:
    """Reserve the GPU ``uuid``: its locked file's descriptor, with the holder's name and ``details`` written into the
    holder's own files (``write_holder``; and ``server_digest``, for a server's reservation: ``server_token``); None
    when another process holds it."""
    fd = open_lock_file(lock_path(reservations, uuid))
    if not try_lock(fd):
        os.close(fd)
        return None
    if _writable(fd):
        os.ftruncate(fd, 0)  # what an older gpulab wrote into the lock file (a notebook's path) goes
    _HELD[fd] = (reservations, uuid)
    write_holder(fd, details, server_digest)
    return fd


def let_go(fd: int) -> None:
    """End the reservation held on ``fd``: unlock, then close (not only close: a child forked meanwhile shares the
    lock until it exits). The holder's files stay: they mean nothing once nobody holds the lock."""
    _HELD.pop(fd, None)
    require_flock().flock(fd, require_flock().LOCK_UN)
    os.close(fd)


def _writable(fd: int) -> bool:
    fcntl = require_flock()
    return fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_ACCMODE != os.O_RDONLY


def record_path(reservations: Path, uuid: str, uid: int, private: bool = False) -> Path:
    """The file in which the user ``uid`` says what it holds GPU ``uuid`` for: the public one, or the private one."""
    return reservations / f"gpu-{uuid}.{'private' if private else 'holder'}.{uid}.json"


def instructor_gid() -> int | None:
    """The instructor group's id (``$GPULAB_INSTRUCTOR_GROUP``, default ``gpulab-instructors``), None if no such group
    exists here."""
    try:
        import grp  # POSIX only, like the lock itself
    except ImportError:  # Windows: no groups, and no reservations either
        return None
    try:
        return grp.getgrnam(os.environ.get(INSTRUCTOR_GROUP_VAR) or DEFAULT_INSTRUCTOR_GROUP).gr_gid
    except KeyError:
        return None


def write_holder(fd: int, details: Mapping[str, str] | None = None, server_digest: str | None = None) -> bool:
    """Write who holds the lock on ``fd`` (taken with ``hold``), with the reservation's ``details``, into this user's
    own files beside it: the public details into the one everybody reads, the others into the private one; for a
    server's reservation also its token's digest, in the public one (``server_token.token_digest``: the processes of
    that server know the GPU as theirs). False when a file could not be written (another user squatted its name: the
    lock holds, the name is missing)."""
    import pwd  # POSIX only, like the lock itself

    where = _HELD.get(fd)
    if where is None:
        return False
    reservations, uuid = where
    uid = os.geteuid()
    details = dict(details or {})
    public = {k: v for k, v in details.items() if k in PUBLIC_DETAILS}
    private = {k: v for k, v in details.items() if k not in PUBLIC_DETAILS}
    info = {
        "pid": os.getpid(),
        "uid": uid,
        "user": pwd.getpwuid(uid).pw_name,
        "host": socket.gethostname(),
        "since": time.time(),
        "details": public,
        "private": sorted(private),
    }
    if server_digest:
        info["server_digest"] = server_digest
    ok = _write_record(record_path(reservations, uuid, uid), info, private=False)
    return _write_record(record_path(reservations, uuid, uid, private=True), {"details": private}, private=True) and ok


def _write_record(path: Path, data: dict, private: bool) -> bool:
    flags = os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags, _PRIVATE_MODE)
    except OSError:  # another user's file (protected_regular), a planted link: not ours to write
        return False
    try:
        st = os.fstat(fd)
        if st.st_uid != os.geteuid():
            return False  # another user made a file of this name first: readers ignore it, and so do we
        if private:  # the instructor group reads it only where the folder gave the file that group (setgid folder)
            gid = instructor_gid()
            os.fchmod(fd, _INSTRUCTOR_MODE if gid is not None and st.st_gid == gid else _PRIVATE_MODE)
        else:
            os.fchmod(fd, _PUBLIC_MODE)
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps(data).encode(), 0)
        return True
    finally:
        os.close(fd)


def read_record(reservations: Path, uuid: str, uid: int, private: bool = False) -> dict | None:
    """What the user ``uid`` last wrote about holding GPU ``uuid`` (``write_holder``), None when there is nothing
    this process may read or believe: no file, a file another user owns, not JSON, or not readable here."""
    path = record_path(reservations, uuid, uid, private)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return None
    try:
        if os.fstat(fd).st_uid != uid:
            return None  # squatted by another user
        data = json.loads(os.pread(fd, 8192, 0) or b"{}")
    except (OSError, ValueError):
        return None
    finally:
        os.close(fd)
    return data if isinstance(data, dict) else None
