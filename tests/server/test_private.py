"""Private by default, between real Unix users on one server: a student reads neither another student's notebook path
nor a server's name from any file or command, and cannot overwrite what another's reservation says of its holder; the
instructor group still sees everything in ``watch``.

Needs root, to start processes as other users: nobody (a student who holds a GPU from a kernel), daemon (the curious
student next to them, or, in the instructor's folder, a member of the instructor group) and root (the JupyterHub,
holding a GPU for alice's server). The other users run the system's Python on a copy of ``gpulab`` (and psutil, for
``watch``) in a scratch folder. The curious student tries what a student would: read every file of the folder (the
lock files first), ``python -m gpulab watch``, the holders' details; and writes a forged holder into the lock file and
into the names of the holder files. Reading ``/proc`` is another matter (``ps`` shows users and kernel ids anyway).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from gpulab.machine.simulated import SimulatedGpuReader
from gpulab.reservations.holders import reservation_holders
from gpulab.server.reservation_list import HIDDEN, HIDDEN_SERVER, reservation_rows
from tests.other_user import readable_copy, system_python_for_nobody
from tests.process_group import kill_group, run

ROOT = Path(__file__).resolve().parents[2]
W8 = SimulatedGpuReader("workshop-8")
W8_GPUS = [W8.info(i) for i in range(W8.count())]
UUIDS = [g.uuid for g in W8_GPUS]
NOTEBOOK = "week3/my-secret-notebook.ipynb"
SERVER = "thesis-experiments"

HOLD = """
import json, sys
from gpulab.placement.reservation import reserve_gpus
r = reserve_gpus(1, "workshop-8", reservations=sys.argv[1], details=json.loads(sys.argv[2]))
print(json.dumps(list(r.physical_indices)), flush=True)
sys.stdin.read()
"""
# What a curious student runs: every file of the folder, whatever it is, read if it can be; the holders' details.
PEEK = """
import json, os, sys
from pathlib import Path
from gpulab.machine.simulated import SimulatedGpuReader
from gpulab.reservations.holders import reservation_holders
r = SimulatedGpuReader("workshop-8")
read = {}
for path in sorted(Path(sys.argv[1]).iterdir()):
    try:
        read[path.name] = path.read_text()
    except OSError as exc:
        read[path.name] = "refused: " + type(exc).__name__
holders = reservation_holders([r.info(i).uuid for i in range(8)], sys.argv[1])
seen = {u: [h.user, h.details, list(getattr(h, "hidden", ()))] for u, h in holders.items()}
print(json.dumps({"files": read, "holders": seen}))
"""
# What a student who wants to pass for another writes: into the lock file every student may open, and into the names
# of the holder files, before and after the holder wrote its own.
FORGE = """
import json, os, sys
from pathlib import Path
d, victim_uid, victim_pid, held, next_free = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], \
    sys.argv[5]
forged = json.dumps({"pid": victim_pid, "uid": victim_uid, "user": "nobody", "host": os.uname().nodename,
                     "since": 9e9, "details": {"kernel": "forged", "notebook": "forged.ipynb"}, "private": []})
done = []
for uuid in (held, next_free):
    for name in (f"gpu-{uuid}.lock", f"gpu-{uuid}.holder.{victim_uid}.json", f"gpu-{uuid}.private.{victim_uid}.json"):
        try:
            fd = os.open(d / name, os.O_WRONLY | os.O_CREAT, 0o666)
            os.ftruncate(fd, 0)
            os.write(fd, forged.encode())
            os.close(fd)
            done.append(name)
        except OSError:
            pass
print(json.dumps(done))
"""


@pytest.fixture
def room():
    """A scratch folder of reservations, ways to run Python as root, nobody and daemon, and the holders it started."""
    system_python = system_python_for_nobody()
    tmp = readable_copy("gpulab-private-", packages=("psutil",))
    held: list[subprocess.Popen] = []
    base = {"GPULAB_SIMULATE_GPUS": "workshop-8", "HOME": "/tmp", "PATH": "/usr/bin:/bin"}
    users = {
        "root": {"python": sys.executable, "env": {**base, "PYTHONPATH": str(ROOT)}},
        **{
            name: {
                "python": system_python,
                "env": {**base, "PYTHONPATH": str(tmp / "code")},
                "user": name,
                "group": group,
                "extra_groups": [],
            }
            for name, group in (("nobody", "nogroup"), ("daemon", "daemon"))
        },
    }

    def popen_args(who: str, env: dict | None) -> dict:
        u = users[who]
        return {
            "env": {**u["env"], **(env or {})},
            "user": u.get("user"),
            "group": u.get("group"),
            "extra_groups": u.get("extra_groups"),
            "cwd": "/tmp",
        }

    def hold(who: str, folder: Path, details: dict, env: dict | None = None) -> tuple[subprocess.Popen, int]:
        p = subprocess.Popen(
            [users[who]["python"], "-c", HOLD, str(folder), json.dumps(details)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            start_new_session=True,
            **popen_args(who, env),
        )
        held.append(p)
        return p, json.loads(p.stdout.readline())[0]

    def call(who: str, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
        done = run([users[who]["python"], *args], capture_output=True, text=True, timeout=120, **popen_args(who, env))
        assert done.returncode == 0, done.stderr
        return done

    yield tmp, hold, call
    for p in held:
        p.stdin.close()
        kill_group(p)
        p.stdout.close()
    shutil.rmtree(tmp)


def _folder(tmp: Path, name: str, group: str) -> Path:
    """A reservations folder as an administrator makes one: sticky, world-writable, setgid to ``group``."""
    d = tmp / name
    d.mkdir()
    shutil.chown(d, group=group)
    os.chmod(d, 0o3777)
    return d


def test_a_student_reads_no_one_elses_notebook_or_server_and_cannot_rewrite_their_holder(room):
    tmp, hold, call = room
    d = _folder(tmp, "locks", "root")  # no instructor group on this machine: private files are 0600
    student, theirs = hold("nobody", d, {"kernel": "k-nobody-1", "notebook": NOTEBOOK})
    _, hubs = hold("root", d, {"for_user": "alice", "server": SERVER})
    nobody_uid, uuid = 65534, W8_GPUS[theirs].uuid
    next_free = W8_GPUS[5].uuid  # the GPU the next reservation gets (workshop-8: 1 and 3 are taken now)

    # The curious student (daemon): every file of the folder, the holders, and `python -m gpulab watch`.
    peek = json.loads(call("daemon", "-c", PEEK, str(d)).stdout)
    seen = json.dumps(peek["files"])
    assert NOTEBOOK not in seen and SERVER not in seen
    assert any(name.endswith(".lock") for name in peek["files"])  # the lock files were read, and said nothing
    assert peek["holders"][uuid] == ["nobody", {"kernel": "k-nobody-1"}, ["notebook"]]
    assert peek["holders"][W8_GPUS[hubs].uuid] == ["root", {"for_user": "alice"}, ["server"]]
    watch = call("daemon", "-m", "gpulab", "watch", "--frames", "1", env={"GPULAB_RESERVATIONS_DIR": str(d)}).stdout
    assert NOTEBOOK not in watch and SERVER not in watch
    assert f"GPU {theirs}: nobody · kernel k-nobody · {HIDDEN}" in watch and "alice via root" in watch

    # The same student forges a holder: into the lock file, and into the holder files' names for the next GPU.
    forged = json.loads(call("daemon", "-c", FORGE, str(d), str(nobody_uid), str(student.pid), uuid, next_free).stdout)
    assert f"gpu-{uuid}.lock" in forged  # the lock file is everyone's to open, and to write; nobody believes it
    assert not any(f".{nobody_uid}.json" in name and uuid in name for name in forged)  # the holder's own: refused
    _, second = hold("nobody", d, {"kernel": "k-nobody-2", "notebook": "week3/second.ipynb"})
    assert W8_GPUS[second].uuid == next_free
    held = reservation_holders(UUIDS, d)  # as root (the instructor): the truth, every detail
    assert held[uuid].details == {"kernel": "k-nobody-1", "notebook": NOTEBOOK} and held[uuid].user == "nobody"
    assert held[next_free].user == "nobody" and held[next_free].pid != student.pid
    assert "forged" not in json.dumps(held[next_free].details)  # the squatted names are not believed
    assert held[W8_GPUS[hubs].uuid].details == {"for_user": "alice", "server": SERVER}

    # The student who holds it sees their own notebook; root sees every path and server in watch's rows.
    own = json.loads(call("nobody", "-c", PEEK, str(d)).stdout)
    assert own["holders"][uuid][1] == {"kernel": "k-nobody-1", "notebook": NOTEBOOK}
    rows = {r.physical_index: r for r in reservation_rows(W8_GPUS, d)}
    assert rows[theirs].notebook == NOTEBOOK and rows[hubs].kernel == SERVER
    assert reservation_rows(W8_GPUS, d, viewer_uid=1)[0].notebook in (HIDDEN, "")  # root asking for a student's view
    assert {r.kernel for r in reservation_rows(W8_GPUS, d, viewer_uid=1) if r.physical_index == hubs} == {HIDDEN_SERVER}


def test_the_instructor_group_reads_every_notebook_and_server_in_watch(room):
    tmp, hold, call = room
    d = _folder(tmp, "course", "daemon")  # the folder hands its files the instructor group (setgid)
    instructors = {"GPULAB_INSTRUCTOR_GROUP": "daemon"}  # daemon is the instructor here
    _, theirs = hold("nobody", d, {"kernel": "k-nobody-3", "notebook": NOTEBOOK}, env=instructors)
    _, hubs = hold("root", d, {"for_user": "alice", "server": SERVER}, env=instructors)
    private = {p.name: oct(p.stat().st_mode & 0o777) for p in d.glob("*.private.*.json")}
    assert set(private.values()) == {"0o640"} and len(private) == 2
    watch = call(
        "daemon", "-m", "gpulab", "watch", "--frames", "1", env={**instructors, "GPULAB_RESERVATIONS_DIR": str(d)}
    )
    assert NOTEBOOK in watch.stdout and SERVER in watch.stdout
    # a student outside the group (nobody's holder does not make nobody an instructor) still reads no server name
    peek = json.loads(call("nobody", "-c", PEEK, str(d), env=instructors).stdout)
    assert SERVER not in json.dumps(peek) and peek["holders"][W8_GPUS[hubs].uuid][2] == ["server"]
    assert peek["holders"][W8_GPUS[theirs].uuid][1]["notebook"] == NOTEBOOK  # their own
