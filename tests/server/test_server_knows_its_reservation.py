"""Inside a server whose GPUs the Hub reserved (JupyterHub's server model), those GPUs are the student's own.

Another process plays the Hub: it runs ``gpu_hooks``' real ``pre_spawn_hook`` for alice's and bob's servers on the
described workshop-8 (alice gets GPU 1, bob GPU 3) and holds both reservations, as the Hub's process does. This test's
process then plays a kernel of alice's server, with the environment the hook gave that server: ``reserve_gpus``, the
picker, ``watch`` and the environment report call GPU 1 alice's ("yours"), without a second reservation, and bob's GPU
busy. The real Hub shows the same in ``tests/server/test_hub.py`` (slow).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from gpulab.checkup.report import environment_report
from gpulab.placement.picker import GpuPicker
from gpulab.placement.reservation import reserve_gpus
from gpulab.placement.selection import NoFreeGpu
from gpulab.reservations.holders import reservation_holders
from gpulab.server.watch import read_server

SERVER_TOKEN_ENV = "GPULAB_SERVER_TOKEN"  # what the Hub puts in a server's environment (reservations.server_token)

_HUB = """
import asyncio, json, sys
from types import SimpleNamespace
from gpulab.server.hub import gpu_hooks

pre_spawn_hook, _ = gpu_hooks(n_gpus=1, machine="workshop-8", reservations=sys.argv[1])
envs = {}
for user in ("alice", "bob"):
    spawner = SimpleNamespace(user=SimpleNamespace(name=user), name="", environment={})
    asyncio.run(pre_spawn_hook(spawner))
    envs[user] = spawner.environment
print(json.dumps(envs), flush=True)
sys.stdin.read()  # hold the reservations until the test closes stdin (or kills the group)
"""


@contextmanager
def hub_holding(directory: Path) -> Iterator[tuple[int, dict[str, dict[str, str]]]]:
    """A process that reserved GPUs for alice's and bob's servers as the Hub does; yields its pid and their envs."""
    hub = subprocess.Popen(
        [sys.executable, "-c", _HUB, str(directory)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )  # its own process group, ended with the test
    try:
        line = hub.stdout.readline()
        assert line, f"the Hub's stand-in failed: {hub.stderr.read()}"
        yield hub.pid, json.loads(line)
    finally:
        try:
            os.killpg(hub.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        hub.wait(timeout=30)
        for pipe in (hub.stdin, hub.stdout, hub.stderr):
            pipe.close()


def _as_kernel_of(env: dict[str, str], monkeypatch) -> None:
    monkeypatch.delenv(SERVER_TOKEN_ENV, raising=False)
    for name in ("GPULAB_RESERVATIONS_DIR", "GPULAB_SIMULATE_GPUS", "CUDA_VISIBLE_DEVICES", SERVER_TOKEN_ENV):
        if name in env:
            monkeypatch.setenv(name, env[name])


def test_a_kernel_of_the_server_finds_the_servers_gpus_its_own(tmp_path, monkeypatch):
    with hub_holding(tmp_path) as (hub_pid, envs):
        alice, bob = envs["alice"], envs["bob"]
        _as_kernel_of(alice, monkeypatch)

        held = reserve_gpus(1)  # no second reservation: the server's own GPU, held by the Hub
        assert held.physical_indices == (1,) and held.visible_devices == alice["CUDA_VISIBLE_DEVICES"]
        assert held.held and "reserved for alice's server, which this kernel runs in" in str(held)
        assert not held.lock_fds and {h.pid for h in reservation_holders([g.uuid for g in held.gpus]).values()} == {
            hub_pid
        }
        with pytest.raises(NoFreeGpu, match=r"GPU 1: yours: reserved for alice's server"):
            reserve_gpus(2)  # the server has one GPU; the others are hidden from it

        picker = GpuPicker()
        assert picker.state(1) == "yours" and picker.state(3) == "busy"  # bob's
        assert "reserved for alice's server, which this kernel runs in" in str(picker)
        assert picker.pick_free(1) == (1,) and picker.warnings() == []

        view = read_server()
        assert str(view).splitlines()[-1].endswith("yours: GPU 1")
        assert "reserved for alice's server" in str(view) and "GPU 3" not in str(view).splitlines()[-1]

        tokens = alice.get(SERVER_TOKEN_ENV), bob.get(SERVER_TOKEN_ENV)
        files = "".join(p.read_text() for p in tmp_path.glob("gpu-*.lock"))
        assert tokens[0] != tokens[1] and not any(t in files for t in tokens)  # only their digests are in the files

        finding = next(f for f in environment_report().findings if f.what == "a free GPU to work on")
        assert finding.ok and "GPU 1 yours (reserved for alice's server, which this kernel runs in)" in finding.meaning


def test_without_the_servers_token_its_gpus_are_someone_elses(tmp_path, monkeypatch):
    """Bob's kernel, or a process that lost the server's environment, is refused alice's GPU: the token decides."""
    with hub_holding(tmp_path) as (_, envs):
        _as_kernel_of(envs["bob"], monkeypatch)
        monkeypatch.setenv("CUDA_VISIBLE_DEVICES", envs["alice"]["CUDA_VISIBLE_DEVICES"])
        with pytest.raises(NoFreeGpu, match=r"GPU 1: reserved by pid \d+"):
            reserve_gpus(1)
        assert GpuPicker().state(1) == "busy"


_IN_ALICES_SERVER = """
import gpulab
held = gpulab.reserve_gpus(1)
print(held.physical_indices, held.held_for)
"""


def test_a_hub_started_again_keeps_a_surviving_servers_gpus_its_own(tmp_path):
    """The Hub crashes (kill -9) while alice's server runs; the next Hub reserves her GPU again
    (``reclaim_surviving_servers``, here in this test's process) with her server's token digest, so a process of her
    server still gets the GPU as its own instead of finding it held by the new Hub."""
    from gpulab.server.hub import reclaim_surviving_servers
    from gpulab.server.owners import HubServer
    from tests import process_group

    with hub_holding(tmp_path) as (hub_pid, envs):
        alice = envs["alice"]
        os.killpg(hub_pid, signal.SIGKILL)  # the Hub crashes; alice's server (not started here) would live on
    reclaimed = reclaim_surviving_servers(
        machine="workshop-8",
        reservations=tmp_path,
        servers=lambda: [HubServer(4242, "alice", "", tuple(alice["CUDA_VISIBLE_DEVICES"].split(",")))],
    )
    try:
        assert reclaimed == [("alice", "")]
        env = {**os.environ, **alice, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
        done = process_group.run(
            [sys.executable, "-c", _IN_ALICES_SERVER], env=env, capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip() == "(1,) reserved for alice's server, which this kernel runs in"
    finally:  # what JupyterHub runs when alice's server stops: the new Hub lets go of her GPU
        from types import SimpleNamespace

        from gpulab.server.hub import gpu_hooks

        _, post_stop_hook = gpu_hooks(n_gpus=1, machine="workshop-8", reservations=tmp_path)
        post_stop_hook(SimpleNamespace(user=SimpleNamespace(name="alice"), name=""))
