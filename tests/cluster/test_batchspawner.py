"""A real JupyterHub whose single-user servers are SLURM jobs (batchspawner's SlurmSpawner), on the local cluster.

The Hub loads ``deploy/batchspawner_config.py`` (the file docs/clusters.md gives a site) and adds only what this
machine needs: ports and folders of its own, JupyterHub's dummy authenticator, an admin token for the test, and what
a site running its Hub as root would set (``exec_prefix=""``: no ``sudo`` to each learner; ``--allow-root`` for the
server; one home folder). Through the Hub's REST API two learners' servers are spawned: one with the config's GPU
(``req_ngpus``), one whose spawn asks for none (``user_options``, as an options form would). Each must run as a SLURM
job (``squeue``), a kernel started in it through the Hub's proxy must run code, and that code reads what the learner's
notebook sees: the job's id and ``CUDA_VISIBLE_DEVICES`` (SLURM's index of the GPU for one, empty for the other).
Stopping a server must cancel its job. The Hub, its proxy and every job are ended also when a step fails (by PID,
process group and ``scancel``); afterwards no process of the run may be left. Run by ``make test-cluster``.
"""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import signal
import subprocess
import sys
import urllib.error
import urllib.request
import uuid
from pathlib import Path

import pytest

from tests.cluster.local_slurm import LocalSlurm, free_ports, slurm_missing
from tests.hub_processes import marked, until
from tests.process_group import kill_group

pytest.importorskip("batchspawner", reason="batchspawner is in the hub extra: pip install -e '.[hub]'")

ROOT = Path(__file__).resolve().parents[2]
CONFIG = ROOT / "deploy" / "batchspawner_config.py"
CHP = ROOT / ".venv" / "node" / "node_modules" / ".bin" / "configurable-http-proxy"
BIN = Path(sys.executable).parent
# Two learners, named after accounts every Debian machine has: batchspawner reads each learner's home and shell from
# the password database. The first gets the config's GPU; the second's spawn asks for none (its user_options).
GPU_USER, CPU_USER = "root", "nobody"
USERS = {GPU_USER: None, CPU_USER: {"ngpus": ""}}

JUPYTER_DIRS = ("JUPYTER_RUNTIME_DIR", "JUPYTER_DATA_DIR", "JUPYTER_CONFIG_DIR", "IPYTHONDIR")

pytestmark = [pytest.mark.cluster, pytest.mark.skipif(slurm_missing() is not None, reason=slurm_missing() or "")]


def _config(tmp: Path, token: str, marker: str, ports: list[int], slurm_conf: Path) -> str:
    proxy, hub, proxy_api = ports
    environment = {"SLURM_CONF": str(slurm_conf), "GPULAB_HUB_TEST": marker}
    environment.update({k: str(tmp / "jupyter" / k.lower()) for k in JUPYTER_DIRS})
    return f"""
c = get_config()
load_subconfig({str(CONFIG)!r})  # the site's file, as docs/clusters.md gives it
# What a site whose Hub runs as root sets: it submits the jobs itself (a site's default is sudo -E -u {{username}}
# to each learner's account), and jupyter-server refuses root without --allow-root.
c.SlurmSpawner.exec_prefix = ""
c.Spawner.args = ["--allow-root"]
# Each job's folder and log stay in the test's folder, not the accounts' homes (batchspawner reads the home from the
# password database, and its req_homedir is no setting): set on the spawner before it submits, and Jupyter's own
# folders with it.
c.Spawner.pre_spawn_hook = lambda spawner: setattr(spawner, "req_homedir", {str(tmp / "home")!r})
# The second node's name does not resolve here; both nodes are this machine.
c.SlurmSpawner.state_exechost_exp = "127.0.0.1"
c.Spawner.environment = dict(c.Spawner.environment, **{environment!r})
c.JupyterHub.authenticator_class = "dummy"
c.Authenticator.allowed_users = {set(USERS)!r}
c.JupyterHub.ip = "127.0.0.1"
c.JupyterHub.port = {proxy}
c.JupyterHub.hub_ip = "127.0.0.1"
c.JupyterHub.hub_port = {hub}
c.ConfigurableHTTPProxy.api_url = "http://127.0.0.1:{proxy_api}"
c.ConfigurableHTTPProxy.command = [{str(CHP)!r}]
c.ConfigurableHTTPProxy.pid_file = {str(tmp / "proxy.pid")!r}
c.JupyterHub.db_url = "sqlite:///{tmp / "hub.sqlite"}"
c.JupyterHub.cookie_secret_file = {str(tmp / "cookie_secret")!r}
c.JupyterHub.services = [{{"name": "gpulab-test", "api_token": {token!r}}}]
c.JupyterHub.load_roles = [{{"name": "gpulab-test", "services": ["gpulab-test"],
                            "scopes": ["admin:users", "admin:servers", "admin:server_state", "access:servers"]}}]
"""


ENDED = (
    "BOOT_FAIL",
    "CANCELLED",
    "COMPLETED",
    "DEADLINE",
    "FAILED",
    "NODE_FAIL",
    "OUT_OF_MEMORY",
    "PREEMPTED",
    "TIMEOUT",
)


class SlurmHub:
    """The Hub (and its proxy) on the local cluster; ``close()`` ends them and every job, whatever happened."""

    def __init__(self, cluster: LocalSlurm, tmp: Path) -> None:
        self.cluster, self.tmp = cluster, tmp
        self.marker, self.token = secrets.token_hex(8), secrets.token_hex(16)
        ports = free_ports(3)
        self.url = f"http://127.0.0.1:{ports[0]}"
        (tmp / "home").mkdir()
        config = tmp / "jupyterhub_config.py"
        config.write_text(_config(tmp, self.token, self.marker, ports, cluster.conf))
        env = {**cluster.env, "GPULAB_HUB_TEST": self.marker, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"}
        env.pop("CUDA_VISIBLE_DEVICES", None)
        with open(tmp / "hub.log", "ab") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "jupyterhub", "-f", str(config)],
                cwd=tmp, env=env, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                start_new_session=True,
            )  # fmt: skip

    def log_tail(self, n: int = 60) -> str:
        return "\n".join((self.tmp / "hub.log").read_text(errors="replace").splitlines()[-n:])

    def call(self, method: str, path: str, body: dict | None = None, base: str = "/hub/api") -> tuple[int, dict]:
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(
            f"{self.url}{base}{path}", data=data, method=method, headers={"Authorization": f"token {self.token}"}
        )
        try:
            with urllib.request.urlopen(req, timeout=60) as r:
                raw = r.read()
                return r.status, json.loads(raw) if raw else {}
        except urllib.error.HTTPError as e:
            raw = e.read()
            try:
                return e.code, json.loads(raw) if raw else {}
            except ValueError:
                return e.code, {"message": raw.decode(errors="replace")}

    def up(self) -> bool:
        if self.proc.poll() is not None:
            raise AssertionError(f"the Hub exited ({self.proc.returncode}):\n{self.log_tail()}")
        try:
            return self.call("GET", "/")[0] == 200
        except OSError:
            return False

    def ready(self, user: str) -> bool:
        """Whether the user's server is ready; fails at once, with the jobs' logs, where a job has ended meanwhile
        (the Hub would wait for the port of a server that never started until its start_timeout)."""
        if (self.server(user) or {}).get("ready"):
            return True
        done = subprocess.run(
            ["squeue", "-h", "-t", "all", "-o", "%i %T"], env=self.cluster.env, capture_output=True, text=True,
            timeout=30,
        )  # fmt: skip
        ended = [line for line in done.stdout.splitlines() if line.split()[-1] in ENDED]
        if ended:
            logs = "\n".join(
                f"--- {p.name}\n{p.read_text(errors='replace')}" for p in (self.tmp / "home").glob("*.log")
            )
            raise AssertionError(f"a server's job ended before it was ready: {ended}\n{logs}")
        return False

    def server(self, user: str) -> dict | None:
        status, info = self.call("GET", f"/users/{user}")
        assert status == 200, info
        return info["servers"].get("")

    def close(self) -> None:
        """Stop the Hub as a service manager does (its cleanup stops the servers), then kill whatever is left: the
        Hub's group, every marked process (the proxy runs in a session of its own), and every job."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                pass
        kill_group(self.proc)
        for pid in marked(self.marker):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        jobs = self.cluster.jobs()
        if jobs:
            subprocess.run(["scancel", *jobs], env=self.cluster.env, capture_output=True, timeout=30)


async def _run_in_kernel(ws_url: str, token: str, code: str) -> str:
    """Execute ``code`` in a kernel over its websocket (Jupyter's messaging protocol); what it printed."""
    from tornado.httpclient import HTTPRequest
    from tornado.websocket import websocket_connect

    conn = await websocket_connect(HTTPRequest(ws_url, headers={"Authorization": f"token {token}"}))
    try:
        msg_id = uuid.uuid4().hex
        header = {"msg_id": msg_id, "msg_type": "execute_request", "username": "test", "session": uuid.uuid4().hex,
                  "version": "5.3", "date": ""}  # fmt: skip
        content = {"code": code, "silent": False, "store_history": False, "user_expressions": {}, "allow_stdin": False}
        msg = {"header": header, "parent_header": {}, "metadata": {}, "content": content, "channel": "shell"}
        await conn.write_message(json.dumps(msg))
        out = []
        while True:
            raw = await asyncio.wait_for(conn.read_message(), timeout=120)
            assert raw is not None, f"the kernel's websocket closed; printed so far: {out}"
            reply = json.loads(raw)
            if reply.get("parent_header", {}).get("msg_id") != msg_id:
                continue
            kind = reply["header"]["msg_type"]
            if kind == "stream":
                out.append(reply["content"]["text"])
            elif kind == "error":
                raise AssertionError(f"the kernel raised: {reply['content']['evalue']}")
            elif kind == "status" and reply["content"]["execution_state"] == "idle":
                return "".join(out)
    finally:
        conn.close()


@pytest.fixture(scope="module")
def cluster():
    with LocalSlurm() as c:
        yield c


@pytest.mark.timeout(600)
def test_a_hub_spawns_servers_as_slurm_jobs_runs_kernels_in_them_and_cancels_them(cluster, tmp_path):
    assert CHP.exists(), f"JupyterHub's proxy is not installed at {CHP}: install npm and run make install"
    hub = SlurmHub(cluster, tmp_path)
    try:
        until("the Hub behind its proxy", hub.up, 120, 0.25)
        for user, options in USERS.items():
            status, body = hub.call("POST", f"/users/{user}/server", options)
            assert status in (201, 202), body
        for user in USERS:
            until(f"{user}'s server to be ready", lambda user=user: hub.ready(user), 240, 0.25)
        jobs = {user: hub.server(user)["state"]["job_id"] for user in USERS}
        running = subprocess.run(
            ["squeue", "-h", "-o", "%i %T %j", "-j", ",".join(jobs.values())],
            env=cluster.env, capture_output=True, text=True, timeout=30,
        ).stdout.split("\n")  # fmt: skip
        assert sorted(filter(None, running)) == sorted(f"{j} RUNNING gpulab-jupyterhub" for j in jobs.values())

        seen = {}
        for user in USERS:
            status, kernel = hub.call("POST", "/kernels", {"name": "python3"}, base=f"/user/{user}/api")
            assert status == 201, f"{status} {kernel}\n{hub.log_tail()}"
            ws = f"{hub.url.replace('http', 'ws')}/user/{user}/api/kernels/{kernel['id']}/channels"
            code = "import os; print(os.environ['SLURM_JOB_ID'], repr(os.environ.get('CUDA_VISIBLE_DEVICES')))"
            seen[user] = asyncio.run(_run_in_kernel(ws, hub.token, code)).split()
        # the kernel runs inside its server's job; the GPU server sees the node's index of the GPU SLURM gave it
        # (the job runs on either node: each has GPUs 0 and 1), the CPU server an empty variable: no GPU at all
        assert seen[GPU_USER][0] == jobs[GPU_USER], seen
        assert seen[GPU_USER][1] in ("'0'", "'1'"), seen
        assert seen[CPU_USER] == [jobs[CPU_USER], "''"], seen

        for user in USERS:
            status, body = hub.call("DELETE", f"/users/{user}/server")
            assert status in (202, 204), body
        for user in USERS:
            until(f"{user}'s server to stop", lambda user=user: hub.server(user) is None, 60, 0.25)
        assert cluster.settled() == [], "the stopped servers' jobs are still in the queue"
    except BaseException:
        print(hub.log_tail(), file=sys.stderr)
        raise
    finally:
        hub.close()
    until("every Hub, proxy, server and kernel process of the run to end", lambda: not marked(hub.marker), 30, 0.25)
