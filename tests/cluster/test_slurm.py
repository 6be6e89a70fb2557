"""The course on a real SLURM cluster (two nodes on this machine, ``local_slurm.py``), as a user meets it.

``notebooks/scripts/digits_ddp.sbatch`` is submitted **unchanged** with ``sbatch`` from the course's folder, the
folder its header names, and must train on both nodes as one world of 4 ranks (2 per node, one per GPU SLURM gave
the node) and save rank 0's weights. Only environment variables and ``sbatch``'s own options are set: ``PYTHON`` (the
interpreter ``node.sh`` runs), a free ``MASTER_PORT``, ``LOGLEVEL=INFO`` (torchrun then logs each node's ranks and
the world size it agreed on). Run by ``make test-cluster`` (root, with Debian's SLURM installed); skipped elsewhere.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cluster.local_slurm import LocalSlurm, free_ports, slurm_missing

ROOT = Path(__file__).resolve().parents[2]
BATCH = ROOT / "notebooks" / "scripts" / "digits_ddp.sbatch"

pytestmark = [pytest.mark.cluster, pytest.mark.skipif(slurm_missing() is not None, reason=slurm_missing() or "")]


@pytest.fixture(scope="module")
def cluster():
    with LocalSlurm() as c:
        yield c
        left = c.settled()
        assert left == [], f"jobs still queued or running after the tests: {left}"


def _submit(cluster: LocalSlurm, args: list[str], cwd: Path, tmp_path: Path, **env: str) -> tuple[int, str]:
    """``sbatch --wait`` in ``cwd``; the job's exit code and its output (every node's stdout and stderr)."""
    out = tmp_path / "job-%j.out"
    [port] = free_ports(1)
    job_env = {**cluster.env, "PYTHON": sys.executable, "MASTER_PORT": str(port), "LOGLEVEL": "INFO", **env}
    job_env = {k: v for k, v in job_env.items() if k != "CUDA_VISIBLE_DEVICES"}
    done = subprocess.run(
        ["sbatch", "--wait", "--parsable", f"--output={out}", *args],
        cwd=cwd, env=job_env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    job_id = done.stdout.strip().split(";")[0]
    logs = list(tmp_path.glob(f"job-{job_id}.out"))
    text = logs[0].read_text(errors="replace") if logs else f"(no job output) sbatch said: {done.stdout}{done.stderr}"
    return done.returncode, text


@pytest.mark.timeout(900)
def test_the_batch_file_trains_on_two_nodes_as_one_world_of_four(cluster, tmp_path):
    weights = tmp_path / "digits.pt"
    code, log = _submit(cluster, [str(BATCH.relative_to(ROOT)), "--epochs", "2", "--out", str(weights)], ROOT, tmp_path)
    assert code == 0, f"the job failed ({code}):\n{log}\n{cluster.logs()}"
    # node.sh says which node it runs on; both ran
    assert sorted(re.findall(r"^node (\d) of 2: torchrun meets", log, re.M)) == ["0", "1"], log
    # torchrun's agent on each node: its ranks, and the world size every node agreed on
    ranks = sorted(int(r) for found in re.findall(r"global_ranks=\[([\d, ]+)\]", log) for r in found.split(","))
    assert ranks == [0, 1, 2, 3], log
    worlds = re.findall(r"global_world_sizes=\[([\d, ]+)\]", log)
    assert len(worlds) == 2 and all({int(w) for w in found.split(",")} == {4} for found in worlds), log
    assert "weights saved to" in log and weights.is_file(), log


@pytest.mark.timeout(300)
def test_from_another_folder_the_batch_file_says_how_to_find_node_sh(cluster, tmp_path):
    code, log = _submit(cluster, [str(BATCH), "--epochs", "1"], tmp_path, tmp_path)
    assert code != 0
    assert f"no node.sh in {tmp_path}/notebooks/scripts: run sbatch in the course's folder, or set SCRIPTS" in log


@pytest.mark.timeout(120)
def test_slurm_sets_cuda_visible_devices_only_for_a_job_that_asked_for_gpus(cluster):
    """What the scheduler-aware helpers read: node indices of the allocated GPUs (no confinement here), and no
    variable at all for a job without GPUs, even where the submitter exported an empty one."""
    show = "echo ${CUDA_VISIBLE_DEVICES-unset} ${SLURM_STEP_GPUS-unset}"
    env = {**cluster.env, "CUDA_VISIBLE_DEVICES": ""}
    two = subprocess.run(["srun", "-N1", "--gpus=2", "bash", "-c", show], env=env, capture_output=True, text=True)
    none = subprocess.run(["srun", "-N1", "bash", "-c", show], env=env, capture_output=True, text=True)
    assert two.stdout.split() == ["0,1", "0,1"], two.stderr
    assert none.stdout.split() == ["unset", "unset"], none.stderr
    assert os.environ.get("SLURM_JOB_ID") is None  # the tests themselves run outside any job


@pytest.mark.timeout(180)
def test_gpulab_reads_what_slurm_really_set(cluster):
    """The scheduler-aware helpers' reading (``gpulab.core.scheduler``), in real job steps with and without GPUs."""
    code = "import os; from gpulab.core.scheduler import allocation; print(allocation(os.environ))"
    env = {**cluster.env, "PYTHONPATH": str(ROOT)}
    with_gpus = subprocess.run(
        ["srun", "-N1", "--gpus=2", sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
    )
    without = subprocess.run(
        ["srun", "-N1", sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
    )
    assert re.fullmatch(r"SLURM job \d+: GPU\(s\) 0,1 \(SLURM_STEP_GPUS\)\n", with_gpus.stdout), with_gpus.stderr
    assert re.fullmatch(r"SLURM job \d+: no GPU\n", without.stdout), without.stderr


@pytest.mark.timeout(180)
def test_a_cpu_only_server_stays_cpu_only_when_the_variable_is_set_inside_the_step(cluster, tmp_path):
    """SLURM removes CUDA_VISIBLE_DEVICES from a job without GPUs, so an empty one set by the Hub does not survive;
    the batch script's line from docs/clusters.md sets it again inside the step, where SLURM no longer touches it."""
    show = "echo [${CUDA_VISIBLE_DEVICES-unset}]"
    line = f"srun env CUDA_VISIBLE_DEVICES=\"${{CUDA_VISIBLE_DEVICES-}}\" bash -c '{show}'"
    assert line in (ROOT / "docs" / "clusters.md").read_text().replace("jupyterhub-singleuser", f"bash -c '{show}'")
    out = {}
    for name, gpus in (("none", []), ("two", ["--gpus=2"])):
        path = tmp_path / f"{name}.out"
        done = subprocess.run(
            ["sbatch", "--wait", "-N1", *gpus, f"--output={path}", "--wrap", line],
            env={**cluster.env, "CUDA_VISIBLE_DEVICES": ""}, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        out[name] = path.read_text().strip()
    assert out == {"none": "[]", "two": "[0,1]"}
