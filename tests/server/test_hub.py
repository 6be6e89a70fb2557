"""A real JupyterHub (PyPI) behind a real configurable-http-proxy (npm) reserves GPUs for its users' servers.

The Hub runs tools/jupyterhub_config.py in its "server" model (every single-user server reserves its GPUs through
gpulab.server.hub's hooks), with JupyterHub's dummy authenticator and SimpleLocalProcessSpawner, on a described
8-GPU server with all GPUs free (GPULAB_SIMULATE_GPUS=idle-8) and a reservation directory of its own. Three users, three
GPUs per server, driven through the Hub's REST API with an admin token from the test's config: the first two servers
get disjoint GPUs (read from the reservations and from each server process's environment), the third would need a 9th
GPU and gets the clear message, stopping a server frees its GPUs, and a server killed with SIGKILL frees them as soon as
the Hub's poll notices. A Hub restart stops the servers with the old Hub and reserves afresh in the new one; a Hub
killed with SIGKILL leaves a server running, whose GPUs the new Hub reserves again. The Hub,
the proxy and every server are found afterwards by a marker in their environment: none may be left.
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from gpulab.core.shares import share_cap_bytes
from gpulab.machine.simulated import SimulatedGpuReader
from gpulab.reservations.holders import reservation_holders
from gpulab.server.kernelspec import install_kernelspec
from tests import process_group
from tests.hub_processes import marked
from tests.process_group import kill_group

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
CHP = ROOT / ".venv" / "node" / "node_modules" / ".bin" / "configurable-http-proxy"
IDLE8 = SimulatedGpuReader("idle-8")
UUIDS = [IDLE8.info(i).uuid for i in range(IDLE8.count())]
USERS = ("alice", "bob", "carol")
POLL_S = 1  # the Hub's poll interval here: how soon it notices a killed server


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _config(tmp: Path, token: str, marker: str, ports: dict[str, int], model: str) -> str:
    root = os.geteuid() == 0
    hooks = (
        (
            "from gpulab.server.hub import gpu_hooks\n"
            "c.Spawner.pre_spawn_hook, c.Spawner.post_stop_hook = "
            + ("gpu_hooks(n_gpus=1, shares=3)" if model == "server-shares" else "gpu_hooks(n_gpus=3)")
        )
        if model.startswith("server")
        else ""
    )
    return f"""
c = get_config()
load_subconfig({str(ROOT / "tools" / "jupyterhub_config.py")!r})  # GPULAB_HUB_MODEL: the hooks, poll, proxy
{hooks}
c.Spawner.poll_interval = {POLL_S}
c.Spawner.environment = dict(c.Spawner.environment, GPULAB_HUB_TEST={marker!r},
                             JUPYTER_PATH={str(tmp / "share" / "jupyter")!r})  # where the test installs kernelspecs
# Root (CI) runs the single-user servers as itself, which jupyter-server refuses without --allow-root.
c.Spawner.args = list(c.Spawner.args) + {["--allow-root"] if root else []!r}
c.JupyterHub.authenticator_class = "dummy"
c.Authenticator.allowed_users = {set(USERS)!r}
c.JupyterHub.spawner_class = "simple"  # servers run as the Hub's own user, homes below the test's folder
c.SimpleLocalProcessSpawner.home_dir_template = {str(tmp / "home" / "{username}")!r}
c.JupyterHub.ip = "127.0.0.1"
c.JupyterHub.port = {ports["proxy"]}
c.JupyterHub.hub_ip = "127.0.0.1"
c.JupyterHub.hub_port = {ports["hub"]}
c.ConfigurableHTTPProxy.api_url = "http://127.0.0.1:{ports["proxy_api"]}"
c.ConfigurableHTTPProxy.pid_file = {str(tmp / "proxy.pid")!r}
c.Spawner.ip = "127.0.0.1"
c.JupyterHub.db_url = "sqlite:///{tmp / "hub.sqlite"}"
c.JupyterHub.cookie_secret_file = {str(tmp / "cookie_secret")!r}
c.JupyterHub.services = [{{"name": "gpulab-test", "api_token": {token!r}}}]
c.JupyterHub.load_roles = [{{"name": "gpulab-test", "services": ["gpulab-test"],
                            "scopes": ["admin:users", "admin:servers", "admin:server_state", "access:servers"]}}]
"""


class Hub:
    def __init__(self, url: str, token: str) -> None:
        self.url, self.token = url, token

    def call(self, method: str, path: str) -> tuple[int, dict | None]:
        req = urllib.request.Request(
            f"{self.url}/hub/api{path}", method=method, headers={"Authorization": f"token {self.token}"}
        )
        try:
            with urllib.request.urlopen(req, timeout=60) as r:
                return r.status, _json(r.read())
        except urllib.error.HTTPError as e:
            return e.code, _json(e.read())

    def server(self, user: str) -> dict | None:
        status, info = self.call("GET", f"/users/{user}")
        assert status == 200, info
        return info["servers"].get("")

    def wait(self, what: str, check, timeout_s: float = 120):
        """Poll ``check`` until it returns something true (a guard against a hang, not a time to assert)."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            value = check()
            if value:
                return value
            time.sleep(0.25)
        raise AssertionError(f"gave up after {timeout_s} s waiting for {what}")

    def start(self, user: str) -> tuple[int, dict | None]:
        status, body = self.call("POST", f"/users/{user}/server")
        if status in (201, 202):
            self.wait(f"{user}'s server to be ready", lambda: (self.server(user) or {}).get("ready"))
        return status, body

    def progress_message(self, user: str) -> str:
        """The last event of the spawn page's progress stream (what the student reads there)."""
        req = urllib.request.Request(
            f"{self.url}/hub/api/users/{user}/server/progress", headers={"Authorization": f"token {self.token}"}
        )
        events = []
        with urllib.request.urlopen(req, timeout=30) as r:
            for line in r:
                if line.startswith(b"data:"):
                    events.append(json.loads(line[5:]))
                    if events[-1].get("failed") or events[-1].get("ready"):
                        break
        return events[-1]["message"]


def _json(body: bytes) -> dict | None:
    """The Hub answers JSON; the proxy, before the Hub has added its route, a plain "Not Found"."""
    try:
        return json.loads(body) if body else None
    except ValueError:
        return {"message": body.decode(errors="replace")}


def _environ(pid: int) -> dict[str, str]:
    raw = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    return dict(item.decode().split("=", 1) for item in raw if b"=" in item)


def _reservations(directory: Path) -> dict[str, str]:
    """GPU UUID -> the user whose server holds it, from the reservation files."""
    return {u: h.details.get("for_user", "?") for u, h in reservation_holders(UUIDS, directory).items()}


def _visible(hub: Hub, user: str) -> list[str]:
    pid = hub.server(user)["state"]["pid"]
    return _environ(pid)["CUDA_VISIBLE_DEVICES"].split(",")


class HubSession:
    """A real Hub (and its proxy) run from tools/jupyterhub_config.py in ``model`` on the described idle-8 server:
    ``launch()`` starts one and waits until it answers through the proxy, ``stop(proc)`` stops it as a service manager
    does (SIGTERM) and checks that every process of the run ended with it and no reservation is left."""

    def __init__(self, tmp: Path, model: str) -> None:
        if not CHP.exists():
            pytest.fail(
                f"JupyterHub's proxy is not installed at {CHP}: install Node's npm (apt-get install npm) and "
                "run `make install` again, which installs configurable-http-proxy there."
            )
        self.tmp, self.marker = tmp, secrets.token_hex(8)
        token = secrets.token_hex(16)
        ports = {"proxy": _free_port(), "hub": _free_port(), "proxy_api": _free_port()}
        self.config = tmp / "jupyterhub_config.py"
        self.config.write_text(_config(tmp, token, self.marker, ports, model))
        self.reservations_dir = tmp / "reservations"
        self.env = dict(
            os.environ,
            GPULAB_HUB_MODEL="server" if model.startswith("server") else model,
            GPULAB_SIMULATE_GPUS="idle-8",
            GPULAB_RESERVATIONS_DIR=str(self.reservations_dir),
            GPULAB_HUB_TEST=self.marker,
        )
        self.env.pop("CUDA_VISIBLE_DEVICES", None)
        self.log = open(tmp / "hub.log", "ab")
        self.hub = Hub(f"http://127.0.0.1:{ports['proxy']}", token)
        self.procs: list[subprocess.Popen] = []

    def log_tail(self, n: int = 40) -> str:
        return "\n".join((self.tmp / "hub.log").read_text(errors="replace").splitlines()[-n:])

    def launch(self) -> subprocess.Popen:
        proc = subprocess.Popen(
            [sys.executable, "-m", "jupyterhub", "-f", str(self.config)],
            cwd=self.tmp,
            env=self.env,
            stdout=self.log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self.procs.append(proc)

        def up():
            if proc.poll() is not None:
                raise AssertionError(f"the Hub exited ({proc.returncode}):\n{self.log_tail()}")
            try:
                return self.hub.call("GET", "/")[0] == 200
            except OSError:
                return False

        self.hub.wait("the Hub behind its proxy", up)
        return proc

    def stop(self, proc: subprocess.Popen) -> None:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)
        self.hub.wait("every Hub, proxy and server process to end", lambda: not marked(self.marker), timeout_s=30)
        assert _reservations(self.reservations_dir) == {}

    def close(self) -> None:
        for proc in self.procs:
            kill_group(proc)
        for pid in marked(self.marker):  # the proxy and servers run in sessions of their own: end them by pid
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + 10  # a killed process's /proc entry lasts until its parent (init) reaps it
        while marked(self.marker) and time.monotonic() < deadline:
            time.sleep(0.1)
        self.log.close()


@pytest.fixture
def session(request, tmp_path):
    run = HubSession(tmp_path, request.param)
    try:
        yield run
    finally:
        run.close()
    assert not marked(run.marker), "a Hub, proxy or server process of this test was left running"


@pytest.mark.parametrize("session", ["server"], indirect=True)
def test_a_real_hub_reservations_disjoint_gpus_to_servers_and_frees_them_on_stop_kill_and_restart(session):
    hub, reservations_dir, launch, stop = session.hub, session.reservations_dir, session.launch, session.stop
    first = launch()

    # Two servers started at the same moment, three GPUs each: disjoint, in the reservations and in each server's own
    # environment.
    with ThreadPoolExecutor(2) as pool:
        for status, body in pool.map(hub.start, ("alice", "bob")):
            assert status in (201, 202), (status, body, session.log_tail())
    reservations = _reservations(reservations_dir)
    held = {u: sorted(k for k, v in reservations.items() if v == u) for u in ("alice", "bob")}
    assert len(held["alice"]) == 3 and len(held["bob"]) == 3 and not set(held["alice"]) & set(held["bob"])
    assert sorted(_visible(hub, "alice")) == held["alice"] and sorted(_visible(hub, "bob")) == held["bob"]
    alice_pid = hub.server("alice")["state"]["pid"]
    assert _environ(alice_pid)["GPULAB_RESERVATIONS_DIR"] == str(reservations_dir)
    cmdline = Path(f"/proc/{alice_pid}/cmdline").read_bytes().split(b"\0")
    assert f"--config={ROOT / 'tools' / 'workshop_server_config.py'}".encode() in cmdline  # the course's settings

    # Carol's server would need GPUs 7, 8 and 9 of an 8-GPU machine: refused, saying who holds what and what to do.
    status, body = hub.call("POST", "/users/carol/server")
    assert status == 503, (status, body)
    for message in (body["message"], hub.progress_message("carol")):
        assert "No GPU for carol's server: it needs 3 free GPU(s), and 2 of this machine's 8 are free" in message
        assert "reserved by alice's server" in message and "reserved by bob's server" in message
        assert "What to do: wait until someone stops their server" in message
    assert not any(v == "carol" for v in _reservations(reservations_dir).values())

    # Bob stops his server: his GPUs are free again, and carol's next start gets three of them.
    status, _ = hub.call("DELETE", "/users/bob/server")
    assert status in (202, 204)
    hub.wait("bob's server to stop", lambda: hub.server("bob") is None)
    assert "bob" not in _reservations(reservations_dir).values()
    status, body = hub.start("carol")
    assert status in (201, 202), (status, body, session.log_tail())
    carol = sorted(k for k, v in _reservations(reservations_dir).items() if v == "carol")
    assert len(carol) == 3 and not set(carol) & set(held["alice"]) and sorted(_visible(hub, "carol")) == carol

    # kill -9 of alice's server: the Hub's poll notices, runs post_stop_hook, and her GPUs are free again.
    os.kill(alice_pid, signal.SIGKILL)
    hub.wait(
        "alice's reservations to end after kill -9",
        lambda: "alice" not in _reservations(reservations_dir).values(),
        timeout_s=30 + 10 * POLL_S,
    )
    hub.wait("the Hub to see alice's server gone", lambda: hub.server("alice") is None)
    assert sorted(k for k, v in _reservations(reservations_dir).items() if v == "carol") == carol

    # A Hub restart: the old Hub stops carol's server with it (cleanup_servers); the new one reserves afresh.
    stop(first)
    second = launch()
    assert hub.server("carol") is None
    status, body = hub.start("alice")
    assert status in (201, 202), (status, body, session.log_tail())
    alice = sorted(k for k, v in _reservations(reservations_dir).items() if v == "alice")
    assert len(alice) == 3 and sorted(_visible(hub, "alice")) == alice
    stop(second)


@pytest.mark.parametrize("session", ["kernel"], indirect=True)
def test_in_the_kernel_model_each_kernel_of_each_server_reservations_its_own_gpu(session):
    """The documented default: the Hub reserves nothing; a server gets the reservation directory and machine the Hub has
    (so the gpulab kernelspec's kernels reservation from the same files) and the course's server settings."""
    hub = session.hub
    proc = session.launch()
    status, body = hub.start("alice")
    assert status in (201, 202), (status, body, session.log_tail())
    assert _reservations(session.reservations_dir) == {}
    pid = hub.server("alice")["state"]["pid"]
    env = _environ(pid)
    assert "CUDA_VISIBLE_DEVICES" not in env
    assert env["GPULAB_RESERVATIONS_DIR"] == str(session.reservations_dir) and env["GPULAB_SIMULATE_GPUS"] == "idle-8"
    cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    assert f"--config={ROOT / 'tools' / 'workshop_server_config.py'}".encode() in cmdline

    # Kernels from the gpulab kernelspec, started through the Hub's proxy in two users' servers, reservation disjoint
    # GPUs
    # from the Hub's reservation folder; shutting a kernel down frees its GPU.
    name = os.path.basename(install_kernelspec(1, prefix=str(session.tmp))[0])
    status, body = hub.start("bob")
    assert status in (201, 202), (status, body, session.log_tail())
    kernels = {}
    for user in ("alice", "bob"):
        status, body = _user_api(hub, user, "POST", "/api/kernels", {"name": name})
        assert status == 201, (status, body)
        kernels[user] = body["id"]
    held = {
        h.details["kernel"]: (uuid, h.pid) for uuid, h in reservation_holders(UUIDS, session.reservations_dir).items()
    }
    assert set(held) == set(kernels.values()) and held[kernels["alice"]][0] != held[kernels["bob"]][0]
    seen = {user: _environ(held[k][1])["CUDA_VISIBLE_DEVICES"] for user, k in kernels.items()}
    assert seen["alice"] and seen["bob"] and seen["alice"] != seen["bob"]
    status, _ = _user_api(hub, "alice", "DELETE", f"/api/kernels/{kernels['alice']}")
    assert status == 204
    hub.wait(
        "alice's kernel reservation to end",
        lambda: (
            {h.details.get("kernel") for h in reservation_holders(UUIDS, session.reservations_dir).values()}
            == {kernels["bob"]}
        ),
    )
    session.stop(proc)


def _user_api(hub: Hub, user: str, method: str, path: str, body: dict | None = None) -> tuple[int, dict | None]:
    """A call to ``user``'s single-user server through the Hub's proxy, with the test service's token."""
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(
        f"{hub.url}/user/{user}{path}",
        data=data,
        method=method,
        headers={"Authorization": f"token {hub.token}", "Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status, _json(r.read())
    except urllib.error.HTTPError as e:
        return e.code, _json(e.read())


@pytest.mark.parametrize("session", ["server"], indirect=True)
@pytest.mark.parametrize("ending", ["kill -9", "cleanup_servers=False"])
def test_a_hub_ended_without_its_servers_and_started_again_keeps_their_gpus_reserved(session, ending):
    """A Hub that crashes (``kill -9``: no clean-up) or that stops without stopping the servers
    (``cleanup_servers = False``) leaves alice's server running on GPUs that no lock holds. The new Hub reserves them
    again as it reads its config, so bob's spawn gets other GPUs, carol's finds too few free, and stopping alice's
    server frees them."""
    hub, reservations_dir = session.hub, session.reservations_dir
    config = session.config.read_text()
    if ending == "cleanup_servers=False":
        session.config.write_text(config + "\nc.JupyterHub.cleanup_servers = False\n")
    first = session.launch()
    status, body = hub.start("alice")
    assert status in (201, 202), (status, body, session.log_tail())
    alice = sorted(k for k, v in _reservations(reservations_dir).items() if v == "alice")
    alice_pid = hub.server("alice")["state"]["pid"]

    # the Hub alone: its proxy and alice's server run in sessions of their own
    os.kill(first.pid, signal.SIGKILL if ending == "kill -9" else signal.SIGTERM)
    first.wait(timeout=60)
    session.config.write_text(config)  # the new Hub stops its servers when it stops (the test's end)
    assert _reservations(reservations_dir) == {}  # its locks died with it; alice's server did not
    assert (
        Path(f"/proc/{alice_pid}").exists() and sorted(_environ(alice_pid)["CUDA_VISIBLE_DEVICES"].split(",")) == alice
    )

    second = session.launch()
    assert hub.server("alice") is not None and hub.server("alice")["state"]["pid"] == alice_pid  # it survived
    assert sorted(k for k, v in _reservations(reservations_dir).items() if v == "alice") == alice  # held again
    status, body = hub.start("bob")
    assert status in (201, 202), (status, body, session.log_tail())
    bob = sorted(k for k, v in _reservations(reservations_dir).items() if v == "bob")
    assert len(bob) == 3 and not set(bob) & set(alice) and sorted(_visible(hub, "bob")) == bob
    status, body = hub.call("POST", "/users/carol/server")
    assert status == 503 and "2 of this machine's 8 are free" in body["message"], (status, body)

    status, _ = hub.call("DELETE", "/users/alice/server")
    assert status in (202, 204)
    hub.wait("alice's server to stop", lambda: hub.server("alice") is None)
    assert "alice" not in _reservations(reservations_dir).values()
    session.stop(second)


_IN_THE_SERVER = """
import gpulab
from gpulab.checkup.report import environment_report

held = gpulab.reserve_gpus(3)  # the server's own GPUs: handed over, no second reservation
print(",".join(sorted(g.uuid for g in held.gpus)))
print(held.held_for, "|", len(held.lock_fds))
picker = gpulab.GpuPicker(this_kernel=True)
print(sorted(i for i in range(8) if picker.state(i) == "yours"), picker.pick_free(3))
print(next(f.meaning for f in environment_report().findings if f.what == "a free GPU to work on"))
"""


@pytest.mark.parametrize("session", ["server"], indirect=True)
def test_in_the_server_model_a_servers_processes_find_its_gpus_their_own(session):
    """A process started with alice's server's environment (as her kernels and terminals are) reserves, picks and
    asks the environment report: her three GPUs are hers ("yours"), handed over without a second reservation; bob's
    are not."""
    hub = session.hub
    proc = session.launch()
    for user in ("alice", "bob"):
        status, body = hub.start(user)
        assert status in (201, 202), (status, body, session.log_tail())
    held = {
        u: sorted(k for k, v in _reservations(session.reservations_dir).items() if v == u) for u in ("alice", "bob")
    }
    env = _environ(hub.server("alice")["state"]["pid"])
    assert "GPULAB_SERVER_TOKEN" in env and env["GPULAB_SERVER_TOKEN"] != _environ(
        hub.server("bob")["state"]["pid"]
    ).get("GPULAB_SERVER_TOKEN")
    env["PYTHONPATH"] = str(ROOT)
    done = process_group.run(
        [sys.executable, "-c", _IN_THE_SERVER], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    uuids, whose, yours, finding = done.stdout.splitlines()
    assert uuids.split(",") == held["alice"]
    assert whose == "reserved for alice's server, which this kernel runs in | 0"
    positions = sorted(UUIDS.index(u) for u in held["alice"])
    assert yours == f"{positions} {tuple(positions)}"  # the picker: hers, and "Pick 3" ticks them
    assert f"GPU {', '.join(map(str, positions))} yours (reserved for alice's server" in finding
    session.stop(proc)


def _shares(directory: Path) -> dict[tuple[str, int], str]:
    """(GPU UUID, share number) -> the user whose server holds that share, from the reservation files."""
    return {
        (u, k): share_holder.details.get("for_user", "?")
        for u, h in reservation_holders(UUIDS, directory).items()
        for k, _, share_holder in h.shares
    }


_IN_A_SHARED_SERVER = """
import os, gpulab
held = gpulab.reserve_gpus(1)  # the server's share's card: handed over, no second reservation
print(held.visible_devices, "|", held.held_for, "|", len(held.lock_fds), "|", os.environ["GPULAB_MEMORY_CAP"])
"""


@pytest.mark.parametrize("session", ["server-shares"], indirect=True)
def test_in_the_server_model_with_shares_each_server_holds_a_share_with_its_cap_freed_on_kill_and_stop(session):
    """gpu_hooks(n_gpus=1, shares=3) in a real Hub: three servers started at once hold one share each, spread over
    three cards, each with its card and cap in its environment; a process of alice's server finds her card its own; a
    kill -9 of her server frees her share within the Hub's poll, and a Hub stop frees the rest."""
    hub = session.hub
    proc = session.launch()
    with ThreadPoolExecutor(3) as pool:
        for status, body in pool.map(hub.start, ("alice", "bob", "carol")):
            assert status in (201, 202), (status, body, session.log_tail())
    shares = _shares(session.reservations_dir)
    assert sorted(shares.values()) == ["alice", "bob", "carol"] and len({u for u, _ in shares}) == 3
    caps = {share_cap_bytes(SimulatedGpuReader("idle-8").info(i).memory_total_bytes, 3) for i in range(8)}
    for user in ("alice", "bob", "carol"):
        env = _environ(hub.server(user)["state"]["pid"])
        (card,) = [u for (u, _), who in shares.items() if who == user]
        assert env["CUDA_VISIBLE_DEVICES"] == card and int(env["GPULAB_MEMORY_CAP"]) in caps
    env = _environ(hub.server("alice")["state"]["pid"])
    env["PYTHONPATH"] = str(ROOT)
    done = process_group.run(
        [sys.executable, "-c", _IN_A_SHARED_SERVER], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    visible, whose, fds, cap = (part.strip() for part in done.stdout.split("|"))
    assert visible == env["CUDA_VISIBLE_DEVICES"] and whose.startswith("reserved for alice's server") and fds == "0"
    assert cap == env["GPULAB_MEMORY_CAP"]
    os.kill(hub.server("alice")["state"]["pid"], signal.SIGKILL)
    hub.wait(
        "alice's share to end after kill -9",
        lambda: "alice" not in _shares(session.reservations_dir).values(),
        timeout_s=30 + 10 * POLL_S,
    )
    assert sorted(_shares(session.reservations_dir).values()) == ["bob", "carol"]
    session.stop(proc)  # asserts that no reservation is left
