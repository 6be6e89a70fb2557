"""Two real Unix users on one server (root and nobody): ``watch`` hides another user's notebook path, and a student
can release only their own reservations. Needs root, to start processes as nobody; nobody runs the system's Python on a
copy of ``gpulab`` in a scratch folder (reservations and release need only the standard library), so the test runs
wherever the clone sits."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from gpulab.machine.simulated import SimulatedGpuReader
from gpulab.server.render import render_text
from gpulab.server.reservation_list import HIDDEN, reservation_rows
from gpulab.server.watch import read_server
from tests.other_user import readable_copy, system_python_for_nobody
from tests.process_group import kill_group, run

ROOT = Path(__file__).resolve().parents[2]
W8 = SimulatedGpuReader("workshop-8")
W8_GPUS = [W8.info(i) for i in range(W8.count())]

HOLD = """
import json, sys
from gpulab.placement.reservation import reserve_gpus
r = reserve_gpus(1, "workshop-8", reservations=sys.argv[1], details={"kernel": sys.argv[2], "notebook": sys.argv[3]})
print(json.dumps(list(r.physical_indices)), flush=True)
sys.stdin.read()
"""
VIEW = """
import json, sys
from gpulab.machine.simulated import SimulatedGpuReader
from gpulab.server.reservation_list import reservation_rows
r = SimulatedGpuReader("workshop-8")
print(json.dumps([[x.physical_index, x.user, x.notebook] for x in reservation_rows([r.info(i) for i in range(8)],
sys.argv[1])]))
"""


@pytest.fixture
def server():
    """A scratch server: root's and nobody's ways to run Python there, and the holders started (killed at the end)."""
    system_python = system_python_for_nobody()
    tmp = readable_copy("gpulab-two-users-")
    held: list[subprocess.Popen] = []
    base = {
        "GPULAB_SIMULATE_GPUS": "workshop-8",
        "GPULAB_RESERVATIONS_DIR": str(tmp / "locks"),
        "HOME": "/tmp",
        "PATH": "/usr/bin:/bin",
    }
    as_root = {"python": sys.executable, "env": {**base, "PYTHONPATH": str(ROOT)}}
    as_nobody = {
        "python": system_python,
        "env": {**base, "PYTHONPATH": str(tmp / "code")},
        "user": "nobody",
        "group": "nogroup",
        "extra_groups": [],
    }

    def hold(who: dict, kernel: str, notebook: str) -> tuple[subprocess.Popen, int]:
        p = subprocess.Popen(
            [who["python"], "-c", HOLD, str(tmp / "locks"), kernel, notebook],
            env=who["env"],
            user=who.get("user"),
            group=who.get("group"),
            extra_groups=who.get("extra_groups"),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            start_new_session=True,
            cwd="/tmp",
        )
        held.append(p)
        return p, json.loads(p.stdout.readline())[0]

    def call(who: dict, *args: str, extra_env: dict | None = None) -> subprocess.CompletedProcess:
        return run(
            [who["python"], *args],
            env={**who["env"], **(extra_env or {})},
            user=who.get("user"),
            group=who.get("group"),
            extra_groups=who.get("extra_groups"),
            capture_output=True,
            text=True,
            timeout=60,
            cwd="/tmp",
        )

    yield tmp, as_root, as_nobody, hold, call
    for p in held:
        p.stdin.close()
        kill_group(p)
        p.stdout.close()
    shutil.rmtree(tmp)


def test_watch_shows_another_users_notebook_only_to_root(server):
    tmp, as_root, as_nobody, hold, call = server
    _, mine = hold(as_root, "k-root-1", "instructor/solutions.ipynb")
    _, theirs = hold(as_nobody, "k-nobody-1", "student/lesson.ipynb")
    seen_by_nobody = {
        i: (user, nb) for i, user, nb in json.loads(call(as_nobody, "-c", VIEW, str(tmp / "locks")).stdout)
    }
    assert seen_by_nobody == {mine: ("root", HIDDEN), theirs: ("nobody", "student/lesson.ipynb")}
    # (the instructor group, which reads every path where the folder hands it the files: tests/server/test_private.py)
    # root sees every path, in watch's own view
    rows = {r.physical_index: r for r in reservation_rows(W8_GPUS, tmp / "locks")}
    assert rows[theirs].notebook == "student/lesson.ipynb" and rows[theirs].user == "nobody"
    text = render_text(read_server("workshop-8", tmp / "locks"))
    assert "student/lesson.ipynb" in text and "instructor/solutions.ipynb" in text
    assert rows[mine].kernel == "k-root-1" and rows[mine].idle_s is not None and rows[mine].idle_s >= 0


def test_a_student_can_release_their_own_reservation_and_no_one_elses(server):
    tmp, as_root, as_nobody, hold, call = server
    root_holder, mine = hold(as_root, "k-root-2", "instructor/demo.ipynb")
    nobody_holder, theirs = hold(as_nobody, "k-nobody-2", "student/lesson.ipynb")
    refused = call(as_nobody, "-m", "gpulab", "release", str(mine))
    assert refused.returncode == 1
    assert (
        f"GPU {mine} is held by root (kernel k-root-2), not by you: a student can release only their own"
        in refused.stderr
    )
    assert root_holder.poll() is None
    assert {r.physical_index for r in reservation_rows(W8_GPUS, tmp / "locks")} == {mine, theirs}
    done = call(as_nobody, "-m", "gpulab", "release", str(theirs))
    assert done.returncode == 0, done.stderr
    assert (
        f"GPU {theirs} is free for now: the kernel k-nobody (nobody) that held it was stopped, but its Jupyter "
        "server could not be asked to shut it down" in done.stdout
    )
    assert nobody_holder.wait(10) != 0
    assert {r.physical_index for r in reservation_rows(W8_GPUS, tmp / "locks")} == {mine}
    nothing = call(as_nobody, "-m", "gpulab", "release", str(theirs))
    assert nothing.returncode == 1 and "is not reserved by anyone" in nothing.stderr
