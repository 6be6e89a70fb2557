"""A real SLURM cluster of two nodes on this one machine, for the tests marked ``cluster`` (``make test-cluster``).

Debian's SLURM 22.05 and MUNGE, as root: ``munged``, ``slurmctld`` and two ``slurmd`` (nodes ``<hostname>`` and
``<hostname>-n2``, both at 127.0.0.1 on ports of their own), each started in the foreground as a child of this
process (through ``reaper.py``, which reaps the job steps' processes it leaves), in its own session, so that it is
stopped by the PID it was started with. Every configuration file, key, socket, log, spool and state folder is under
one temporary folder, and the ports are free ones picked now, so two clusters on one machine never meet and nothing
of the machine's own SLURM or MUNGE set-up (if any) is read or changed.

- ``ProctrackType=proctrack/linuxproc`` and ``TaskPlugin=task/none``: no cgroups (a container rarely allows them),
  so no device confinement either: a job's ``CUDA_VISIBLE_DEVICES`` holds the node's indices of its GPUs.
- ``SlurmdParameters=config_overrides``: each node claims 8 CPUs on a 2-core machine (the batch file asks for 8).
- ``Gres=gpu:2`` per node, described in ``gres.conf`` by character devices made with ``mknod`` (the major and minor
  numbers of ``/dev/null``; SLURM refuses plain files), so that SLURM hands out GPUs and sets ``CUDA_VISIBLE_DEVICES``.
- The first node is named after this machine's host name, which resolves here, because the batch file makes the
  first node's name the address where torchrun's rendezvous meets. SLURM sorts a job's node list by name, so the
  second node's name extends the first's: it sorts after it, and never needs to resolve.

``LocalSlurm`` is a context manager: on leaving it (also after a failure) it cancels every job, stops every daemon
by PID (SIGTERM, then SIGKILL), kills what is left in their process groups and removes the folder.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["LocalSlurm", "slurm_missing", "free_ports"]

REAPER = Path(__file__).with_name("reaper.py")  # runs each daemon and reaps what it leaves
DAEMONS = ("munged", "mungekey", "slurmctld", "slurmd", "sbatch", "srun", "squeue", "scancel", "scontrol")
GPUS_PER_NODE = 2
CPUS_PER_NODE = 8


def slurm_missing() -> str | None:
    """Why no local cluster can start here (None: it can)."""
    if os.geteuid() != 0:
        return "not root: the SLURM daemons run as root here (SlurmUser=root)"
    lacking = [d for d in DAEMONS if shutil.which(d) is None]
    if lacking:
        return f"{', '.join(lacking)} not installed (Debian: apt-get install slurmctld slurmd slurm-client munge)"
    return None


def free_ports(n: int) -> list[int]:
    """``n`` distinct ports that nothing listens on now (bound together, then released)."""
    socks = []
    try:
        for _ in range(n):
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


@dataclass
class LocalSlurm:
    """Two SLURM nodes on this machine; ``env`` is what a client (``sbatch``, ``srun``) needs to reach them."""

    root: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="gpulab-slurm-")))
    nodes: tuple[str, str] = field(default_factory=lambda: (socket.gethostname(), f"{socket.gethostname()}-n2"))
    started: dict[str, subprocess.Popen] = field(default_factory=dict)

    @property
    def conf(self) -> Path:
        return self.root / "slurm.conf"

    @property
    def env(self) -> dict[str, str]:
        return {**os.environ, "SLURM_CONF": str(self.conf)}

    def __enter__(self) -> LocalSlurm:
        try:
            self._write_configs()
            self._start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # --- set-up ---------------------------------------------------------------------------------------------------
    def _write_configs(self) -> None:
        r = self.root
        for sub in ("state", "spool", "dev", "munge"):
            (r / sub).mkdir(mode=0o700)
        subprocess.run(["mungekey", "--create", f"--keyfile={r / 'munge' / 'munge.key'}"], check=True, timeout=30)
        null = os.stat("/dev/null").st_rdev
        for node in self.nodes:
            (r / "spool" / node).mkdir(mode=0o700)
            for i in range(GPUS_PER_NODE):
                os.mknod(r / "dev" / f"{node}-gpu{i}", 0o600 | 0o020000, null)  # a character device, as /dev/nvidiaN
        ctld_port, *node_ports = free_ports(1 + len(self.nodes))
        host = self.nodes[0]
        lines = [
            f"ClusterName=gpulab{os.getpid()}",
            f"SlurmctldHost={host}(127.0.0.1)",
            f"SlurmctldPort={ctld_port}",
            "SlurmUser=root",
            "AuthType=auth/munge",
            "CredType=cred/munge",
            f"AuthInfo=socket={r / 'munge' / 'munge.sock'}",
            f"StateSaveLocation={r / 'state'}",
            f"SlurmdSpoolDir={r / 'spool' / '%n'}",
            f"SlurmctldPidFile={r / 'slurmctld.pid'}",
            f"SlurmdPidFile={r / 'slurmd-%n.pid'}",
            f"SlurmctldLogFile={r / 'slurmctld.log'}",
            f"SlurmdLogFile={r / 'slurmd-%n.log'}",
            "ProctrackType=proctrack/linuxproc",
            "TaskPlugin=task/none",
            "JobAcctGatherType=jobacct_gather/none",
            "AccountingStorageType=accounting_storage/none",
            "JobCompType=jobcomp/none",
            "SelectType=select/cons_tres",
            "SelectTypeParameters=CR_Core",
            "SlurmdParameters=config_overrides",
            "SchedulerType=sched/builtin",
            "MpiDefault=none",
            "ReturnToService=2",
            "GresTypes=gpu",
            "SlurmdTimeout=30",
            "InactiveLimit=0",
            "KillWait=5",
        ]
        for node, port in zip(self.nodes, node_ports):
            lines.append(
                f"NodeName={node} NodeAddr=127.0.0.1 Port={port} CPUs={CPUS_PER_NODE} Gres=gpu:{GPUS_PER_NODE} "
                "State=UNKNOWN"
            )
        lines.append(f"PartitionName=course Nodes={','.join(self.nodes)} Default=YES MaxTime=INFINITE State=UP")
        self.conf.write_text("\n".join(lines) + "\n")
        gres = [
            f"NodeName={node} Name=gpu File={r / 'dev' / f'{node}-gpu{i}'}"
            for node in self.nodes
            for i in range(GPUS_PER_NODE)
        ]
        (r / "gres.conf").write_text("\n".join(gres) + "\n")

    def _spawn(self, name: str, args: list[str]) -> None:
        log = open(self.root / f"{name}.out", "wb")  # noqa: SIM115 - the daemon's own stdout/stderr, closed with it
        self.started[name] = subprocess.Popen(
            [sys.executable, str(REAPER), *args],
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            env=self.env,
        )
        log.close()

    def _start(self) -> None:
        m = self.root / "munge"
        self._spawn(
            "munged",
            ["munged", "--foreground", "--force", f"--socket={m / 'munge.sock'}", f"--key-file={m / 'munge.key'}",
             f"--pid-file={m / 'munged.pid'}", f"--log-file={m / 'munged.log'}", f"--seed-file={m / 'munged.seed'}"],
        )  # fmt: skip
        self._wait_for(lambda: (m / "munge.sock").exists(), "munged's socket")
        self._spawn("slurmctld", ["slurmctld", "-D", "-i", "-f", str(self.conf)])
        self._wait_for(lambda: self._ok(["scontrol", "ping"], "UP"), "slurmctld to answer scontrol ping")
        for node in self.nodes:
            self._spawn(f"slurmd-{node}", ["slurmd", "-D", "-N", node, "-f", str(self.conf)])
        self._wait_for(self._nodes_idle, "both nodes to be idle in sinfo")

    def _ok(self, args: list[str], expect: str) -> bool:
        done = subprocess.run(args, env=self.env, capture_output=True, text=True, timeout=30)
        return done.returncode == 0 and expect in done.stdout

    def _nodes_idle(self) -> bool:
        done = subprocess.run(
            ["sinfo", "-h", "-N", "-o", "%N %t"], env=self.env, capture_output=True, text=True, timeout=30
        )
        states = dict(line.split() for line in done.stdout.splitlines() if line.strip())
        return all(states.get(n) == "idle" for n in self.nodes)

    def _wait_for(self, ready, what: str, timeout_s: float = 60) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            dead = [n for n, p in self.started.items() if p.poll() is not None]
            if dead:
                raise RuntimeError(f"{', '.join(dead)} ended while waiting for {what}:\n{self.logs()}")
            if ready():
                return
            time.sleep(0.2)
        raise TimeoutError(f"no {what} after {timeout_s:.0f} s:\n{self.logs()}")

    # --- use --------------------------------------------------------------------------------------------------------
    def logs(self, tail: int = 30) -> str:
        """The last lines of every daemon's log, for a failure's message."""
        out = []
        for path in sorted(self.root.glob("*.log")) + sorted(self.root.glob("*.out")):
            lines = path.read_text(errors="replace").splitlines()[-tail:]
            out.append(f"--- {path.name}\n" + "\n".join(lines))
        return "\n".join(out)

    def jobs(self) -> list[str]:
        """The ids of the jobs the controller still knows as pending or running."""
        done = subprocess.run(
            ["squeue", "-h", "-o", "%i", "-t", "PD,R,CG"], env=self.env, capture_output=True, text=True, timeout=30
        )
        return done.stdout.split()

    def settled(self, timeout_s: float = 30) -> list[str]:
        """Wait until no job is pending, running or completing (a finished step takes a moment to leave); what is
        left after ``timeout_s``."""
        deadline = time.monotonic() + timeout_s
        while (left := self.jobs()) and time.monotonic() < deadline:
            time.sleep(0.3)
        return left

    # --- tear-down --------------------------------------------------------------------------------------------------
    def stop(self) -> None:
        """Cancel every job, stop every daemon by its PID, kill what is left in their groups, remove the folder."""
        if "slurmctld" in self.started and self.started["slurmctld"].poll() is None:
            try:
                jobs = self.jobs()
                if jobs:
                    subprocess.run(["scancel", *jobs], env=self.env, capture_output=True, timeout=30)
                    deadline = time.monotonic() + 20
                    while self.jobs() and time.monotonic() < deadline:
                        time.sleep(0.3)
            except (OSError, subprocess.SubprocessError):
                pass  # the daemons are stopped below whatever happened here
        for name in reversed(list(self.started)):  # nodes first, the controller, MUNGE last
            proc = self.started[name]
            if proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait(timeout=15)
            try:  # a job step's slurmstepd and its tasks stay in the daemon's session: none may outlive it
                os.killpg(proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        shutil.rmtree(self.root, ignore_errors=True)
