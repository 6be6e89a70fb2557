"""One word per idea: a held GPU is a *reservation* wherever a learner or a maintainer reads about it.

The public API says ``reserve_gpus`` and ``Reservation`` first, so the package's identifiers, messages, docstrings and
comments, the README, the chapters' cells and the server configs say "reservation" (and "reserve") too, never
"lease"; the reservations' folder is ``reservations`` (``reservations_dir()``, ``$GPULAB_RESERVATIONS_DIR``).
Retired names survive only where an old spelling is still accepted: a deprecation shim (``SHIMS``) or a line that says
``deprecated``.

"Check" is what a learner does to an exercise (``gpulab.check("ch00-ex1", answer)``), the first check the chapters
ask for. Every other idea has a word of its own: the report's and the doctor's rows are findings (``Finding``), an
argument is validated (``validated_policy``), the fork/OpenMP hang is reproduced by an experiment
(``fork_experiment``), DataParallel's gradients are compared (``compare_gradients``). ``CHECK`` finds the word in a
name; ``tests/test_public_signatures.py`` walks every public name of gpulab with it.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import gpulab

ROOT = Path(__file__).resolve().parents[1]
# retired word -> what to write instead
RETIRED = {
    r"(?i)(?<![a-z])leas(?!t)": "reservation / reserve (a held GPU is a reservation)",
    r"\bnamed_dir\b": "reservations_dir(reservations, create=False)",
    r"\blockfiles\b": "gpulab.reservations (the store of held GPUs)",
    r"\bfork_?check\b|\bForkCheck\b": "fork_experiment / ForkExperiment (gpulab.check is the exercises' checker)",
}
SHIMS = {"gpulab/server/lease_start.py"}  # the old module name, kept so that kernels start across an upgrade
# the word "check" in a name (check, Checks, checked_, ForkCheck, forkcheck), not checkup, checklist or checkpoint
CHECK = re.compile(r"[Cc]heck(?:s|ed|ers?|ing)?(?![a-z])")
CHECK_HOME = "gpulab.exercises"  # the exercises' checkers, and gpulab.check itself (gpulab.exercises.check)


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
            "KEY = 'gpulab_lease'  # deprecated: the old key\nr = gpulab.fork_check(); ForkCheck; forkcheck.py\n")
    assert retired_words(text) == [
        "line 1: Leas… (write reservation / reserve (a held GPU is a reservation))",
        "line 2: leas… (write reservation / reserve (a held GPU is a reservation))",
        "line 3: leas… (write reservation / reserve (a held GPU is a reservation))",
        "line 4: LEAS… (write reservation / reserve (a held GPU is a reservation))",
        "line 5: named_dir… (write reservations_dir(reservations, create=False))",
        "line 6: lockfiles… (write gpulab.reservations (the store of held GPUs))",
        *[f"line 9: {w}… (write fork_experiment / ForkExperiment (gpulab.check is the exercises' checker))"
          for w in ("fork_check", "ForkCheck", "forkcheck")]]


def test_the_check_word_is_found_in_every_spelling_and_only_there():
    named = ["check", "checks", "checked_policy", "_check_interval", "ForkCheck", "forkcheck", "fork_fit_check",
             "Checker", "checking"]
    spared = ["checkup", "checklist", "checkpoint", "checkout", "Checkbox", "enable_checkpointing", "finding"]
    assert [n for n in named if not CHECK.search(n)] == []
    assert [n for n in spared if CHECK.search(n)] == []


def test_a_renamed_top_level_name_says_what_it_is_now():
    with pytest.raises(AttributeError, match=r"^gpulab\.fork_check is now gpulab\.fork_experiment, with the same "):
        gpulab.fork_check  # noqa: B018
    with pytest.raises(AttributeError, match="has no attribute 'no_such_name'"):
        gpulab.no_such_name  # noqa: B018
