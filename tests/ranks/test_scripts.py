"""The chapter's scripts run for real: torchrun on one machine, two torchruns as two nodes on loopback, the SLURM
per-node script with the variables SLURM would set, and the deprecated launcher's messages."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from ..process_group import kill_group, run
from .processes import ROOT

SCRIPTS = ROOT / "notebooks" / "scripts"


def env(**extra: str) -> dict[str, str]:
    path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    bin_dir = os.path.dirname(sys.executable)
    return {**os.environ, "PYTHONPATH": path, "PATH": bin_dir + os.pathsep + os.environ["PATH"], **extra}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def results(*outputs: str) -> list[dict]:
    return [json.loads(line) for out in outputs for line in out.splitlines() if line.startswith("{")]


def torchrun(*args: str) -> list[str]:
    return [sys.executable, "-m", "torch.distributed.run", *args]


def test_the_script_trains_on_two_processes_under_torchrun(tmp_path):
    done = run(
        torchrun(
            "--standalone",
            "--nproc-per-node=2",
            str(SCRIPTS / "ddp_digits.py"),
            "--epochs",
            "2",
            "--checkpoint",
            str(tmp_path / "c.pt"),
        ),
        capture_output=True,
        text=True,
        timeout=300,
        env=env(),
    )
    assert done.returncode == 0, done.stderr[-3000:]
    [result] = results(done.stdout)  # rank 0 only
    assert (result["world_size"], result["backend"], result["epochs"]) == (2, "gloo", 2)
    assert "gloo on the CPU for 2 ranks: no rank has a CUDA GPU." in done.stdout.splitlines()  # rank 0 says why
    assert result["test_accuracy"] > 0.5 and (tmp_path / "c.pt").is_file()


def _two_nodes(commands: list[list[str]], extra_envs: list[dict[str, str]], tmp_path: Path) -> list[dict]:
    """Both nodes at once, each in a process group of its own; their pipes are read at the same time (one node that
    fills its pipe must not wait for the other node to finish), and on a timeout both groups die, ranks included."""
    procs = [
        subprocess.Popen(
            cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env(**extra), start_new_session=True
        )
        for cmd, extra in zip(commands, extra_envs)
    ]
    with ThreadPoolExecutor(len(procs)) as pool:
        try:
            outputs = list(pool.map(lambda p: p.communicate(timeout=240), procs))
        finally:
            for p in procs:
                kill_group(p)  # ranks of a node that hung (its reader then ends), or left behind by one that ended
    for p, (_, err) in zip(procs, outputs):
        assert p.returncode == 0, err[-3000:]
    why = [line for out, _ in outputs for line in out.splitlines() if line.startswith(("gloo on the CPU", "NCCL:"))]
    assert len(why) == 1, "rank 0, on one of the nodes, says why it chose its backend"
    return results(*(out for out, _ in outputs))


@pytest.mark.parametrize("attempt", [1, 2])  # twice: a second job on the same machine must not meet the first's state
def test_two_torchruns_meet_as_two_nodes_on_loopback(tmp_path, attempt):
    port = free_port()
    node = torchrun(
        "--nnodes=2",
        "--nproc-per-node=1",
        "--rdzv-backend=c10d",
        f"--rdzv-endpoint=127.0.0.1:{port}",
        f"--rdzv-id=nodes-{attempt}",
        str(SCRIPTS / "ddp_digits.py"),
        "--epochs",
        "1",
        "--checkpoint",
        str(tmp_path / "c.pt"),
    )
    [result] = _two_nodes([node, node], [{}, {}], tmp_path)  # one rank 0 among the two nodes
    assert result["world_size"] == 2 and result["backend"] == "gloo"
    # Where both nodes see the same one GPU, the ranks find it out across nodes (tests/ranks/test_agree.py)


def test_the_slurm_node_script_runs_as_two_nodes_with_slurms_variables(tmp_path):
    port = str(free_port())
    slurm = {
        "SLURM_NNODES": "2",
        "SLURM_JOB_ID": "4242",
        "SLURM_GPUS_ON_NODE": "1",
        "MASTER_ADDR": "127.0.0.1",
        "MASTER_PORT": port,
        "PYTHON": sys.executable,
    }
    command = ["bash", str(SCRIPTS / "node.sh"), "--epochs", "1", "--checkpoint", str(tmp_path / "c.pt")]
    [result] = _two_nodes(
        [command, command], [{**slurm, "SLURM_NODEID": "0"}, {**slurm, "SLURM_NODEID": "1"}], tmp_path
    )
    assert result["world_size"] == 2
    batch = (SCRIPTS / "ddp_digits.sbatch").read_text()
    assert "#SBATCH --nodes=2" in batch and 'srun bash "$(dirname "$0")/node.sh"' in batch


def test_the_deprecated_launcher_warns_and_the_old_argument_is_refused():
    done = run(
        [sys.executable, "-m", "torch.distributed.launch", "--nproc_per_node=2", str(SCRIPTS / "launch_legacy.py")],
        capture_output=True,
        text=True,
        timeout=300,
        env=env(),
    )
    assert done.returncode != 0
    assert "FutureWarning: The module torch.distributed.launch is deprecated" in done.stderr
    assert "os.environ['LOCAL_RANK']" in done.stderr
    assert "launch_legacy.py: error: unrecognized arguments: --local-rank=0" in done.stderr
