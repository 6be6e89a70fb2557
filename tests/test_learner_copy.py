"""make lab's copy of the chapters (tools/learner_copy.py): made once, never overwritten, joined by new chapters, and
running a chapter in it leaves the checkout as git had it (so a learner's git pull never conflicts)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.process_group import run

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
from learner_copy import update_copy  # noqa: E402  (a script of tools/)


def _course(tmp_path: Path) -> Path:
    source = tmp_path / "notebooks"
    (source / "scripts").mkdir(parents=True)
    (source / "scripts" / "train.py").write_text("print('course')\n")
    (source / "claims_ledger.md").write_text("# ledger\n")
    (source / "00_setup.ipynb").write_text("course 00")
    (source / "workshop_guide.ipynb").write_text("for instructors")
    return source


def test_the_copy_is_made_once_and_a_learners_chapter_is_never_overwritten(tmp_path):
    source, dest = _course(tmp_path), tmp_path / "mywork"
    assert update_copy(source, dest) == [
        "copied 00_setup.ipynb",
        "linked scripts -> ../notebooks/scripts",
        "linked claims_ledger.md -> ../notebooks/claims_ledger.md",
    ]
    assert not (dest / "workshop_guide.ipynb").exists()  # the instructors' guide is not a learner's chapter
    (dest / "00_setup.ipynb").write_text("my run of 00")
    (source / "00_setup.ipynb").write_text("course 00, updated by a pull")
    (source / "08_restarts.ipynb").write_text("course 08")  # a chapter a later pull adds
    assert update_copy(source, dest) == ["copied 08_restarts.ipynb"]
    assert (dest / "00_setup.ipynb").read_text() == "my run of 00"
    assert (dest / "08_restarts.ipynb").read_text() == "course 08"
    assert (dest / "scripts" / "train.py").read_text() == "print('course')\n"  # what the chapters read, current
    # a fresh copy of one chapter: delete it, run again
    (dest / "00_setup.ipynb").unlink()
    assert update_copy(source, dest) == ["copied 00_setup.ipynb"]
    assert (dest / "00_setup.ipynb").read_text() == "course 00, updated by a pull"


def test_a_learners_own_folder_where_a_link_goes_is_kept_and_said(tmp_path):
    source, dest = _course(tmp_path), tmp_path / "mywork"
    (dest / "scripts").mkdir(parents=True)
    (dest / "scripts" / "mine.py").write_text("mine")
    lines = update_copy(source, dest)
    assert "kept your own scripts (the chapters read it; delete it to get the course's back)" in lines
    assert (dest / "scripts" / "mine.py").read_text() == "mine"


def test_a_copy_from_nowhere_says_where_it_looked(tmp_path):
    with pytest.raises(SystemExit, match="no chapters folder at .*nowhere: run this from the course's checkout"):
        update_copy(tmp_path / "nowhere", tmp_path / "mywork")


@pytest.mark.slow  # runs chapter 02 once more
@pytest.mark.skipif(shutil.which("git") is None, reason="no git here")
def test_running_a_chapter_in_the_copy_leaves_git_status_clean(tmp_path):
    # a checkout of this tree (tracked and untracked files, as committed), then make lab's first step and a Run All
    # of chapter 02 (it reads scripts/ through a relative path) saved in place, as JupyterLab's autosave does
    listed = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=ROOT, capture_output=True, check=True, timeout=60
    ).stdout.decode()
    clone = tmp_path / "course"
    for name in filter(None, listed.split("\0")):
        if (ROOT / name).is_file():
            (clone / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, clone / name, follow_symlinks=False)
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "init.defaultBranch=main"]
    for step in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "course"]):
        subprocess.run(git + step, cwd=clone, check=True, capture_output=True, timeout=120)

    run([sys.executable, "tools/learner_copy.py"], cwd=clone, check=True, capture_output=True, timeout=60)
    chapter = clone / "mywork" / "02_choosing_gpus.ipynb"
    env = {**os.environ, "PYTHONPATH": str(clone), "GPULAB_FAST": "1"}
    done = run(
        [sys.executable, "-m", "jupyter", "nbconvert", "--to", "notebook", "--execute", "--inplace", str(chapter)],
        cwd=chapter.parent,
        env=env,
        capture_output=True,
        text=True,
        timeout=400,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    ran = json.loads(chapter.read_text())
    printed = [
        o.get("text") or o.get("data", {}).get("text/plain", "")
        for c in ran["cells"]
        if c["cell_type"] == "code"
        for o in c.get("outputs", [])
    ]
    assert any("late_visible_devices" in "".join(t) for t in printed), "the chapter did not run its script"
    status = subprocess.run(git + ["status", "--porcelain"], cwd=clone, capture_output=True, text=True, timeout=60)
    assert status.stdout == ""
