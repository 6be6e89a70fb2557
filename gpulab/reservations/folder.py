"""The reservations folder and its lock files: one ``gpu-<uuid>.lock`` per GPU, held with ``flock`` (a probe: files).

A GPU is reserved while some process holds an exclusive ``flock`` on its file. The kernel drops a ``flock`` when the
process that holds it ends, however it ends (crash, ``kill -9``, kernel restart), so a reservation never outlives its
holder, and a file left behind means nothing until someone locks it again. The folder (``$GPULAB_RESERVATIONS_DIR``,
default ``/tmp/gpulab-reservations``) is sticky and world-writable like ``/tmp``, and its files are readable and
writable by everyone, so that students who are different Unix users can all lock them. The holder writes its pid,
user, host and details into its file as JSON, for the views that say who holds a GPU (``holders``).
``fcntl`` and ``pwd`` are imported where a lock is taken, so ``import gpulab`` works on Windows too.
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
]

DEFAULT_DIR = Path("/tmp/gpulab-reservations")
_DIR_MODE = 0o1777  # like /tmp: everyone may create files, nobody may delete another user's
_FILE_MODE = 0o666


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
        if st.st_uid == os.geteuid() and stat.S_IMODE(st.st_mode) != _DIR_MODE:
            os.chmod(d, _DIR_MODE)  # mkdir applied our umask; make it usable by the other students
    except OSError as exc:
        raise PermissionError(
            f"cannot use {d} for GPU reservations ({exc.strerror}). Ask the administrator to run "
            f"`mkdir -p {d} && chmod 1777 {d}`, or point GPULAB_RESERVATIONS_DIR at a directory every user can write."
        ) from exc
    return d


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
    """Reserve the GPU ``uuid``: its locked file's descriptor, with the holder's name and ``details`` written in (and
    ``server_digest``, for a server's reservation: ``server_token``); None when another process holds it."""
    fd = open_lock_file(lock_path(reservations, uuid))
    if not try_lock(fd):
        os.close(fd)
        return None
    write_holder(fd, details, server_digest)
    return fd


def let_go(fd: int) -> None:
    """End the reservation held on ``fd``: unlock, then close (not only close: a child forked meanwhile shares the
    lock until it exits)."""
    require_flock().flock(fd, require_flock().LOCK_UN)
    os.close(fd)


def write_holder(fd: int, details: Mapping[str, str] | None = None, server_digest: str | None = None) -> bool:
    """Write who holds the lock into the file, with the reservation's ``details`` and, for a server's reservation,
    its token's digest (``server_token.token_digest``: the processes of that server know the GPU as theirs); False on
    a read-only descriptor (the lock holds, the name is missing)."""
    import pwd  # POSIX only, like the lock itself

    fcntl = require_flock()
    if fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_ACCMODE == os.O_RDONLY:
        return False
    info = {
        "pid": os.getpid(),
        "user": pwd.getpwuid(os.geteuid()).pw_name,
        "host": socket.gethostname(),
        "since": time.time(),
    }
    if details:
        info["details"] = dict(details)
    if server_digest:
        info["server_digest"] = server_digest
    os.ftruncate(fd, 0)
    os.pwrite(fd, json.dumps(info).encode(), 0)
    return True
