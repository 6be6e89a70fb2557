"""Tracebacks a lesson can read: the learner's own lines and the line that raised, not every library frame between.

A crash inside ``model(x)`` is five screens of red in a notebook: a dozen frames of ``torch/nn/modules`` plumbing
between the line the learner wrote and the line that raised. ``%load_ext gpulab`` installs ``short_traceback`` as
IPython's handler for ordinary exceptions: it keeps every frame of code the learner wrote (notebook cells, their own
files) and the frame where the error was raised, replaces the rest with one line saying how many were hidden, and
leaves everything else as IPython does it — the exception is still raised, the cell still fails (``Run All`` stops,
nbval's ``raises-exception`` cells still see their error), ``%debug`` still has the whole traceback. ``%xmode
Verbose`` (or ``Plain``, ``Minimal``) gives IPython's own tracebacks back; ``%xmode Context`` the short ones again.
IPython has no mode for "first and last frame", hence this handler. Used by every chapter.
"""

from __future__ import annotations

import sys
from pathlib import Path
from types import TracebackType
from typing import Any

from ..core.frames import GPULAB_ROOT as _GPULAB
from ..core.frames import is_library_file
from ..machine.memory_cap import add_cap_note

__all__ = ["lesson_frames", "short_traceback", "install", "is_library_file"]


def lesson_frames(tb: TracebackType | None, *, keep_raise: bool = True) -> tuple[TracebackType | None, int, list[str]]:
    """A new traceback of the learner's frames plus the last one (where it was raised; with ``keep_raise=False`` only
    where the learner has no frame), how many frames were left out, and the top-level packages they were in. The
    original traceback is not changed."""
    frames: list[TracebackType] = []
    while tb is not None:
        frames.append(tb)
        tb = tb.tb_next
    learners = [not is_library_file(f.tb_frame.f_code.co_filename) for f in frames]
    last = len(frames) - 1
    keep = [f for i, f in enumerate(frames) if learners[i] or (i == last and (keep_raise or not any(learners)))]
    hidden = [f for f in frames if f not in keep]
    packages = sorted({_package(f.tb_frame.f_code.co_filename) for f in hidden})
    new: TracebackType | None = None
    for f in reversed(keep):
        new = TracebackType(new, f.tb_frame, f.tb_lasti, f.tb_lineno)
    return new, len(hidden), packages


def _package(filename: str) -> str:
    parts = Path(filename).parts
    for marker in ("site-packages", "dist-packages"):
        if marker in parts and parts.index(marker) + 1 < len(parts):
            return parts[parts.index(marker) + 1].removesuffix(".py")
    if filename.startswith(_GPULAB):
        return "gpulab"
    return "Python's library"


def short_traceback(
    shell: Any, etype: type[BaseException], value: BaseException, tb: TracebackType | None, tb_offset: int | None = None
) -> list[str] | None:
    """IPython custom-exception handler: show the short traceback (in IPython's default ``Context`` mode)."""
    sys.last_type, sys.last_value, sys.last_traceback = etype, value, tb  # what %debug and %tb read
    add_cap_note(
        value
    )  # a CUDA out-of-memory error in a kernel that shares its GPU: its cap, what it holds, what to do
    if sys.version_info >= (3, 12):
        sys.last_exc = value  # novm (guarded by the version check above)
    if shell.InteractiveTB.mode != "Context" or issubclass(etype, SyntaxError):
        shell.showtraceback((etype, value, tb), tb_offset=tb_offset)  # the learner asked for IPython's own
        return None
    skip = shell.InteractiveTB.tb_offset if tb_offset is None else tb_offset
    for _ in range(skip):  # IPython's own frames above the cell (run_code's exec), which it never shows either
        tb = tb.tb_next if tb is not None and tb.tb_next is not None else tb
    # an error whose message tells the whole story (a rank's own traceback, in RankFailed) ends at the learner's line
    keep_raise = not getattr(value, "told_in_its_message", False)
    short, hidden, packages = lesson_frames(tb, keep_raise=keep_raise)
    stb = shell.InteractiveTB.structured_traceback(etype, value, short, tb_offset=0)
    if hidden:
        at = next((i + 1 for i, part in enumerate(stb) if "Traceback" in part), 1)  # under IPython's header
        where = "between your code and the line that raised" if keep_raise else "under your code; its message says why"
        stb = (
            stb[:at]
            + [f"({hidden} frame(s) inside {', '.join(packages)} hidden {where}; %xmode Verbose shows every frame)"]
            + stb[at:]
        )
    shell._showtraceback(etype, value, stb)  # sends the error to the notebook, as IPython's own tracebacks do
    return stb


def install(shell: Any) -> None:
    """Make ``shell`` show short tracebacks for ordinary exceptions (``KeyboardInterrupt`` is left as it is)."""
    shell.set_custom_exc((Exception,), short_traceback)
