"""A shell session that really runs, for showing how a started program inherits the environment (chapter 02).

``run_shell("export CUDA_VISIBLE_DEVICES=1; python -c ...")`` runs the script with bash in a fresh process and returns
what a terminal would have shown. Taught in ``notebooks/02_choosing_gpus.ipynb``.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from ..core.arguments import environment, path_or_none, seconds, shown, text
from ..placement.setter import apply_environ

__all__ = ["ShellRun", "run_shell"]


@dataclass(frozen=True)
class ShellRun:
    """A shell script that really ran, and what it printed: how a started program inherits the environment."""

    script: str
    output: str
    returncode: int

    def __str__(self) -> str:  # bash -v echoed each line of the script before running it, so the two interleave
        return self.output.rstrip() + (f"\n(exit status {self.returncode})" if self.returncode else "")

    def _repr_html_(self) -> str:
        import html

        return f"<pre>{html.escape(str(self))}</pre>"


def run_shell(
    script: str,
    *,
    cwd: str | os.PathLike[str] | None = None,
    env: Mapping[str, str | None] | None = None,
    timeout_s: float = 60.0,
) -> ShellRun:
    """Run ``script`` with bash in a fresh process, as from a terminal where ``CUDA_VISIBLE_DEVICES`` is unset.

    Each line of the script is echoed (``bash -v``) before its output, so the result reads like a terminal session.
    ``env`` adds (or, with ``None``, removes) variables; ``python`` is this kernel's interpreter. Output is stdout
    and stderr together, in order.
    """
    text(script, "script", example="'echo $CUDA_VISIBLE_DEVICES'")
    timeout_s = seconds(timeout_s, "timeout_s", allow_zero=False, example="60")
    if path_or_none(cwd, "cwd") is not None and not _is_dir(cwd):
        raise NotADirectoryError(
            f"cwd={shown(os.fspath(cwd))} is not a directory here: run_shell runs the script "
            "inside an existing directory, e.g. cwd=tempfile.mkdtemp(); leave it out for this one."
        )
    if env is not None:
        environment({k: "" if v is None else v for k, v in env.items()} if isinstance(env, Mapping) else env)
    base = {k: v for k, v in os.environ.items() if not k.startswith("CUDA_")}
    base["PATH"] = os.path.dirname(sys.executable) + os.pathsep + base.get("PATH", "")
    apply_environ(env or {}, base)
    with subprocess.Popen(
        ["bash", "-c", "set -v\n" + script.strip()],
        cwd=cwd,
        env=base,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    ) as proc:
        try:
            output, _ = proc.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            _stop(proc)
            output, _ = proc.communicate()
            raise TimeoutError(
                f"the script ran longer than timeout_s={timeout_s:g} s and was stopped (with every "
                f"process it started). What it printed first:\n{output[-2000:]}\nGive it more time "
                "(timeout_s=...) or make it shorter."
            ) from None
        except BaseException:  # an interrupted kernel (Ctrl-C, Stop) leaves nothing running either
            _stop(proc)
            raise
    return ShellRun(script, output, proc.returncode)


def _is_dir(path: str | os.PathLike[str]) -> bool:
    try:
        return bool(os.fspath(path)) and Path(path).is_dir()
    except (OSError, ValueError):  # a name too long, or with a NUL in it
        return False


def _stop(proc: subprocess.Popen[str]) -> None:
    """Kill the script and every process it started (its own session), where the OS allows it."""
    try:
        if hasattr(os, "killpg"):
            os.killpg(proc.pid, signal.SIGKILL)
        else:  # Windows: no process groups to signal
            proc.kill()
    except ProcessLookupError:
        pass
