""".ci/run is what CI runs on a clean clone: it must parse, stop at the first failure, and run every leg in order.
A stray edit once pasted two commands into its header comment; bash ran the first (make test-kit) and then stopped on
a syntax error, so no leg after it ran and CI failed in 219 s. These checks read the script as bash does."""

from __future__ import annotations

import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CI = ROOT / ".ci" / "run"


def _commands() -> list[str]:
    """The script's lines that are not comments or blank, stripped."""
    return [line.strip() for line in CI.read_text().splitlines() if line.strip() and not line.lstrip().startswith("#")]


def test_bash_parses_the_ci_script():
    done = subprocess.run(["bash", "-n", str(CI)], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, f".ci/run does not parse:\n{done.stderr}"


def test_the_syntax_check_catches_a_stray_parenthesis(tmp_path):
    """The check above can fail: the same command rejects the edit that broke CI."""
    broken = tmp_path / "run"
    broken.write_text('#!/usr/bin/env bash\nset -e\necho "took $((SECONDS - 1)) s"), then\n')
    assert subprocess.run(["bash", "-n", str(broken)], capture_output=True, timeout=30).returncode != 0


def test_nothing_runs_before_set_e_and_every_leg_runs_in_order():
    commands = _commands()
    assert commands[0] == "set -euo pipefail", f".ci/run runs {commands[0]!r} before it stops on errors"
    legs = [c for c in commands if c.startswith("make ")]
    assert legs == [
        "make lint",
        "make test",
        "make test-cluster",
        "make test-extended",
        "make test-slow",
        "make test-compat",
        "make test-kit",
    ], legs


def test_the_venvs_built_in_the_background_are_waited_for_before_the_legs_that_use_them():
    commands = _commands()
    started = commands.index("setsid make venvs-ahead > build/venvs-ahead.log 2>&1 &")
    waited = next(i for i, c in enumerate(commands) if c.startswith('if ! wait "$ahead"'))
    assert commands.index("make test") < started < waited < commands.index("make test-compat"), commands


def test_each_extended_entry_names_a_test_file_and_a_test_that_exist():
    """A renamed file or test would drop out of conftest.py's EXTENDED table silently, back into make test."""
    import re

    from conftest import EXTENDED

    for entry in EXTENDED:
        path, _, name = entry.partition("::")
        assert (ROOT / path).is_file(), f"EXTENDED names {path}, which does not exist"
        if name:
            assert re.search(rf"^def {re.escape(name)}\(", (ROOT / path).read_text(), re.M), (
                f"EXTENDED names {entry}, but {path} defines no test {name}"
            )
