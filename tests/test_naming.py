"""One word per idea: a held GPU is a *reservation* wherever a learner or a maintainer reads about it.

The public API says ``reserve_gpus`` and ``Reservation`` first, so the package's identifiers, messages, docstrings and
comments, the README, the chapters' cells and the server configs say "reservation" (and "reserve") too, never
"lease"; the reservations' folder is ``reservations`` (``reservations_dir()``, ``$GPULAB_RESERVATIONS_DIR``).
Retired names survive only where an old spelling is still accepted: a deprecation shim (``SHIMS``) or a line that says
``deprecated``.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# retired word -> what to write instead
RETIRED = {
    r"(?i)(?<![a-z])leas(?!t)": "reservation / reserve (a held GPU is a reservation)",
    r"\bnamed_dir\b": "reservations_dir(reservations, create=False)",
    r"\blockfiles\b": "gpulab.reservations (the store of held GPUs)",
}
SHIMS = {"gpulab/server/lease_start.py"}  # the old module name, kept so that kernels start across an upgrade


def retired_words(text: str) -> list[str]:
    """``"line N: word (write ...)"`` for each retired word in ``text``, except on a line that says it is deprecated."""
    found = []
    for number, line in enumerate(text.splitlines(), 1):
        if "deprecated" in line.lower():
            continue
        for pattern, instead in RETIRED.items():
            found += [f"line {number}: {m.group(0)}… (write {instead})" for m in re.finditer(pattern, line)]
    return found


def _texts() -> dict[str, str]:
    """Every text a reader meets: the package's source, the README, the server configs, the chapters' cells."""
    paths = [*sorted((ROOT / "gpulab").rglob("*.py")), ROOT / "README.md", ROOT / "tools" / "jupyterhub_config.py",
             ROOT / "tools" / "jupyter_server_config.py"]
    out = {p.relative_to(ROOT).as_posix(): p.read_text() for p in paths if "__pycache__" not in p.parts}
    for nb in sorted((ROOT / "notebooks").glob("*.ipynb")):
        cells = json.loads(nb.read_text())["cells"]
        out[nb.relative_to(ROOT).as_posix()] = "\n".join("".join(c["source"]) for c in cells)
    return out


@pytest.mark.parametrize("name", sorted(set(_texts()) - SHIMS))
def test_a_held_gpu_has_one_name(name):
    assert retired_words(_texts()[name]) == []


def test_the_shims_still_exist_and_say_they_are_deprecated():
    for name in SHIMS:
        assert "deprecated" in (ROOT / name).read_text()


def test_the_word_check_finds_every_spelling_of_a_retired_word_and_spares_the_rest():
    text = ("class LeaseRow: ...\nhub_leases()\n# every kernel leases\nPORTS_PER_LEASE = 10\nd = named_dir(x)\n"
            "from ..placement.lockfiles import lock_path\nrelease(); at least; please\n"
            "KEY = 'gpulab_lease'  # deprecated: the old key\n")
    assert retired_words(text) == [
        "line 1: Leas… (write reservation / reserve (a held GPU is a reservation))",
        "line 2: leas… (write reservation / reserve (a held GPU is a reservation))",
        "line 3: leas… (write reservation / reserve (a held GPU is a reservation))",
        "line 4: LEAS… (write reservation / reserve (a held GPU is a reservation))",
        "line 5: named_dir… (write reservations_dir(reservations, create=False))",
        "line 6: lockfiles… (write gpulab.reservations (the store of held GPUs))"]


# Chapter 07's ideas, one word each. How much faster 2 ranks can run at most on this machine's cores is its *ceiling*,
# measured by one entry point (``gpulab.scaling.machine_ceiling``); the all-reduce that the backward pass does not hide
# is *exposed* (``exposed_s``), predicted (``StepCost``) or measured (``StepSplit``).
SCALING_RETIRED = {
    r"\b_?(?:machine_limit|limit_for|limit_times|limit_of)\b": "machine_ceiling (the machine's ceiling on speed-up)",
    r"(?i)\bmachine limit\b": "machine ceiling",
    r"\bcontention\b": "ceiling (how much faster the ranks compute together than one, at most)",
    r"\bwaiting_s\b": "exposed_s (the all-reduce that the backward pass does not hide)",
}


def scaling_words(text: str) -> list[str]:
    """``"line N: word (write ...)"`` for each of chapter 07's retired words in ``text``."""
    return [f"line {number}: {m.group(0)} (write {instead})" for number, line in enumerate(text.splitlines(), 1)
            for pattern, instead in SCALING_RETIRED.items() for m in re.finditer(pattern, line)]


def _texts_and_benchmarks() -> dict[str, str]:
    out = _texts()
    out.update({p.relative_to(ROOT).as_posix(): p.read_text() for p in sorted((ROOT / "benchmarks").glob("*.py"))})
    return out


@pytest.mark.parametrize("name", sorted(_texts_and_benchmarks()))
def test_the_ceiling_and_the_exposed_all_reduce_have_one_name(name):
    assert scaling_words(_texts_and_benchmarks()[name]) == []


def test_the_scaling_word_check_finds_each_retired_name_and_spares_the_rest():
    text = ("c = machine_limit()\nlimit_for(plan); limit_times(plan); _limit_times(plan)\nlimit_of(a, b)\n"
            "print('Machine limit: 1.9×')\npredict_step(..., contention=0.5)\nsplit.waiting_s\n"
            "cgroup_limit_of_this_process; memory_limit_bytes; ranks waiting for each other; exposed_s; ceiling\n")
    assert scaling_words(text) == [
        "line 1: machine_limit (write machine_ceiling (the machine's ceiling on speed-up))",
        "line 2: limit_for (write machine_ceiling (the machine's ceiling on speed-up))",
        "line 2: limit_times (write machine_ceiling (the machine's ceiling on speed-up))",
        "line 2: _limit_times (write machine_ceiling (the machine's ceiling on speed-up))",
        "line 3: limit_of (write machine_ceiling (the machine's ceiling on speed-up))",
        "line 4: Machine limit (write machine ceiling)",
        "line 5: contention (write ceiling (how much faster the ranks compute together than one, at most))",
        "line 6: waiting_s (write exposed_s (the all-reduce that the backward pass does not hide))"]
