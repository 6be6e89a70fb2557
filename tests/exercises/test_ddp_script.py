"""Chapter 04's last exercise, for real: a DDP script run under torchrun with 2 gloo ranks by ``gpulab.check``.

The solution (ddp_solution.py) and the chapter's own DDP script pass; each wrong answer (ddp_wrong.py: the solution
with one piece taken out) fails with a message that names that piece; a script that hangs is stopped and leaves no
process behind; the runner kills what a script leaves running.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import gpulab
from gpulab.exercises.ch04_ddp import SECTIONS
from gpulab.exercises.ch04_script import check_ddp_script
from gpulab.exercises.feedback import Hint, NotAnswered, WrongType
from gpulab.exercises.torchrun_script import run_under_torchrun

from .ddp_wrong import SOLUTION, WRONG, write_wrong

ROOT = Path(__file__).resolve().parents[2]


def _processes_running(needle: str) -> list[int]:
    """Processes whose command line names ``needle`` (a file of this test's own folder)."""
    found = []
    for entry in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            if needle in entry.read_bytes().decode(errors="replace"):
                found.append(int(entry.parent.name))
        except OSError:
            pass
    return found


@pytest.mark.parametrize(
    "script", [SOLUTION, ROOT / "notebooks" / "scripts" / "digits_ddp.py"], ids=["solution", "chapter"]
)
def test_a_right_script_passes(script):
    feedback = gpulab.check("ch04-ex3", str(script))
    assert feedback.passed, str(feedback)
    assert "disjoint halves of the 256 items" in feedback.message and "only rank 0 saved" in feedback.message


@pytest.mark.parametrize("name", sorted(WRONG))
def test_each_wrong_script_fails_with_the_piece_it_lacks(name, tmp_path):
    _, words = WRONG[name]
    script = write_wrong(name, tmp_path)
    with pytest.raises(Hint) as failed:
        check_ddp_script(script, SECTIONS, timeout_s=60 if name == "hangs" else 240)
    assert type(failed.value) is Hint
    for word in words:
        assert word in failed.value.message, (word, failed.value.message)
    assert _processes_running(str(tmp_path)) == [], "a rank of the wrong script outlived the check"


def test_the_check_cell_reads_a_wrong_script_as_not_yet_with_its_section(tmp_path):
    feedback = gpulab.check("ch04-ex3", str(write_wrong("no_set_epoch", tmp_path)))
    assert feedback.verdict == "not yet" and "set_epoch" in feedback.message
    assert "section 5" in str(feedback)


def test_an_answer_that_is_not_a_path_or_names_no_file_is_told_so(tmp_path):
    with pytest.raises(WrongType, match="path of your script"):
        check_ddp_script(42, SECTIONS)
    with pytest.raises(NotAnswered, match="there is no file 'nowhere.py'"):
        check_ddp_script("nowhere.py", SECTIONS)
    assert gpulab.check("ch04-ex3", ...).verdict == "not answered yet"


def test_the_runner_ends_a_script_that_hangs_and_one_that_leaves_a_process_behind(tmp_path):
    environment = dict(os.environ)
    hangs = tmp_path / "hangs.py"
    hangs.write_text("import time\nprint('started', flush=True)\ntime.sleep(600)\n")
    run = run_under_torchrun(hangs, cwd=tmp_path, timeout_s=20)
    assert run.timed_out and len(run.left_behind) >= 3  # torchrun and its 2 ranks, killed
    assert "started" in run.output
    assert _processes_running(str(hangs)) == []

    leaves = tmp_path / "leaves.py"  # each rank starts a process that outlives it, then exits at once
    leaves.write_text(
        "import subprocess, sys\n"
        f"subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)', {str(leaves)!r}])\n"
    )
    run = run_under_torchrun(leaves, cwd=tmp_path, timeout_s=120)
    assert run.returncode == 0, run.output[-2000:]
    assert len(run.left_behind) == 2, run.left_behind  # one orphan per rank, found and killed
    assert _processes_running(str(leaves)) == []
    assert dict(os.environ) == environment  # the ranks' variables are theirs: the caller's stay as they were
