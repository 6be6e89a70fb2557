"""On the Hub each student's copy of the chapters is nbgitpuller's clone in their home (docs/instructors.md): the link
clones the course the first time; later clicks bring the course's changes and keep what the student ran or wrote, a
chapter added upstream joins, and a chapter the student deleted comes back fresh. Run here with nbgitpuller's own
command against a local course repository (a Hub's link calls the same GitPuller)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.process_group import run

pytest.importorskip("nbgitpuller", reason="nbgitpuller is in the hub extra: pip install -e '.[hub]'")
pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="no git here")

ROOT = Path(__file__).resolve().parents[1]
GIT = ["git", "-c", "user.name=course", "-c", "user.email=c@c", "-c", "init.defaultBranch=main"]


def _git(cwd: Path, *args: str) -> None:
    subprocess.run([*GIT, *args], cwd=cwd, check=True, capture_output=True, timeout=60)


def _pull(upstream: Path, home: Path) -> str:
    done = run(
        [sys.executable, "-m", "nbgitpuller.pull", str(upstream), "main", str(home / "gpulab")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return done.stdout


def test_a_students_copy_keeps_their_run_and_takes_the_courses_changes(tmp_path):
    upstream, home = tmp_path / "course", tmp_path / "home"
    (upstream / "notebooks" / "scripts").mkdir(parents=True)
    home.mkdir()
    for name in ("00_setup.ipynb", "02_choosing_gpus.ipynb", "scripts/late_visible_devices.py"):
        shutil.copy2(ROOT / "notebooks" / name, upstream / "notebooks" / name)
    _git(upstream, "init", "-q")
    _git(upstream, "add", "-A")
    _git(upstream, "commit", "-qm", "the course")

    _pull(upstream, home)  # the student's first click on the link
    mine = home / "gpulab" / "notebooks" / "00_setup.ipynb"
    ran = json.loads(mine.read_text())
    ran["cells"][0]["source"] = "# my notes\n"  # what a run and an edit do to the file
    mine.write_text(json.dumps(ran))

    course = json.loads((upstream / "notebooks" / "00_setup.ipynb").read_text())
    course["cells"][-1]["source"] = "# the course's fix\n"
    (upstream / "notebooks" / "00_setup.ipynb").write_text(json.dumps(course))
    (upstream / "notebooks" / "08_new.ipynb").write_text(json.dumps(course))  # a chapter added later
    _git(upstream, "add", "-A")
    _git(upstream, "commit", "-qm", "the course's changes")

    _pull(upstream, home)  # a later click: no conflict
    after = json.loads(mine.read_text())
    assert after["cells"][0]["source"] == "# my notes\n"
    assert (home / "gpulab" / "notebooks" / "08_new.ipynb").exists()

    (home / "gpulab" / "notebooks" / "02_choosing_gpus.ipynb").unlink()  # a fresh copy of one chapter
    _pull(upstream, home)
    fresh = home / "gpulab" / "notebooks" / "02_choosing_gpus.ipynb"
    assert fresh.read_bytes() == (ROOT / "notebooks" / "02_choosing_gpus.ipynb").read_bytes()
