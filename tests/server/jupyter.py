"""A real Jupyter server (jupyter-server or JupyterLab) for the tests, with gpulab's kernelspec and the course's
server settings (``tools/jupyter_server_config.py``), on a described machine and a scratch lock directory.

The server leads a process group of its own (``tests/process_group.py``'s rule): at the end every kernel is shut down
through the server's API, the server through ``/api/shutdown``, and then the whole group is killed and the test fails
if any process of it is left.
"""

from __future__ import annotations

import json
import os
import secrets
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from contextlib import contextmanager
from pathlib import Path

from gpulab.server.kernelspec import install_kernelspec
from tests.process_group import kill_group

ROOT = Path(__file__).resolve().parents[2]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    def __init__(self, base: str, token: str, work: Path) -> None:
        self.base, self.token, self.work = base, token, work

    def api(self, path: str, method: str = "GET", body: object = None) -> object:
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(
            f"{self.base}{path}",
            data=data,
            method=method,
            headers={"Authorization": f"token {self.token}", "Content-Type": "application/json"},
        )
        with urllib.request.urlopen(req, timeout=60) as r:
            raw = r.read()
        return json.loads(raw) if raw else None


@contextmanager
def jupyter(
    work: Path,
    machine: str = "idle-8",
    *,
    lab: bool = False,
    env: dict | None = None,
    args: tuple[str, ...] = (),
    config: str = "jupyter_server_config.py",
):
    """A running server on ``work/notebooks``; gpulab's 1-GPU kernelspec installed in ``work/share/jupyter``;
    ``config``: which of ``tools/``'s server configs it loads (``workshop_server_config.py``: the one that culls)."""
    (work / "notebooks").mkdir(parents=True, exist_ok=True)
    install_kernelspec(1, prefix=str(work))
    port, token = _free_port(), secrets.token_hex(16)
    full_env = {
        **os.environ,
        "GPULAB_FAST": "1",
        "JUPYTER_PATH": str(work / "share" / "jupyter"),
        "PYTHONPATH": os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]),
        "GPULAB_SIMULATE_GPUS": machine,
        "GPULAB_RESERVATIONS_DIR": str(work / "locks"),
        "JUPYTER_CONFIG_DIR": str(work / "config"),
        "JUPYTER_DATA_DIR": str(work / "data"),
        "JUPYTER_RUNTIME_DIR": str(work / "runtime"),
        "JUPYTERLAB_SETTINGS_DIR": str(work / "settings"),
        "JUPYTERLAB_WORKSPACES_DIR": str(work / "workspaces"),
        **(env or {}),
    }
    full_env.pop("CUDA_VISIBLE_DEVICES", None)
    cmd = [
        sys.executable,
        "-m",
        "jupyterlab" if lab else "jupyter_server",
        "--no-browser",
        "--ip=127.0.0.1",
        f"--port={port}",
        f"--IdentityProvider.token={token}",
        f"--ServerApp.root_dir={work / 'notebooks'}",
        "--ServerApp.port_retries=0",
        f"--config={ROOT / 'tools' / config}",
        *args,
    ]
    if os.geteuid() == 0:
        cmd.append("--allow-root")
    log = open(work / "server.log", "w")
    proc = subprocess.Popen(cmd, env=full_env, stdout=log, stderr=subprocess.STDOUT, cwd=work, start_new_session=True)
    server = Server(f"http://127.0.0.1:{port}", token, work)
    try:
        deadline = time.monotonic() + 120
        while True:
            if proc.poll() is not None:
                raise AssertionError(
                    f"the Jupyter server exited with {proc.returncode}:\n{(work / 'server.log').read_text()[-3000:]}"
                )
            try:
                server.api("/api/status")
                break
            except OSError as exc:
                if time.monotonic() > deadline:
                    raise AssertionError(f"no answer in 120 s:\n{(work / 'server.log').read_text()[-3000:]}") from exc
                time.sleep(0.3)
        yield server
    finally:
        try:
            for k in server.api("/api/kernels") or []:
                server.api(f"/api/kernels/{k['id']}", "DELETE")
            server.api("/api/shutdown", "POST")
            proc.wait(30)
        except (OSError, subprocess.TimeoutExpired):
            pass
        kill_group(proc)
        log.close()
