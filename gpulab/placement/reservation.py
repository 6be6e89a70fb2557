"""Holding the GPUs you picked against the other kernels on the same server (a probe: files and locks).

Two notebooks that ask "which GPU is free?" at the same moment get the same answer. ``reserve_gpus`` therefore takes an
exclusive ``flock`` on one file per GPU (``gpu-<uuid>.lock``) in a directory every user of the machine can write
(``$GPULAB_RESERVATIONS_DIR``, default ``/tmp/gpulab-reservations``, made sticky and world-writable like ``/tmp``).
The kernel drops a ``flock`` when the process that holds it ends, however it ends (crash, ``kill -9``, kernel
restart), so a reservation can never outlive its owner; a file left behind means nothing until someone locks it.
Lock files are made readable and writable by everyone, so students who are different Unix users can all lock them.
The holder writes its pid, user and host into the file, so the picker can say who is using a GPU.
Never creates a CUDA context: the GPUs are read through NVML (or a described machine). Taught in
``notebooks/02_choosing_gpus.ipynb``.
"""
from __future__ import annotations

import errno
import json
import os
import socket
import stat
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from .setter import set_visible_devices
from ..core.arguments import function, path_or_none, seconds, shown, whole_number
from ..machine.nvml import GpuReader
from ..machine.resolve import as_reader
from ..core.readings import GpuInfo
from .selection import Choice, NoFreeGpu, Policy, checked_policy, choose_gpus
from .visible import visible_map

__all__ = ["Reservation", "reserve_gpus", "reservations_dir", "current_holders", "reservation_holders", "Holder",
           "DEFAULT_DIR"]

DEFAULT_DIR = Path("/tmp/gpulab-reservations")
_DIR_MODE = 0o1777  # like /tmp: everyone may create files, nobody may delete another user's
_FILE_MODE = 0o666


def _named_dir(directory: str | os.PathLike[str] | None) -> Path:
    """The directory asked for, else ``$GPULAB_RESERVATIONS_DIR``, else the default."""
    return Path(path_or_none(directory, "directory") or os.environ.get("GPULAB_RESERVATIONS_DIR") or DEFAULT_DIR)


def reservations_dir(directory: str | os.PathLike[str] | None = None) -> Path:
    """The shared directory of lock files (created if missing, and opened up to every user if we own it)."""
    d = _named_dir(directory)
    try:
        if "\x00" in str(d):
            raise ValueError("a directory name cannot hold a NUL character")
        blocker = next((q for q in (d, *d.parents) if q.exists() and not q.is_dir()), None)
    except (OSError, ValueError) as exc:  # a name too long for the file system, or with a NUL in it
        raise ValueError(f"cannot use {shown(str(d))} as the reservations directory ({exc}). Point directory= (or "
                         "GPULAB_RESERVATIONS_DIR) at a directory, or leave it out.") from None
    if blocker is not None:
        raise NotADirectoryError(
            f"cannot keep GPU reservations in {d}: {blocker} is a file, not a directory. Point directory= (or "
            f"GPULAB_RESERVATIONS_DIR) at a directory, e.g. directory=\"{DEFAULT_DIR}\", or leave it out.")
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


def _lock_path(d: Path, uuid: str) -> Path:
    return d / f"gpu-{uuid}.lock"


def _open(path: Path) -> int:
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


def _fcntl():
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


def _have_flock() -> bool:
    try:
        _fcntl()
    except OSError:
        return False
    return True


def _try_lock(fd: int) -> bool:
    fcntl = _fcntl()
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except BlockingIOError:
        return False


@dataclass(frozen=True)
class Holder:
    """Who holds a GPU's reservation: the locking ``pid`` and, when the file's name matches it, ``user`` and ``host``;
    ``text`` says it in words (``"pid 4242 (alice@server)"``), including when the two disagree."""

    pid: int | None
    user: str | None
    host: str | None
    text: str

    def __str__(self) -> str:
        return self.text


def _read_holder(fd: int) -> Holder:
    """Who holds the lock on ``fd``'s file: the name its holder wrote, checked against the kernel's list of locks.

    A holder that could only open the file read-only (another user left it private) cannot write its name, so the
    file may still name an earlier holder; ``/proc/locks`` says which pid really holds it.
    """
    lockers = _flock_pids(fd)
    try:
        data = json.loads(os.pread(fd, 4096, 0) or b"{}")
        named = f"pid {data['pid']} ({data['user']}@{data['host']})"
    except (ValueError, KeyError, TypeError, OSError):
        data, named = None, None
    if lockers and data is None:
        return Holder(lockers[0], None, None, f"pid {lockers[0]} (it has not written its name into the file)")
    if lockers and data.get("pid") not in lockers:  # pids of another pid namespace (container) differ too
        return Holder(lockers[0], None, None, f"pid {lockers[0]} (the file still names {named}: an earlier holder, "
                                              "or this one seen from another container)")
    if named is None:
        return Holder(None, None, None, "another process (it has not written its name yet)")
    return Holder(data["pid"], data["user"], data["host"], named)


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


def current_holders(uuids: list[str], directory: str | os.PathLike[str] | None = None) -> dict[str, str]:
    """Which of these GPUs someone holds right now, and who, in words (see ``reservation_holders``)."""
    return {uuid: str(h) for uuid, h in reservation_holders(uuids, directory).items()}


def reservation_holders(uuids: list[str], directory: str | os.PathLike[str] | None = None) -> dict[str, Holder]:
    """Which of these GPUs someone holds right now, and who (checked by trying each lock, then letting go).

    Creates nothing: with no reservation directory yet, nobody holds anything.
    """
    d = _named_dir(directory)
    try:
        usable = d.is_dir()
    except (OSError, ValueError):  # a name too long, or with a NUL in it: no reservations can be there
        usable = False
    if not usable or not _have_flock():  # Windows: nobody can hold a gpulab reservation there
        return {}
    out: dict[str, Holder] = {}
    for uuid in uuids:
        path = _lock_path(d, uuid)
        if not path.exists():
            continue
        fd = _open(path)
        try:
            if _try_lock(fd):
                _fcntl().flock(fd, _fcntl().LOCK_UN)
            else:
                out[uuid] = _read_holder(fd)
        finally:
            os.close(fd)
    return out


@contextmanager
def _selection_lock(d: Path) -> Iterator[None]:
    """One chooser at a time on this machine, so that two kernels never split the free GPUs between them halfway."""
    fcntl = _fcntl()
    fd = _open(d / "select.lock")
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing drops the lock


@dataclass
class Reservation:
    """GPUs held by this process until ``release()``, the end of a ``with`` block, the object being dropped, or the
    end of the process (however it ends: the kernel releases the locks)."""

    choice: Choice
    directory: Path
    _fds: dict[str, int]

    @property
    def gpus(self) -> tuple[GpuInfo, ...]:
        return self.choice.chosen

    @property
    def physical_indices(self) -> tuple[int, ...]:
        return self.choice.physical_indices

    @property
    def visible_devices(self) -> str:
        return self.choice.visible_devices

    @property
    def held(self) -> bool:
        return bool(self._fds)

    def env(self) -> dict[str, str]:
        """Environment for a process that should use exactly these GPUs (``cuda:0`` = the first one)."""
        return {"CUDA_VISIBLE_DEVICES": self.visible_devices}

    def apply(self) -> None:
        """Make this process use these GPUs (``set_visible_devices``: refused once CUDA has started here)."""
        set_visible_devices(self.visible_devices, order=None)

    def release(self) -> None:
        for fd in self._fds.values():
            _fcntl().flock(fd, _fcntl().LOCK_UN)  # not only close: a child forked meanwhile shares the lock until it exits
            os.close(fd)
        self._fds = {}

    def __del__(self) -> None:  # a reservation nobody refers to any more is let go, like a file object
        self.release()

    def __enter__(self) -> "Reservation":
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()

    def _head(self) -> str:
        state = "held" if self.held else "released"
        what = " of SIMULATED GPUs (described, not this computer's)" if self.choice.simulated else ""
        return f"Reservation{what} ({state}, in {self.directory})"

    def __str__(self) -> str:
        return f"{self._head()}: CUDA_VISIBLE_DEVICES={self.visible_devices}\n{self.choice}"

    def _repr_html_(self) -> str:
        import html

        return f"<p>{html.escape(self._head())}</p>" + self.choice._repr_html_()


def reserve_gpus(n: int = 1, reader: GpuReader | None = None, policy: Policy | None = None, *,
                 directory: str | os.PathLike[str] | None = None, wait_s: float = 0.0, poll_s: float = 1.0,
                 clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep,
                 ) -> Reservation:
    """Pick ``n`` free GPUs and hold them against every other process on this machine.

    Candidates are the GPUs this process may use (those ``CUDA_VISIBLE_DEVICES`` allows, if set), read through
    ``reader`` (default: NVML, or ``GPULAB_SIMULATE_GPUS``); ``policy`` says what free means. GPUs reserved by others
    are passed over. With ``wait_s`` it retries every ``poll_s`` seconds until then; otherwise, or after that,
    ``NoFreeGpu`` says why each GPU was passed over. Nothing here creates a CUDA context.
    """
    _fcntl()  # on Windows, refuse before touching any directory
    n = whole_number(n, "n", minimum=1, example="reserve_gpus(2) for two GPUs")
    reader = as_reader(reader)
    policy = checked_policy(policy)
    wait_s = seconds(wait_s, "wait_s", example="60")
    poll_s = seconds(poll_s, "poll_s", allow_zero=False, example="1.0")
    if poll_s < 0.05:
        raise ValueError(f"poll_s={poll_s:g}: asking more often than every 0.05 s holds the machine's selection lock "
                         "and the driver for nothing (GPUs free up in seconds, not microseconds). Use poll_s=1.0.")
    function(clock, "clock", example="time.monotonic")
    function(sleep, "sleep", example="time.sleep")
    d = reservations_dir(directory)
    deadline = clock() + wait_s
    while True:
        gpus = [reader.info(i) for i in range(reader.count())]
        allowed = None
        if "CUDA_VISIBLE_DEVICES" in os.environ:
            allowed = {dev.physical_index for dev in visible_map(gpus).devices}
        with _selection_lock(d):
            taken = current_holders([g.uuid for g in gpus], d)
            try:
                choice = choose_gpus(n, gpus, policy, taken=taken, allowed=allowed)
            except NoFreeGpu:
                if clock() >= deadline:
                    raise
            else:
                fds: dict[str, int] = {}
                for g in choice.chosen:
                    fd = _open(_lock_path(d, g.uuid))
                    if not _try_lock(fd):  # cannot happen under the selection lock unless a foreign tool holds it
                        os.close(fd)
                        for other in fds.values():
                            os.close(other)
                        raise NoFreeGpu(f"GPU {g.physical_index} was locked by a process that does not use "
                                        f"{d / 'select.lock'}; try again.")
                    _write_holder(fd)
                    fds[g.uuid] = fd
                return Reservation(choice, d, fds)
        sleep(min(poll_s, max(0.0, deadline - clock())))


def _write_holder(fd: int) -> bool:
    """Write who holds the lock into the file; False on a read-only descriptor (the lock holds, the name is missing)."""
    import pwd  # POSIX only, like the lock itself

    fcntl = _fcntl()
    if fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_ACCMODE == os.O_RDONLY:
        return False
    info = {"pid": os.getpid(), "user": pwd.getpwuid(os.geteuid()).pw_name, "host": socket.gethostname(), "since": time.time()}
    os.ftruncate(fd, 0)
    os.pwrite(fd, json.dumps(info).encode(), 0)
    return True
