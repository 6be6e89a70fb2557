"""``python -m gpulab release GPU`` on a card held in shares: with several holders it releases none and lists them,
with ``--share K`` it stops that share's holder only and waits for that share, not for the whole card.

The holders are real processes, each holding one share of colab-T4's one card through ``reserve_share`` as a kernel
started on a share does; ``release`` runs as the student runs it."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from gpulab.machine.simulated import SimulatedGpuReader
from gpulab.reservations.holders import reservation_holders
from tests.process_group import kill_group, run

from .jupyter import ROOT

CARD = SimulatedGpuReader("colab-T4").info(0).uuid
HOLDER = """
import sys
from gpulab.placement.share_reservation import reserve_share
held = reserve_share(3, "colab-T4", reservations=sys.argv[1])
print(held.share.share, flush=True)
sys.stdin.read()
"""


@pytest.fixture
def holders(tmp_path):
    started = []
    env = {k: v for k, v in os.environ.items() if k != "CUDA_VISIBLE_DEVICES"}
    for _ in range(2):  # one after the other: share 1, then share 2
        p = subprocess.Popen(
            [sys.executable, "-c", HOLDER, str(tmp_path)],
            env={**env, "PYTHONPATH": str(ROOT)},
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        started.append(p)
        assert p.stdout.readline().strip() == str(len(started))
    yield started
    for p in started:
        kill_group(p)
        p.stdin.close()
        p.stdout.close()


def _release(folder, *args: str):
    env = {**os.environ, "GPULAB_SIMULATE_GPUS": "colab-T4", "GPULAB_RESERVATIONS_DIR": str(folder)}
    env["PYTHONPATH"] = str(ROOT)
    return run([sys.executable, "-m", "gpulab", "release", *args], env=env, capture_output=True, text=True, timeout=60)


def _shares(folder) -> list[int]:
    held = reservation_holders([CARD], folder).get(CARD)
    return [k for k, _, _ in held.shares] if held else []


def test_release_of_a_shared_card_lists_its_holders_and_stops_only_the_share_asked_for(tmp_path, holders):
    first, second = holders
    done = _release(tmp_path, "0")
    assert done.returncode == 1 and _shares(tmp_path) == [1, 2]  # nobody stopped
    assert "GPU 0 is held in shares by 2 processes; release one share at a time:" in done.stderr, done.stderr
    assert "share 1 of 3 (" in done.stderr and f"pid {first.pid}" in done.stderr and f"pid {second.pid}" in done.stderr
    assert "python -m gpulab release 0 --share 2" in done.stderr

    done = _release(tmp_path, "0", "--share", "2")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"share 2 of 3 of GPU 0 is free: the process {second.pid} (")
    assert second.wait(30) is not None and first.poll() is None  # the other share's holder runs on
    assert _shares(tmp_path) == [1]

    done = _release(tmp_path, "0", "--share", "3")
    assert done.returncode == 1
    assert "share 3 of GPU 0 is not held: the shares held are share 1 of 3" in done.stderr, done.stderr

    done = _release(tmp_path, "0")  # one holder left: no doubt which
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"share 1 of 3 of GPU 0 is free: the process {first.pid} (")
    assert _shares(tmp_path) == []
