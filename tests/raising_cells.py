"""A pytest plugin for nbval: every ``raises-exception`` cell must still raise what its committed output says.

nbval runs a cell tagged ``raises-exception`` and lets it raise, but it neither fails the cell when it no longer
raises nor compares the error (a pitfall replaced by ``x = 1`` passes). This plugin, loaded by the repository's
``conftest.py``, looks at what nbval just collected from the kernel (``IPyNbCell.test_outputs``) and compares the
error with the one committed in the notebook: the exception class (``ename``) exactly, and the stable start of the
message (``evalue``).

How much of a message is stable is said here and only here (``stable_start``):

* the message up to its first line break (later lines list machine state: which GPUs, which processes);
* with the volatile parts replaced by the patterns of ``notebooks/nbval_sanitize.cfg`` (durations, rates,
  addresses, PIDs, ports, absolute paths), the same file nbval applies to checked outputs;
* a cell may end the stable part earlier with a marker in its metadata, ``{"gpulab": {"error_stable_until": "…"}}``:
  the message is compared up to (not including) the marker's first occurrence in the committed message.

A ``%%gpu`` cell that skips on this machine (no GPU) prints why and raises nothing: it is not held to its tag
here. Where the GPUs exist it must raise; its class and message are compared when the committed output (a run on
GPUs) holds an error. Written here because neither nbval nor nbclient compares errors of expected-raising cells.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from gpulab.checkup.recorded_cells import SKIP_LINE as GPU_SKIP_LINE  # noqa: F401  (tests/test_raising_cells.py uses it)
from gpulab.checkup.recorded_cells import skipped_here

SANITIZE_FILE = Path(__file__).resolve().parents[1] / "notebooks" / "nbval_sanitize.cfg"

MARKER_KEY = "error_stable_until"


@dataclass(frozen=True)
class ExpectedError:
    """The error a raising cell committed: its class name and the stable start of its message."""

    ename: str
    message_start: str

    def __str__(self) -> str:
        return f"{self.ename}: {self.message_start}"


@cache
def volatile_patterns(path: Path = SANITIZE_FILE) -> tuple[tuple[str, str], ...]:
    """The ``regex:``/``replace:`` pairs of an nbval sanitize file (the format nbval reads)."""
    return tuple(re.findall(r"^regex: (.*)$\n^replace: (.*)$", path.read_text(), flags=re.MULTILINE))


def stable_start(evalue: str, marker: str | None = None, patterns: Iterable[tuple[str, str]] | None = None) -> str:
    """The part of an error message that must not change between runs (see the module docstring)."""
    text = evalue.split("\n", 1)[0]
    if marker:
        text = text.split(marker, 1)[0]
    for regex, replace in volatile_patterns() if patterns is None else patterns:
        text = re.sub(regex, replace, text)
    return text.strip()


def _errors(outputs: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    return [o for o in outputs if o.get("output_type") == "error"]


def gpu_cell_needs(source: str) -> int | None:
    """How many GPUs a ``%%gpu [n]`` cell asks for; ``None`` for any other cell."""
    first = source.lstrip().split("\n", 1)[0].split()
    if not first or first[0] != "%%gpu":
        return None
    return int(first[1]) if len(first) > 1 and first[1].isdigit() else 1


def skipped_gpu_cell(source: str, outputs: Sequence[Mapping[str, Any]]) -> bool:
    """True for a ``%%gpu`` cell that printed the magic's skip line and raised nothing (no GPU here)."""
    if gpu_cell_needs(source) is None or _errors(outputs):
        return False
    text = "".join(o.get("text", "") for o in outputs if o.get("output_type") == "stream")
    return skipped_here(text)  # today's wording, or the one a chapter committed before it


def expected_error(cell: Mapping[str, Any]) -> ExpectedError | None:
    """The error committed with a cell, reduced to what is compared; ``None`` when it committed none."""
    errors = _errors(cell.get("outputs", []))
    if not errors:
        return None
    marker = cell.get("metadata", {}).get("gpulab", {}).get(MARKER_KEY)
    committed = errors[-1]
    if marker and marker not in committed["evalue"].split("\n", 1)[0]:
        raise ValueError(
            f"the cell's metadata gpulab.{MARKER_KEY}={marker!r} does not occur in the first line of "
            f"its committed error message {committed['evalue'].splitlines()[0]!r}; fix the marker."
        )
    return ExpectedError(committed["ename"], stable_start(committed["evalue"], marker))


def raising_cell_problem(cell: Mapping[str, Any], fresh_outputs: Sequence[Mapping[str, Any]]) -> str | None:
    """Why a ``raises-exception`` cell's fresh run does not match its committed error; ``None`` when it does."""
    source = cell.get("source", "")
    if skipped_gpu_cell(source, fresh_outputs):
        return None  # the magic printed why it skipped: nothing ran, nothing could raise
    try:
        expected = expected_error(cell)
    except ValueError as exc:
        return str(exc)
    errors = _errors(fresh_outputs)
    if not errors:
        want = f"{expected}…" if expected else "an exception"
        return (
            f"this cell is tagged raises-exception and committed {want}, but it raised nothing now. If the "
            "pitfall no longer exists in this version, the lesson must say so: rewrite the cell and its text."
        )
    fresh = errors[-1]
    if expected is None:
        if gpu_cell_needs(source) is not None:
            return None  # a %%gpu cell committed from a CPU run: no class or message to compare with
        return (
            "this cell is tagged raises-exception but its committed output holds no error; re-run the notebook "
            "with tools/execute_notebooks.py so the committed output shows what it raises."
        )
    marker = cell.get("metadata", {}).get("gpulab", {}).get(MARKER_KEY)
    got = ExpectedError(fresh["ename"], stable_start(fresh["evalue"], marker))
    if got.ename != expected.ename:
        return (
            f"it raised {got.ename} but the notebook committed {expected.ename}.\n  committed: {expected}\n"
            f"  now:       {got}"
        )
    if got.message_start != expected.message_start:
        return (
            f"it raised {got.ename} as committed, but the message starts differently (compared: the first line, "
            f"sanitized by notebooks/nbval_sanitize.cfg).\n  committed: {expected}\n  now:       {got}"
        )
    return None


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item):
    """After nbval has run a cell tagged raises-exception, compare its error with the committed one."""
    result = yield  # nbval's own failures (a cell that raises unexpectedly, differing outputs) come first
    options = getattr(item, "options", None)
    fresh = getattr(item, "test_outputs", None)
    if options is not None and options.get("check_exception") and fresh is not None:
        problem = raising_cell_problem(item.cell, fresh)
        if problem:
            item.raise_cell_error(f"raises-exception cell: {problem}")
    return result
