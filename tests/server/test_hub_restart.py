"""A Hub that restarts after a crash reserves again the GPUs of the servers that outlived it (cheap, in make test).

The earlier Hub is a real process that reserves GPUs for alice's server as ``gpu_hooks`` does and is killed with
SIGKILL; alice's server is a real process whose environment is what JupyterHub gives a single-user server
(``JUPYTERHUB_USER``, ``JUPYTERHUB_SERVER_NAME``, the reserved ``CUDA_VISIBLE_DEVICES``). The new Hub is this process:
reading its config (``gpu_hooks``) reserves alice's GPUs again, so bob's next spawn gets others; a server that did not
survive, or a process that names GPUs the earlier Hub never held for it, gets nothing. The real Hub killed with
``kill -9`` is tests/server/test_hub.py (slow)."""

from __future__ import annotations

import asyncio
import json
import os
import pwd
import signal
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from gpulab.machine.simulated import SimulatedGpuReader
from gpulab.reservations.holders import reservation_holders
from gpulab.server import hub
from gpulab.server.hub import gpu_hooks
from gpulab.server.render import render_text
from gpulab.server.watch import read_server
from tests.process_group import kill_group

ROOT = Path(__file__).resolve().parents[2]
IDLE8 = SimulatedGpuReader("idle-8")
UUIDS = [IDLE8.info(i).uuid for i in range(8)]

EARLIER_HUB = """
import json, sys
from gpulab.placement.reservation import reserve_gpus
held = [reserve_gpus(2, "idle-8", reservations=sys.argv[1], details={"for_user": u, "server": "(default)"})
        for u in ("alice", "dave")]
print(json.dumps([r.visible_devices for r in held]), flush=True)
sys.stdin.read()
"""


def _start(args: list[str], env: dict | None = None) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, *args],
        env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})},
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


def _server(user: str, visible: str) -> subprocess.Popen:
    """A process with a single-user server's environment, as JupyterHub starts one (it waits for its stdin)."""
    p = _start(
        ["-c", "import sys; print('up', flush=True); sys.stdin.read()"],
        {"JUPYTERHUB_USER": user, "JUPYTERHUB_SERVER_NAME": "", "CUDA_VISIBLE_DEVICES": visible},
    )
    assert p.stdout.readline() == "up\n"
    return p


def _spawner(user: str) -> SimpleNamespace:
    return SimpleNamespace(user=SimpleNamespace(name=user), name="", environment={})


@pytest.fixture
def procs():
    started: list[subprocess.Popen] = []
    yield started
    for p in started:
        kill_group(p)
        for stream in (p.stdin, p.stdout):
            stream.close()
    for key in list(hub._RESERVATIONS):
        hub._release(key)


def test_a_new_hub_reserves_again_what_the_killed_one_held_for_a_server_that_survived(tmp_path, procs):
    folder = tmp_path / "reservations"
    earlier = _start(["-c", EARLIER_HUB, str(folder)])
    procs.append(earlier)
    alice_gpus, dave_gpus = json.loads(earlier.stdout.readline())
    procs.append(_server("alice", alice_gpus))  # alice's server survives the Hub; dave's did not
    procs.append(_server("mallory", ",".join(UUIDS[6:])))  # names GPUs no Hub held for her: proves nothing
    os.kill(earlier.pid, signal.SIGKILL)
    earlier.wait(30)
    assert reservation_holders(UUIDS, folder) == {}  # the locks died with the Hub: alice's GPUs look free
    assert "unheld: alice's server" in render_text(read_server("idle-8", folder))

    pre_spawn, post_stop = gpu_hooks(n_gpus=2, machine="idle-8", reservations=folder)  # the new Hub reads its config
    held = reservation_holders(UUIDS, folder)
    assert {u: h.details["for_user"] for u, h in held.items()} == dict.fromkeys(alice_gpus.split(","), "alice")
    assert all(h.mine and h.details["server"] == "(default)" for h in held.values())
    watch = render_text(read_server("idle-8", folder))
    assert "unheld: alice's server" not in watch and "unheld: mallory's server" in watch  # hers: named, not held

    bob = _spawner("bob")
    asyncio.run(pre_spawn(bob))
    assert not set(bob.environment["CUDA_VISIBLE_DEVICES"].split(",")) & set(alice_gpus.split(","))
    post_stop(_spawner("alice"))  # the Hub stops alice's server: what it held again is released
    assert not {u for u, h in reservation_holders(UUIDS, folder).items() if h.details.get("for_user") == "alice"}


def test_a_rank_that_outlived_its_kernel_is_named_unheld_until_its_gpu_is_reserved_again(tmp_path, procs):
    """A provisioned kernel killed with SIGKILL takes its reservation with it, but a rank it started (its environment:
    the kernel's CUDA_VISIBLE_DEVICES and GPULAB_MASTER_PORTS) runs on: watch names it, with what to do."""
    folder = tmp_path / "reservations"
    rank = _start(
        ["-c", "import sys; print('up', flush=True); sys.stdin.read()"],
        {"CUDA_VISIBLE_DEVICES": UUIDS[4], "GPULAB_MASTER_PORTS": "29540-29549"},
    )
    procs.append(rank)
    assert rank.stdout.readline() == "up\n"
    watch = render_text(read_server("idle-8", folder))
    me = pwd.getpwuid(os.geteuid()).pw_name
    assert f"unheld: a process of {me}'s gpulab kernel (pid {rank.pid}) runs on GPU 4" in watch
    assert f"stop it (kill {rank.pid})" in watch
    from gpulab.placement.reservation import reserve_gpus

    with reserve_gpus(1, "idle-8", reservations=folder, prefer=[UUIDS[4]]):
        assert f"(pid {rank.pid})" not in render_text(read_server("idle-8", folder))


EARLIER_HUB_SHARES = """
import json, sys
from gpulab.placement.share_reservation import reserve_share
held = [reserve_share(3, "idle-8", reservations=sys.argv[1], details={"for_user": u, "server": "(default)"})
        for u in ("alice", "dave")]
print(json.dumps([[r.visible_devices, r.share.share] for r in held]), flush=True)
sys.stdin.read()
"""


def test_a_new_hub_reserves_again_the_shares_the_killed_one_held_for_servers_that_survived(tmp_path, procs):
    folder = tmp_path / "reservations"
    earlier = _start(["-c", EARLIER_HUB_SHARES, str(folder)])
    procs.append(earlier)
    (alice_gpu, alice_k), (dave_gpu, _) = json.loads(earlier.stdout.readline())
    procs.append(_server("alice", alice_gpu))  # alice's server survives the Hub; dave's did not
    os.kill(earlier.pid, signal.SIGKILL)
    earlier.wait(30)
    assert reservation_holders(UUIDS, folder) == {}  # the locks died with the Hub: alice's share looks free

    pre_spawn, post_stop = gpu_hooks(n_gpus=1, shares=3, machine="idle-8", reservations=folder)
    held = reservation_holders(UUIDS, folder)
    assert list(held) == [alice_gpu]  # her card only: dave's server is gone, so his share stays free
    ((k, n, holder),) = held[alice_gpu].shares
    assert (k, n, holder.details["for_user"], holder.details["server"]) == (alice_k, 3, "alice", "(default)")
    assert holder.mine
    assert f"share {alice_k} of 3" in str(hub._RESERVATIONS[("alice", "")])
    watch = render_text(read_server("idle-8", folder))
    assert "unheld: alice's server" not in watch and f"GPU {UUIDS.index(alice_gpu)} share {alice_k} of 3" in watch

    bob = _spawner("bob")
    asyncio.run(pre_spawn(bob))
    shares = {
        (u, k): h.details["for_user"] for u, g in reservation_holders(UUIDS, folder).items() for k, _, h in g.shares
    }
    assert shares[(alice_gpu, alice_k)] == "alice" and sorted(shares.values()) == ["alice", "bob"]
    post_stop(_spawner("alice"))  # the Hub stops alice's server: the share it held again is released
    shares = [h.details["for_user"] for g in reservation_holders(UUIDS, folder).values() for _, _, h in g.shares]
    assert shares == ["bob"]
