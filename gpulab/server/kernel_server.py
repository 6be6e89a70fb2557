"""Ask the Jupyter server that started a kernel to shut it down, as JupyterLab's "Shut Down Kernel" does (a probe:
``/proc``, the server's own info file, its REST API).

Why: a kernel that dies while its server still runs is started again by the server's restarter (jupyter_client's
``KernelRestarter``), which reserves a free GPU again through the kernelspec. ``DELETE /api/kernels/<id>`` instead
removes the kernel from the server's map: nothing restarts it. ``release`` uses it for a kernel's reservation.

How the server is found, with no token asked of the user: the kernel's parent process is the server that launched it
(jupyter_client's launcher, which also sets ``JPY_PARENT_PID`` to it); every jupyter-server writes its URL and token to
``jpserver-<pid>.json`` in its runtime folder (readable by its user only, and root), which is read from the server's
own environment (``JUPYTER_RUNTIME_DIR``, else ``JUPYTER_DATA_DIR``/``XDG_DATA_HOME``/``HOME``, as jupyter_core
derives it on Linux). A JupyterHub single-user server writes no token there; its ``JUPYTERHUB_API_TOKEN`` is used.

Only the standard library is used, so a student's own Python can run it. Taught in ``notebooks/workshop_guide.ipynb``.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

__all__ = ["KernelServer", "NoServer", "find_kernel_server", "runtime_dir", "shut_down_kernel"]


class NoServer(LookupError):
    """The kernel's Jupyter server could not be found or asked; the message says why."""


@dataclass(frozen=True)
class KernelServer:
    """A running Jupyter server, as its ``jpserver-<pid>.json`` says: its ``url`` (base URL included) and a token."""

    pid: int
    url: str
    token: str = ""

    def __str__(self) -> str:
        return f"{self.url} (pid {self.pid})"


def _parent_pid(pid: int) -> int:
    stat = Path(f"/proc/{pid}/stat").read_text()
    return int(stat.rsplit(")", 1)[1].split()[1])  # after "(comm)": state, ppid


def _environment(pid: int) -> dict[str, str]:
    raw = Path(f"/proc/{pid}/environ").read_bytes()
    pairs = (item.split(b"=", 1) for item in raw.split(b"\0") if b"=" in item)
    return {k.decode(errors="replace"): v.decode(errors="replace") for k, v in pairs}


def runtime_dir(environ: dict[str, str]) -> Path:
    """The runtime folder of a Jupyter process with environment ``environ`` (jupyter_core's rule on Linux)."""
    if environ.get("JUPYTER_RUNTIME_DIR"):
        return Path(environ["JUPYTER_RUNTIME_DIR"])
    data = environ.get("JUPYTER_DATA_DIR")
    if not data:
        data_home = environ.get("XDG_DATA_HOME") or str(Path(environ.get("HOME", "/"), ".local", "share"))
        data = str(Path(data_home, "jupyter"))
    return Path(data, "runtime")


def find_kernel_server(kernel_pid: int) -> KernelServer:
    """The Jupyter server whose kernel runs as ``kernel_pid``; ``NoServer`` saying why where it cannot be found."""
    try:
        server_pid = _parent_pid(kernel_pid)
        environ = _environment(server_pid)
    except (OSError, ValueError, IndexError) as exc:
        raise NoServer(f"the kernel's parent process could not be read ({exc})") from None
    info_file = runtime_dir(environ) / f"jpserver-{server_pid}.json"
    try:
        info = json.loads(info_file.read_text())
    except FileNotFoundError:
        raise NoServer(
            f"its parent, pid {server_pid}, wrote no {info_file} (it is not a Jupyter server, or one with a runtime "
            "folder of its own)"
        ) from None
    except (OSError, ValueError) as exc:
        raise NoServer(f"{info_file} could not be read ({exc})") from None
    if info.get("sock"):
        raise NoServer(f"the server (pid {server_pid}) listens on a Unix socket, {info['sock']}, not a URL")
    token = info.get("token") or environ.get("JUPYTERHUB_API_TOKEN", "")
    return KernelServer(server_pid, str(info["url"]), token)


def shut_down_kernel(server: KernelServer, kernel_id: str, timeout_s: float = 60.0) -> None:
    """``DELETE /api/kernels/<kernel_id>`` on ``server``: it shuts the kernel down and keeps it down."""
    request = urllib.request.Request(
        f"{server.url.rstrip('/')}/api/kernels/{kernel_id}",
        method="DELETE",
        headers={"Authorization": f"token {server.token}"} if server.token else {},
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout_s):
            pass
    except urllib.error.HTTPError as exc:
        raise NoServer(f"the server {server} answered {exc.code} {exc.reason}") from None
    except (OSError, ValueError) as exc:
        raise NoServer(f"the server {server} could not be reached ({exc})") from None
