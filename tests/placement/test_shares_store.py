"""Shares of a GPU in the reservations store: never double-booked, never on a card held whole, freed with their holder.

The race tests start real processes that take the same card at the same moment through the store's own primitives,
without the machine's selection lock, so that only the kernel's ``flock`` (shared for shares, exclusive for a whole
card) keeps them apart."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gpulab.core.shares import MEMORY_CAP_VARIABLE, share_cap_bytes
from gpulab.machine.simulated import SimulatedGpuReader
from gpulab.placement.reservation import reserve_gpus
from gpulab.placement.selection import NoFreeGpu
from gpulab.placement.share_reservation import reserve_share
from gpulab.reservations.holders import reservation_holders
from gpulab.reservations.share_slots import hold_share

from .. import process_group
from ..process_group import kill_group

UUID = "GPU-race-0000"
RACER = """
import json, os, sys, time
from pathlib import Path
from gpulab.reservations.folder import hold
from gpulab.reservations.share_slots import hold_share
d, kind, go = Path(sys.argv[1]), sys.argv[2], Path(sys.argv[3])
while not go.exists():
    pass
if kind == "whole":
    got = "whole" if hold(d, "GPU-race-0000") is not None else "none"
else:
    held = hold_share(d, "GPU-race-0000", 3)
    got = f"share {held[2]}" if held else "none"
print(json.dumps(got), flush=True)
sys.stdin.read()  # hold until the test has counted
"""


def _race(tmp_path: Path, kinds: list[str]) -> list[str]:
    go = tmp_path / f"go-{time.monotonic_ns()}"
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", RACER, str(tmp_path), kind, str(go)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
            start_new_session=True,
        )
        for kind in kinds
    ]
    try:
        go.touch()
        return [json.loads(p.stdout.readline()) for p in procs]
    finally:
        for p in procs:
            kill_group(p)


@pytest.mark.parametrize("round_", range(4))
def test_racing_processes_hold_a_card_either_whole_or_in_distinct_shares_never_both(tmp_path, round_):
    kinds = ["whole", "share"] * 5 if round_ % 2 else ["share", "whole"] * 5
    got = _race(tmp_path, kinds)
    whole = got.count("whole")
    shares = [g for g in got if g.startswith("share")]
    assert whole + len(shares) > 0, got
    assert whole <= 1, got
    assert not (whole and shares), f"a card held whole and in shares at once: {got}"
    assert len(shares) == len(set(shares)) <= 3, f"a share held twice: {got}"
    assert whole or len(shares) == 3, f"a free share was left while others waited: {got}"


def test_a_card_held_in_shares_is_busy_for_whole_gpu_kernels_and_one_held_whole_gives_no_share(tmp_path):
    machine = SimulatedGpuReader("idle-8")
    share = reserve_share(3, machine, reservations=tmp_path)
    card = share.gpus[0]
    whole = reserve_gpus(7, machine, reservations=tmp_path)  # every other card, whole
    assert card.uuid not in {g.uuid for g in whole.gpus}
    other_kernel = (  # another process's whole-GPU reservation: the shared card is busy for it
        "from gpulab.placement.reservation import reserve_gpus\n"
        f"reserve_gpus(1, 'idle-8', reservations={str(tmp_path)!r})"
    )
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    done = process_group.run([sys.executable, "-c", other_kernel], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode != 0 and f"GPU {card.physical_index}: reserved by 1 of 3 shares held" in done.stderr
    others = [reserve_share(3, machine, reservations=tmp_path) for _ in range(2)]
    assert {o.gpus[0].uuid for o in others} == {card.uuid}  # the only card not held whole
    assert sorted([share.share.share, *(o.share.share for o in others)]) == [1, 2, 3]
    with pytest.raises(NoFreeGpu, match=r"(?s)No free share of a GPU.*3 of 3 shares held.*held whole by"):
        reserve_share(3, machine, reservations=tmp_path)
    held = reservation_holders([card.uuid], tmp_path)[card.uuid]
    assert [k for k, _, _ in held.shares] == [1, 2, 3] and held.mine  # this process holds all three


def test_a_share_gives_its_card_and_cap_and_a_card_split_another_way_is_passed_over(tmp_path):
    machine = SimulatedGpuReader("idle-8")
    r = reserve_share(3, machine, reservations=tmp_path)
    g = r.gpus[0]
    cap = share_cap_bytes(g.memory_total_bytes, 3)
    assert r.env() == {"CUDA_VISIBLE_DEVICES": g.uuid, MEMORY_CAP_VARIABLE: str(cap)}
    assert str(r.share) == f"share 1 of 3 of GPU {g.physical_index} ({r.share.cap_bytes / 2**30:.1f} GiB cap)"
    assert hold_share(tmp_path, g.uuid, 2) is None  # the card is split in 3
    two = reserve_share(2, machine, reservations=tmp_path)
    assert two.gpus[0].uuid != g.uuid
    r.release()
    assert reservation_holders([g.uuid], tmp_path) == {}  # the card's shared lock went with the share


def test_shares_spread_over_the_cards_before_doubling_up(tmp_path):
    machine = SimulatedGpuReader("idle-8")
    held = [reserve_share(3, machine, reservations=tmp_path) for _ in range(20)]
    per_card = sorted(sum(1 for r in held if r.gpus[0].uuid == g.uuid) for g in machine_gpus(machine))
    assert per_card == [2, 2, 2, 2, 3, 3, 3, 3]
    assert len({(r.gpus[0].uuid, r.share.share) for r in held}) == 20


def machine_gpus(machine):
    return [machine.info(i) for i in range(machine.count())]


def test_a_share_holder_killed_with_kill_9_frees_its_share_and_the_card(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    code = (
        "import sys; from gpulab.placement.share_reservation import reserve_share\n"
        f"r = reserve_share(3, 'idle-8', reservations={str(tmp_path)!r})\n"
        "print(r.gpus[0].uuid, flush=True); sys.stdin.read()"
    )
    p = subprocess.Popen(
        [sys.executable, "-c", code],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=env,
        start_new_session=True,
    )
    try:
        uuid = p.stdout.readline().strip()
        held = reservation_holders([uuid], tmp_path)[uuid]
        assert [(k, n, h.pid) for k, n, h in held.shares] == [(1, 3, p.pid)]
        os.killpg(p.pid, signal.SIGKILL)
        p.wait(timeout=30)
    finally:
        kill_group(p)
    assert reservation_holders([uuid], tmp_path) == {}
    whole = reserve_gpus(8, "idle-8", reservations=tmp_path)  # every card whole again, that one included
    assert uuid in {g.uuid for g in whole.gpus}


def test_reserve_gpus_in_a_kernel_holding_a_share_hands_over_its_card_without_a_second_reservation(tmp_path):
    share = reserve_share(3, "idle-8", reservations=tmp_path)
    again = reserve_gpus(1, "idle-8", reservations=tmp_path)  # a notebook cell in a kernel started on a share
    assert again.gpus == share.gpus and again.lock_fds == () and again.held_for == "reserved by this notebook"
    share.release()
