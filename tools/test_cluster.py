"""make test-cluster: the course on a real SLURM cluster of two nodes on this machine (tests/cluster/).

Needs root (the daemons run as root) and Debian's SLURM and MUNGE: installed here with apt-get where they are missing
and this is root with apt (as .ci/run installs chromium); elsewhere one line says why the tier was skipped, and it
exits 0. Then the tests marked ``cluster`` run in one pytest process (no workers: they share one cluster), and the
time the tier took is printed. Every daemon is started, and stopped, by tests/cluster/local_slurm.py; a line at the
end names any SLURM or MUNGE process still running, or a JupyterHub, proxy or single-user server the batchspawner
test started, and the tier then fails.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ["slurmctld", "slurmd", "slurm-client", "munge"]
COMMANDS = ["slurmctld", "slurmd", "sbatch", "srun", "munged", "mungekey"]
LEFT = ("munged", "slurmctld", "slurmd", "slurmstepd")
LEFT_COMMANDS = ("jupyterhub", "configurable-http-proxy", "jupyterhub-singleuser", "batchspawner-singleuser")


def _install() -> str | None:
    """Install SLURM and MUNGE where missing; why the tier cannot run here (None: it can)."""
    if os.geteuid() != 0:
        return "not root: SLURM's daemons must run as root for this tier"
    if all(shutil.which(c) for c in COMMANDS):
        return None
    if shutil.which("apt-get") is None:
        return f"{', '.join(c for c in COMMANDS if not shutil.which(c))} missing and no apt-get to install them"
    start = time.monotonic()
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for args in (["apt-get", "update", "-qq"], ["apt-get", "install", "-y", "-qq", *PACKAGES]):
        done = subprocess.run(args, env=env, capture_output=True, text=True, timeout=900)
        if done.returncode != 0:
            return f"`{' '.join(args)}` failed: {done.stderr.strip()[-300:]}"
    print(f"installed {' '.join(PACKAGES)} with apt-get in {time.monotonic() - start:.0f} s")
    return None


def _still_running() -> list[str]:
    """SLURM and MUNGE processes, and JupyterHub's (the Hub, its proxy, a single-user server), alive now (zombies
    aside: they run nothing), as 'pid name'."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            name = (entry / "comm").read_text().strip()
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
            words = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        hub = next((c for w in words for c in LEFT_COMMANDS if Path(w.decode(errors="replace")).name == c), None)
        if (name in LEFT or hub) and state != "Z":
            found.append(f"{entry.name} {hub or name}")
    return found


def main() -> int:
    before = set(_still_running())
    why = _install()
    if why is not None:
        print(f"make test-cluster skipped: {why}")
        return 0
    start = time.monotonic()
    args = [sys.executable, "-m", "pytest", "-p", "no:xdist", "-m", "cluster", "tests/cluster", *sys.argv[1:]]
    code = subprocess.run(args, cwd=ROOT).returncode
    left = sorted(set(_still_running()) - before)
    if left:
        print(f"make test-cluster left processes running: {', '.join(left)}")
        code = code or 1
    print(f"make test-cluster took {time.monotonic() - start:.0f} s (pytest and its cluster)")
    return code


if __name__ == "__main__":
    sys.exit(main())
