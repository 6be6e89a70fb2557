"""Run a learner's script under torchrun, on the CPU, with a time limit, and leave no process behind.

``run_under_torchrun(script, args)`` starts ``python -m torch.distributed.run --standalone --nproc-per-node=N`` on
the learner's own file, in a working folder of the caller's, with ``CUDA_VISIBLE_DEVICES=""`` (gloo on the CPU
whatever the machine) and ``OMP_NUM_THREADS=1``. Every process of the run inherits a variable that marks it; when the
run ends, fails or passes its time limit, every marked process still there is killed, and the result says which they
were. With ``probe``, each rank runs that module (``python -m``) with the script's path and arguments after it: a
probe runs the script as ``__main__`` and records what it did (``ddp_probe``, ``resume_probe``). With
``max_restarts`` torchrun may restart the ranks; with ``kill_a_rank_when`` the runner sends ``SIGKILL`` to one of
torchrun's own child processes (a rank) the first time that condition holds, as a crash would. Taught by chapter 04's
last exercise (notebooks/04_ddp.ipynb) and chapter 08's (notebooks/08_precision_restarts_fsdp.ipynb).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .feedback import NotAnswered, WrongType, kind

__all__ = ["ScriptRun", "learners_script", "run_under_torchrun", "torchrun_command"]


def learners_script(answer: Any, example: str, to_do: str) -> Path:
    """The learner's script, from the path they gave (``example``: a name to show); ``to_do``: how to write one."""
    if not isinstance(answer, (str, os.PathLike)):
        raise WrongType(f'give the path of your script as a string, e.g. "{example}", not {kind(answer)}.')
    path = Path(answer).expanduser()
    if not path.is_file():
        raise NotAnswered(
            f"there is no file {os.fspath(answer)!r} (looked in {Path.cwd()}): {to_do}, then run this check again."
        )
    return path.resolve()


@dataclass(frozen=True)
class ScriptRun:
    """How a script's torchrun ended: its exit code (None when it passed the time limit), its output (stdout and
    stderr together) and the processes of its group that were still alive at the end (and were killed then)."""

    returncode: int | None
    output: str
    seconds: float
    left_behind: tuple[int, ...] = ()
    killed: int | None = None  # the rank process the runner killed (``kill_a_rank_when``), if it came to that

    @property
    def timed_out(self) -> bool:
        """Whether the run passed its time limit and was stopped (it has no exit code then)."""
        return self.returncode is None

    def error_lines(self, lines: int = 10) -> str:
        """The failing rank's last lines (torchrun prefixes a rank's traceback with ``[rankN]:``), else ``tail``."""
        ranks = [line for line in self.output.splitlines() if line.startswith("[rank")]
        return "\n".join(ranks[-lines:]) if ranks else self.tail(lines)

    def tail(self, lines: int = 12) -> str:
        """The last ``lines`` lines of output that are not torchrun's own log lines (W…/I… prefixes)."""
        kept = [line for line in self.output.splitlines() if line.strip() and not _torchruns_log(line)]
        return "\n".join(kept[-lines:])


def _torchruns_log(line: str) -> bool:
    """``W1129 03:25:12.369000 8164 torch/distributed/run.py:982] ...``: a line of torchrun's own logging."""
    head = line.split(" ", 1)[0]
    return len(head) == 5 and head[0] in "WIE" and head[1:].isdigit()


def torchrun_command(
    script: str | os.PathLike[str], args: Sequence[str], nproc: int, probe: str | None, max_restarts: int = 0
) -> list[str]:
    """The command line: torchrun on the script itself, or on ``probe`` (a module) followed by the script."""
    target = ["-m", probe, os.fspath(script)] if probe else [os.fspath(script)]
    restarts = [f"--max-restarts={max_restarts}"] if max_restarts else []
    run = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={nproc}", *restarts]
    return [*run, *target, *args]


MARK = "GPULAB_TORCHRUN_RUN"  # a variable every process of one run inherits: how its processes are found


def _marked(mark: str) -> list[int]:
    """The live processes whose environment carries ``MARK=mark`` (read from /proc; none found where there is none).

    torchrun starts each rank in a session of its own, so the ranks are not in torchrun's process group, and a
    process a rank leaves behind is no longer anyone's child; the variable they all inherited still finds them."""
    needle = f"{MARK}={mark}".encode()
    found = []
    for entry in Path("/proc").glob("[0-9]*/environ"):
        try:
            if needle in entry.read_bytes().split(b"\0") and "Z" not in _state(entry.parent):
                found.append(int(entry.parent.name))
        except OSError:  # ended while we read, or not ours
            continue
    return sorted(found)


def _state(proc: Path) -> str:
    return (proc / "stat").read_text().rsplit(")", 1)[1].split()[0]


def _children(pid: int) -> list[int]:
    """The live processes whose parent is ``pid`` (torchrun's children are its ranks), oldest first."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid and fields[0] != "Z":
            found.append(int(stat.parent.name))
    return sorted(found)


def _wait(proc: subprocess.Popen, timeout_s: float, kill_when: Callable[[], bool] | None, nproc: int) -> int | None:
    """Wait for torchrun; once ``kill_when()`` holds and all its ranks are up, ``SIGKILL`` its last rank (once).
    Returns the pid killed, or None."""
    deadline, killed = time.monotonic() + timeout_s, None
    while kill_when is not None and killed is None and proc.poll() is None and time.monotonic() < deadline:
        if kill_when():
            ranks = _children(proc.pid)
            if len(ranks) == nproc:
                os.kill(ranks[-1], signal.SIGKILL)
                killed = ranks[-1]
        time.sleep(0.01)
    proc.wait(timeout=max(deadline - time.monotonic(), 0.001))  # TimeoutExpired past the limit
    return killed


def _kill(pids: list[int], leader: int) -> None:
    for pid in [leader, *pids]:
        try:
            os.killpg(pid, signal.SIGKILL) if pid == leader else os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):  # gone already
            pass


def run_under_torchrun(
    script: str | os.PathLike[str],
    args: Sequence[str] = (),
    *,
    cwd: str | os.PathLike[str],
    nproc: int = 2,
    timeout_s: float = 120,
    probe: str | None = None,
    env: Mapping[str, str] | None = None,
    max_restarts: int = 0,
    kill_a_rank_when: Callable[[], bool] | None = None,
) -> ScriptRun:
    """Run ``script`` under torchrun with ``nproc`` gloo ranks on the CPU, in ``cwd``; kill its whole process group
    when it ends or after ``timeout_s``. ``env`` adds variables (the probe's, for one). ``kill_a_rank_when`` is
    asked every 10 ms while the run lasts; the first time it returns True, one rank is killed with ``SIGKILL``."""
    here = str(Path(__file__).resolve().parents[2])  # the folder holding gpulab, for the probe's import
    environment = {
        **os.environ,
        "CUDA_VISIBLE_DEVICES": "",
        "OMP_NUM_THREADS": "1",
        "TMPDIR": os.fspath(cwd),  # torchrun's log folder
        "PYTHONPATH": os.pathsep.join(filter(None, [here, os.environ.get("PYTHONPATH")])),
        **(env or {}),
    }
    mark = uuid.uuid4().hex
    environment[MARK] = mark
    start = time.perf_counter()
    # Output to a file, not a pipe: a process that a rank leaves behind keeps a pipe open after torchrun has ended.
    with tempfile.TemporaryFile() as log:
        proc = subprocess.Popen(
            torchrun_command(script, args, nproc, probe, max_restarts),
            cwd=cwd,
            env=environment,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # torchrun leads a session of its own (and starts each rank in another)
        )
        killed = None
        try:
            killed = _wait(proc, timeout_s, kill_a_rank_when, nproc)
            returncode: int | None = proc.returncode
        except subprocess.TimeoutExpired:
            returncode = None
        except BaseException:  # interrupted: the ranks must not outlive the check
            _kill(_marked(mark), proc.pid)
            proc.wait()
            raise
        left = _marked(mark)  # on a timeout torchrun and its ranks; else what outlived torchrun (a rank's child)
        _kill(left, proc.pid)
        proc.wait()
        deadline = time.monotonic() + 10
        while _marked(mark) and time.monotonic() < deadline:
            time.sleep(0.05)
        log.seek(0)
        output = log.read().decode(errors="replace")
    seconds = timeout_s if returncode is None else time.perf_counter() - start
    return ScriptRun(returncode, output, seconds, tuple(left), killed)
