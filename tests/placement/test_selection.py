"""Free-GPU policy (pure) and cross-process reservations: real processes, real locks, a described machine."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

import gpulab
from gpulab.core.readings import GpuProcess, Unavailable
from gpulab.core.reservable import device_readings
from gpulab.machine.simulated import SimulatedGpuReader, simulated_gpu
from gpulab.placement.reservation import reserve_gpus
from gpulab.placement.selection import NoFreeGpu, Policy, choose_gpus, choose_up_to, rank_gpus
from gpulab.reservations.folder import reservations_dir
from gpulab.reservations.holders import reservation_holders
from tests.other_user import readable_copy, system_python_for_nobody
from tests.process_group import kill_group
from tests.seams import FakeClock

ROOT = Path(__file__).resolve().parents[2]
W8 = SimulatedGpuReader("workshop-8")
W8_GPUS = [W8.info(i) for i in range(W8.count())]


def current_holders(uuids: list[str], reservations=None) -> dict[str, str]:
    """Which of these GPUs someone holds right now, and who, in words."""
    return {uuid: str(h) for uuid, h in reservation_holders(uuids, reservations).items()}


# -- the pure policy --------------------------------------------------------------------------------------------------
def test_workshop_machine_free_gpus_are_ranked_first():
    ranking = rank_gpus(W8_GPUS)
    free = [v.gpu.physical_index for v in ranking if v.free]
    assert free == [1, 3, 5]  # GPU 6 is nearly idle but a process holds a context on it
    verdicts = {v.gpu.physical_index: v.reason for v in ranking}
    assert "1 process(es) already have a CUDA context on it (pid 31006)" in verdicts[6]
    assert "97% > 10%" in verdicts[4]
    assert [v.gpu.physical_index for v in ranking if not v.free][:2] == [6, 2]  # then by free memory


def test_choose_respects_policy_taken_and_allowed():
    c = choose_gpus(2, W8_GPUS)
    assert c.physical_indices == (1, 3) and c.visible_devices == f"{W8_GPUS[1].uuid},{W8_GPUS[3].uuid}"
    assert "→ cuda:0" in str(c) and "<table" in c._repr_html_()
    assert choose_gpus(1, W8_GPUS, taken={W8_GPUS[1].uuid: "pid 7 (bob@box)"}).physical_indices == (3,)
    assert choose_gpus(1, W8_GPUS, allowed={5, 6}).physical_indices == (5,)
    loose = Policy(max_memory_used_fraction=0.6, max_utilization_percent=70, allow_processes=True)
    assert choose_gpus(6, W8_GPUS, loose).physical_indices == (1, 3, 5, 6, 2, 7)


def test_mig_and_unknown_fields():
    r = SimulatedGpuReader("two-gpus-mig")
    gpus = [r.info(i) for i in range(r.count())]
    loose = Policy(allow_processes=True, max_utilization_percent=50)
    assert not rank_gpus(gpus, loose)[-1].free and "MIG mode" in rank_gpus(gpus, loose)[-1].reason  # judged whole
    v = {x.gpu.label: x for x in rank_gpus(device_readings(gpus), loose)}
    assert sorted(v) == ["0/mig0", "0/mig1", "1"]  # as devices to choose: the card in MIG mode is its two slices
    assert v["0/mig0"].free and "utilisation N/A (no utilisation per MIG slice)" in v["0/mig0"].reason
    g = simulated_gpu(0, "Odd GPU", 8192, unsupported=("utilization_gpu_percent",))
    odd = SimulatedGpuReader({"driver_version": "x", "cuda_driver_version": "y", "gpus": [g]}).info(0)
    assert rank_gpus([odd])[0].free and "utilisation N/A (not supported on this GPU)" in rank_gpus([odd])[0].reason
    unknown = odd.__class__(**{**odd.__dict__, "memory_used_bytes": Unavailable("no permission to read it")})
    assert "memory use unknown" in rank_gpus([unknown])[0].reason


def test_a_card_in_mig_mode_offers_its_slices_each_chosen_alone_by_its_mig_uuid(monkeypatch):
    monkeypatch.setenv("GPULAB_SIMULATE_GPUS", "two-gpus-mig")
    gpus = gpulab.devices().gpus  # the described machine, read as a learner's would be
    slices = gpus[0].mig_devices
    one = choose_gpus(1, gpus)
    assert (
        [g.label for g in one.chosen] == ["0/mig0"]
        and one.visible_devices == slices[0].uuid
        and one.physical_indices == (0,)
    )
    assert "0/mig0    NVIDIA A100 80GB PCIe MIG 3g.40gb  → cuda:0" in str(one)
    assert "0/mig1    NVIDIA A100 80GB PCIe MIG 3g.40gb  free" in str(one)
    assert choose_gpus(1, gpus, taken={slices[0].uuid: "pid 7 (bob@box)"}).visible_devices == slices[1].uuid
    # NVIDIA's MIG guide: a CUDA process enumerates one MIG device only, so two slices are not two GPUs
    with pytest.raises(NoFreeGpu, match=r"MIG slice\(s\) 0/mig0, 0/mig1 are free, but CUDA lets a process use one MIG"):
        choose_gpus(2, gpus)
    busy = dataclasses.replace(gpus[0], processes=(GpuProcess(77, 600 * 2**20, "python"),))
    assert not free_labels(busy)  # a process on the card: which slice it uses is not read, so none is free
    bare = dataclasses.replace(gpus[0], mig_devices=())
    with pytest.raises(NoFreeGpu, match=r"GPU 0: in MIG mode: CUDA cannot use the whole GPU, and it has no MIG slice"):
        choose_gpus(1, [bare])


def free_labels(gpu):
    return [v.gpu.label for v in rank_gpus([gpu]) if v.free]


def test_not_enough_free_gpus_says_why_each_was_passed_over():
    with pytest.raises(NoFreeGpu, match=r"asked for 4 free GPU\(s\) but only 3 of 8 qualify:\n  GPU 1: free") as e:
        choose_gpus(4, W8_GPUS)
    assert "GPU 4: 38.9 GiB of 40.0 GiB used" in str(e.value) and "ask for fewer" in str(e.value)
    with pytest.raises(NoFreeGpu, match=r"CUDA_VISIBLE_DEVICES hides the others"):
        choose_gpus(2, W8_GPUS, allowed={0, 1})
    with pytest.raises(NoFreeGpu, match="this machine has no GPU that NVML can see"):
        choose_gpus(1, [])


@pytest.mark.parametrize("n, error", [(0, ValueError), (-1, ValueError), (1.5, TypeError), (True, TypeError)])
def test_choose_needs_a_positive_count(n, error):
    with pytest.raises(error, match=r"n \(how many GPUs you want\) (must be|takes) a whole number ≥ 1"):
        choose_gpus(n, W8_GPUS)


def test_policy_bounds():
    with pytest.raises(ValueError, match="between 0 and 1"):
        Policy(max_memory_used_fraction=10)
    with pytest.raises(ValueError, match="between 0 and 100"):
        Policy(max_utilization_percent=-5)


# -- reservations in this process -------------------------------------------------------------------------------------
def test_reservations_exclude_each_other_and_release(tmp_path):
    with reserve_gpus(2, W8, reservations=tmp_path) as a:
        assert a.physical_indices == (1, 3) and a.held
        b = reserve_gpus(1, W8, reservations=tmp_path)
        assert b.physical_indices == (5,)
        holders = current_holders([g.uuid for g in W8_GPUS], tmp_path)
        assert set(holders) == {W8_GPUS[i].uuid for i in (1, 3, 5)} and holders[W8_GPUS[1].uuid] == "this notebook"
        with pytest.raises(NoFreeGpu, match=r"GPU 1: yours: reserved by this notebook"):  # not taken twice
            reserve_gpus(1, W8, reservations=tmp_path)
        b.release()
        assert "released" in str(b) and a.env() == {"CUDA_VISIBLE_DEVICES": a.visible_devices}
    assert not a.held and current_holders([g.uuid for g in W8_GPUS], tmp_path) == {}
    assert oct(tmp_path.stat().st_mode & 0o7777) == "0o1777"
    modes = {
        p.name.split(".")[-3] if p.suffix == ".json" else p.suffix: oct(p.stat().st_mode & 0o777)
        for p in tmp_path.iterdir()
    }
    # lock files every student opens; the holder's public file; its private one (no instructor group here: 0600)
    assert modes == {".lock": "0o666", "holder": "0o644", "private": "0o600"}


def test_waiting_uses_the_injected_clock(tmp_path):
    clock = FakeClock()
    held = reserve_gpus(3, W8, reservations=tmp_path)
    with pytest.raises(NoFreeGpu):
        reserve_gpus(1, W8, reservations=tmp_path, wait_s=3.0, clock=clock, sleep=clock.sleep)
    assert clock() == pytest.approx(1003.0)  # polled until the deadline, then gave up
    held.release()


def test_only_gpus_the_environment_allows(tmp_path, monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "5,4")
    assert reserve_gpus(1, W8, reservations=tmp_path).physical_indices == (5,)


def test_unusable_directory_says_what_to_do(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    for d in (blocker, blocker / "sub"):  # a file where the directory should be: no mkdir advice, the way out instead
        with pytest.raises(NotADirectoryError, match=rf"{blocker} is a file, not a directory. Point reservations="):
            reservations_dir(d)
    with pytest.raises(PermissionError, match=r"cannot use .* for GPU reservations .*chmod 3777"):
        reservations_dir("/proc/gpulab-reservations")  # nobody, not even root, may make a directory there


# -- real concurrent processes ----------------------------------------------------------------------------------------
WORKER = r"""
import json, sys, time
from pathlib import Path
from gpulab.placement.reservation import reserve_gpus
from gpulab.placement.selection import NoFreeGpu
go, n, directory = Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
while not go.exists():
    time.sleep(0.002)
try:
    r = reserve_gpus(n, reservations=directory)
    print(json.dumps({"got": list(r.physical_indices)}), flush=True)
except NoFreeGpu as exc:
    print(json.dumps({"none": str(exc).splitlines()[0]}), flush=True)
sys.stdin.read()  # hold the reservation until the test lets go
"""


def _start(k: int, tmp: Path, simulate: str, n: int = 1, python: str = sys.executable, **popen) -> subprocess.Popen:
    env = {**os.environ, "GPULAB_SIMULATE_GPUS": simulate, "PYTHONPATH": str(ROOT)}
    env.pop("CUDA_VISIBLE_DEVICES", None)
    return subprocess.Popen(
        [python, "-c", WORKER, str(tmp / "go"), str(n), str(tmp / "locks")],
        env={**env, **popen.pop("env", {})},
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        **popen,
    )


def _race(tmp: Path, simulate: str, count: int = 8) -> list[dict]:
    procs = [_start(k, tmp, simulate) for k in range(count)]
    try:
        (tmp / "go").touch()  # all eight start choosing at the same moment
        results = [json.loads(p.stdout.readline() or json.dumps({"crash": p.stderr.read()})) for p in procs]
    finally:
        for p in procs:
            p.stdin.close()
            try:
                p.wait(timeout=60)
            finally:
                kill_group(p)  # on a hang too: the worker and anything it started
            p.stdout.close()
            p.stderr.close()
    return results


def test_eight_kernels_at_once_on_the_workshop_server_never_share_a_gpu(tmp_path):
    results = _race(tmp_path, "workshop-8")
    got = [r["got"][0] for r in results if "got" in r]
    assert sorted(got) == [1, 3, 5], results  # each free GPU exactly once
    assert sum("none" in r for r in results) == 5 and all("crash" not in r for r in results)


def test_eight_kernels_on_eight_free_gpus_get_eight_different_ones(tmp_path):
    box = tmp_path / "eight.json"
    box.write_text(json.dumps({"gpus": [simulated_gpu(i, "NVIDIA L4", 23034) for i in range(8)]}))
    results = _race(tmp_path, str(box))
    assert sorted(r["got"][0] for r in results) == list(range(8)), results


def test_a_reservation_dies_with_its_process(tmp_path):
    (tmp_path / "go").touch()
    holder = _start(0, tmp_path, "workshop-8", n=3)
    assert json.loads(holder.stdout.readline()) == {"got": [1, 3, 5]}
    with pytest.raises(NoFreeGpu):
        reserve_gpus(1, W8, reservations=tmp_path / "locks")
    holder.send_signal(signal.SIGKILL)  # no clean-up code runs: only the kernel can release the lock
    holder.wait(timeout=30)
    holder.stdin.close(), holder.stdout.close(), holder.stderr.close()
    assert reserve_gpus(3, W8, reservations=tmp_path / "locks").physical_indices == (1, 3, 5)


@pytest.fixture
def as_nobody():
    """A scratch directory, and a way to start a reserving process in it as the Unix user nobody (needs root).

    User nobody runs the system's Python on a copy of this checkout's ``gpulab`` in the scratch directory (the
    reservation code needs nothing outside the standard library), so the test runs wherever the clone sits, a
    private folder such as root's home included."""
    system_python = system_python_for_nobody()
    tmp = readable_copy("gpulab-users-")
    (tmp / "go").touch()

    def start(n: int) -> subprocess.Popen:
        other = _start(
            1,
            tmp,
            "workshop-8",
            n=n,
            python=system_python,
            user="nobody",
            env={"PYTHONPATH": str(tmp / "code"), "HOME": "/tmp"},
        )
        started.append(other)
        return other

    started: list[subprocess.Popen] = []
    yield tmp, start
    for other in started:
        other.stdin.close(), other.wait(timeout=30), other.stdout.close(), other.stderr.close()
    shutil.rmtree(tmp)


def _reply(other: subprocess.Popen) -> dict:
    line = other.stdout.readline()
    return json.loads(line or json.dumps({"crash": other.stderr.read()}))


def test_students_who_are_different_unix_users_share_the_directory(as_nobody):
    tmp, start = as_nobody
    mine = reserve_gpus(1, W8, reservations=tmp / "locks")  # root creates the directory and GPU 1's lock file
    assert _reply(start(2)) == {"got": [3, 5]}
    holders = current_holders([g.uuid for g in W8_GPUS], tmp / "locks")
    assert "(nobody@" in holders[W8_GPUS[3].uuid] and holders[W8_GPUS[1].uuid] == "this notebook"
    mine.release()


def test_a_holder_who_cannot_write_into_the_lock_file_is_still_named_and_not_as_the_previous_one(as_nobody):
    tmp, start = as_nobody
    reserve_gpus(1, W8, reservations=tmp / "locks").release()  # root named itself for GPU 1, then let go
    os.chmod(tmp / "locks" / f"gpu-{W8_GPUS[1].uuid}.lock", 0o644)  # a lock file its maker left private
    other = start(1)
    assert _reply(other) == {"got": [1]}
    who = current_holders([W8_GPUS[1].uuid], tmp / "locks")[W8_GPUS[1].uuid]
    assert who.startswith(f"pid {other.pid} (nobody@"), who  # nobody holds it, named from its own file, not root


def test_release_lets_go_even_while_a_forked_child_lives(tmp_path):
    # A DataLoader worker or a notebook launcher forked after reserving inherits the lock's file descriptors; a lock
    # only closed (not unlocked) would stay held until every such child had exited.
    held = reserve_gpus(1, W8, reservations=tmp_path)
    child = subprocess.Popen(
        [sys.executable, "-c", "import sys; sys.stdin.read()"],
        stdin=subprocess.PIPE,
        pass_fds=tuple(held._fds.values()),
    )
    try:
        held.release()
        assert current_holders([W8_GPUS[1].uuid], tmp_path) == {}
        assert reserve_gpus(1, W8, reservations=tmp_path).physical_indices == (1,)
    finally:
        child.stdin.close()
        child.wait(timeout=30)


def test_a_planted_symbolic_link_is_refused_with_the_reason(tmp_path):
    reader = SimulatedGpuReader("colab-T4")
    target = tmp_path / "someone-elses-file"
    target.write_text("precious")
    (tmp_path / f"gpu-{reader.info(0).uuid}.lock").symlink_to(target)
    with pytest.raises(PermissionError, match="is a symbolic link, and gpulab does not follow links"):
        reserve_gpus(1, reader, reservations=tmp_path)
    assert target.read_text() == "precious"


def test_an_existing_lock_file_is_reopened_and_its_holder_named_in_a_file_of_its_own(tmp_path):
    reader = SimulatedGpuReader("colab-T4")
    reserve_gpus(1, reader, reservations=tmp_path).release()
    uuid = reader.info(0).uuid
    (tmp_path / f"gpu-{uuid}.lock").write_text('{"pid": 1, "details": {"notebook": "an older gpulab wrote this"}}')
    again = reserve_gpus(1, reader, reservations=tmp_path)
    assert current_holders([uuid], reservations=tmp_path) == {uuid: "this notebook"}
    assert (tmp_path / f"gpu-{uuid}.lock").read_text() == ""  # what an older gpulab wrote there is gone
    named = json.loads((tmp_path / f"gpu-{uuid}.holder.{os.geteuid()}.json").read_text())
    assert named["pid"] == os.getpid()
    again.release()


def test_a_reservation_carries_its_details_to_whoever_reads_the_holders(tmp_path):
    """What a provisioner or a JupyterHub hook says of a reservation (kernel, notebook, the user it is for) is read back
    by every view of the holders, this process's own included."""
    details = {"kernel": "5f1c", "notebook": "lesson.ipynb", "for_user": "alice"}
    with reserve_gpus(1, "workshop-8", reservations=tmp_path, details=details) as r:
        held = reservation_holders([g.uuid for g in r.gpus], tmp_path)
        (holder,) = held.values()
        assert holder.mine and holder.details == details
    plain = reserve_gpus(1, "workshop-8", reservations=tmp_path)
    assert list(reservation_holders([g.uuid for g in plain.gpus], tmp_path).values())[0].details == {}
    plain.release()


@pytest.mark.parametrize(
    "details, error, text",
    [
        ("alice", TypeError, r"expected a dict of short strings"),
        ({"ports": 29500}, TypeError, r"'ports' is not a string key with a string value; convert numbers with str\(\)"),
        ({"notebook": "x" * 3000}, ValueError, r"a reservation keeps at most 2048"),
    ],
)
def test_wrong_details_are_refused_before_any_gpu_is_locked(tmp_path, details, error, text):
    with pytest.raises(error, match=text):
        reserve_gpus(1, "workshop-8", reservations=tmp_path, details=details)
    assert reservation_holders([g.uuid for g in W8_GPUS], tmp_path) == {}


def test_choose_up_to_ticks_the_free_ones_and_says_why_the_others_were_passed_over():
    reader = SimulatedGpuReader("workshop-8")
    gpus = [reader.info(i) for i in range(reader.count())]
    chosen, said = choose_up_to(4, gpus, allowed={0, 1, 3, 5})
    assert chosen == (1, 3, 5)
    assert said.splitlines() == [
        "Asked for 4 free GPU(s) but only 3 are free, so GPU 1, 3, 5 are ticked. Passed over:",
        "  GPU 0: 29.4 GiB of 40.0 GiB used (74% > 10%)",
        "  (only GPU(s) [0, 1, 3, 5] may be used by this process: CUDA_VISIBLE_DEVICES hides the others)",
    ]
    assert choose_up_to(2, gpus, allowed={1, 3}) == ((1, 3), "")
    with pytest.raises(NoFreeGpu, match="asked for 1 free GPU"):
        choose_up_to(1, gpus, allowed={0, 2})


def test_each_mig_slice_is_reserved_once_and_a_third_kernel_is_told_none_is_free(tmp_path):
    first = reserve_gpus(1, "two-gpus-mig", reservations=tmp_path)
    second = reserve_gpus(1, "two-gpus-mig", reservations=tmp_path)  # the card's other slice, not the same one
    assert {first.visible_devices, second.visible_devices} == {
        m.uuid for m in SimulatedGpuReader("two-gpus-mig").info(0).mig_devices
    }
    with pytest.raises(NoFreeGpu, match=r"GPU 0/mig0: yours: reserved by this notebook\n  GPU 0/mig1: yours"):
        reserve_gpus(1, "two-gpus-mig", reservations=tmp_path)
    first.release()
    second.release()
