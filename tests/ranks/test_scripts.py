"""The chapter's scripts run for real: the one-device script, its DDP version under torchrun on one machine, two
torchruns as two nodes on loopback, the SLURM per-node script with the variables SLURM would set, and the deprecated
launcher's messages. The scripts a chapter shows are the standard form a learner copies: none imports gpulab."""

from __future__ import annotations

import ast
import difflib
import os
import re
import socket
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import torch

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


def torchrun(*args: str) -> list[str]:
    return [sys.executable, "-m", "torch.distributed.run", *args]


def cpu_env(**extra: str) -> dict[str, str]:
    """As the chapter runs them: on the CPU whatever the machine (no GPU visible), one OpenMP thread per rank."""
    return env(CUDA_VISIBLE_DEVICES="", OMP_NUM_THREADS="1", **extra)


ACCURACY = re.compile(r"^test accuracy (\d\.\d+), weights saved to (.+)$", re.M)


def accuracies(*outputs: str) -> list[float]:
    return [float(m.group(1)) for out in outputs for m in ACCURACY.finditer(out)]


@pytest.mark.parametrize(
    "name",
    [
        "digits_single.py",
        "digits_ddp.py",
        "digits_spawn.py",
        "digits_ddp_resume.py",
        "digits_ddp_restart.py",
        "digits_fsdp.py",
        "lightning_ddp.py",
    ],
)
def test_a_script_the_chapter_shows_imports_no_gpulab(name):
    tree = ast.parse((SCRIPTS / name).read_text())
    imported = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    imported |= {n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    assert imported and not any(m.split(".")[0] == "gpulab" for m in imported), sorted(imported)


def test_the_one_device_script_trains_with_no_arguments(tmp_path):
    done = run(
        [sys.executable, str(SCRIPTS / "digits_single.py")],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        env=cpu_env(),
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert [line.split(":")[0] for line in done.stdout.splitlines()[:5]] == [f"epoch {e}" for e in range(5)]
    [acc] = accuracies(done.stdout)
    assert acc > 0.8 and (tmp_path / "digits.pt").is_file()


@pytest.mark.parametrize("launch", ["python", "torchrun"])
def test_the_lightning_script_trains_on_two_cpu_processes_with_no_arguments_and_rank_0_reports(launch, tmp_path):
    script = str(SCRIPTS / "lightning_ddp.py")
    command = [sys.executable, script] if launch == "python" else torchrun("--standalone", "--nproc-per-node=2", script)
    done = run(command, cwd=tmp_path, capture_output=True, text=True, timeout=300, env=cpu_env())
    assert done.returncode == 0, done.stderr[-3000:]
    [report] = [line for line in done.stdout.splitlines() if line.startswith("world size")]  # one rank prints
    assert report.startswith("world size 2, validation over both ranks: {'val_loss': ") and "'val_acc': " in report
    assert list((tmp_path / "checkpoints").iterdir()) == [tmp_path / "checkpoints" / "best.ckpt"]


def test_the_ddp_script_trains_on_two_cpu_ranks_with_no_arguments_and_only_rank_0_writes(tmp_path):
    done = run(
        torchrun("--standalone", "--nproc-per-node=2", str(SCRIPTS / "digits_ddp.py")),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        env=cpu_env(),
    )
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.splitlines()
    assert [line.split(":")[0] for line in lines[:5]] == [f"epoch {e}" for e in range(5)]  # rank 0 alone prints
    [acc] = accuracies(done.stdout)
    assert acc > 0.7
    state = torch.load(tmp_path / "digits.pt")
    assert list(state) == ["layers.0.weight", "layers.0.bias", "layers.2.weight", "layers.2.bias"]  # no "module."
    assert "OMP_NUM_THREADS" not in done.stderr  # set by the caller: torchrun's banner stays out


def test_the_spawn_version_starts_its_own_two_cpu_ranks(tmp_path):
    done = run(
        [sys.executable, str(SCRIPTS / "digits_spawn.py"), "--epochs", "1"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=180,
        env=cpu_env(MASTER_PORT=str(free_port())),
    )
    assert done.returncode == 0, done.stderr[-3000:]
    [acc] = accuracies(done.stdout)  # rank 0 alone prints
    assert acc > 0.3 and (tmp_path / "digits.pt").is_file()


def test_the_ddp_script_differs_from_the_one_device_script_only_where_ddp_needs_it():
    single = (SCRIPTS / "digits_single.py").read_text().splitlines()
    ddp = (SCRIPTS / "digits_ddp.py").read_text().splitlines()
    added = [line[2:].strip() for line in difflib.ndiff(single, ddp) if line.startswith("+ ")]
    for piece in (
        'local_rank = int(os.environ["LOCAL_RANK"])',
        "torch.cuda.set_device(local_rank)",
        'dist.init_process_group("nccl")',
        'dist.init_process_group("gloo")',
        "sampler.set_epoch(epoch)",
        'model = DDP(model, device_ids=[local_rank]) if device.type == "cuda" else DDP(model)',
        "dist.destroy_process_group()",
    ):
        assert any(line.startswith(piece) for line in added), piece
    assert len(added) < 40, "a small diff, as PyTorch's tutorial series shows it"


def _two_nodes(commands: list[list[str]], extra_envs: list[dict[str, str]], tmp_path: Path) -> list[float]:
    """Both nodes at once, each in a process group of its own; their pipes are read at the same time (one node that
    fills its pipe must not wait for the other node to finish), and on a timeout both groups die, ranks included."""
    procs = [
        subprocess.Popen(
            cmd,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=cpu_env(**extra),
            cwd=tmp_path,
            start_new_session=True,
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
    return accuracies(*(out for out, _ in outputs))


@pytest.mark.parametrize("attempt", [1, 2])  # twice: a second job on the same machine must not meet the first's state
def test_two_torchruns_meet_as_two_nodes_on_loopback(tmp_path, attempt):
    port = free_port()
    node = torchrun(
        "--nnodes=2",
        "--nproc-per-node=1",
        "--rdzv-backend=c10d",
        f"--rdzv-endpoint=127.0.0.1:{port}",
        f"--rdzv-id=nodes-{attempt}",
        str(SCRIPTS / "digits_ddp.py"),
        "--epochs",
        "1",
    )
    [accuracy] = _two_nodes([node, node], [{}, {}], tmp_path)  # one rank 0 among the two nodes prints
    assert accuracy > 0.3 and (tmp_path / "digits.pt").is_file()


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
    command = ["bash", str(SCRIPTS / "node.sh"), "--epochs", "1"]
    [accuracy] = _two_nodes(
        [command, command], [{**slurm, "SLURM_NODEID": "0"}, {**slurm, "SLURM_NODEID": "1"}], tmp_path
    )
    assert accuracy > 0.3 and (tmp_path / "digits.pt").is_file()
    batch = (SCRIPTS / "digits_ddp.sbatch").read_text()
    assert "#SBATCH --nodes=2" in batch and 'srun bash "$SCRIPTS/node.sh"' in batch
    commands = [line for line in batch.splitlines() if not line.lstrip().startswith("#")]  # its comment names $0
    assert "SLURM_SUBMIT_DIR" in batch and not any("$0" in line for line in commands)  # sbatch runs a copy


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


def test_the_fsdp_script_trains_on_two_cpu_ranks_with_no_arguments_and_saves_plain_weights(tmp_path):
    done = run(
        torchrun("--standalone", "--nproc-per-node=2", str(SCRIPTS / "digits_fsdp.py")),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=180,
        env=cpu_env(),
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert [line.split(":")[0] for line in done.stdout.splitlines()[:5]] == [f"epoch {e}" for e in range(5)]
    [acc] = accuracies(done.stdout)
    assert acc > 0.7
    state = torch.load(tmp_path / "digits.pt")  # full tensors, not DTensor shards: a plain model loads them
    assert list(state) == ["layers.0.weight", "layers.0.bias", "layers.2.weight", "layers.2.bias"]
    assert type(state["layers.0.weight"]) is torch.Tensor and state["layers.0.weight"].shape == (128, 64)
    assert "gpuGetDeviceCount" not in done.stderr and "USDT" not in done.stderr


def test_the_resumable_script_run_again_goes_on_from_its_snapshot(tmp_path):
    """Stopped and run again (a cluster's requeue): the second run loads the snapshot and trains only what is left.
    A rank killed under --max-restarts is tested by chapter 08's exercise checker (tests/exercises)."""
    outputs = []
    for epochs in ("2", "3"):
        done = run(
            torchrun("--standalone", "--nproc-per-node=2", str(SCRIPTS / "digits_ddp_resume.py"), "--epochs", epochs),
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=180,
            env=cpu_env(),
        )
        assert done.returncode == 0, done.stderr[-3000:]
        outputs.append(done.stdout.splitlines())
    assert [line.split(":")[0] for line in outputs[0][:2]] == ["epoch 0", "epoch 1"]
    assert outputs[1][0] == "resumed from snapshot.pt: 2 epochs run, restart 0"
    assert outputs[1][1].startswith("epoch 2:") and accuracies("\n".join(outputs[1]))
    snapshot = torch.load(tmp_path / "snapshot.pt")
    assert snapshot["epochs_run"] == 3 and snapshot["optimizer"]["state"], "the momentum buffers are in it"
    assert not (tmp_path / "snapshot.pt.tmp").exists()
