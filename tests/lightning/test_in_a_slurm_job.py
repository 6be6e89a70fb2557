"""A notebook kernel inside a SLURM job, as docs/clusters.md tells it to set Lightning up, on the CPU.

Real Lightning in a fresh interpreter, with the variables SLURM sets for a task (``srun`` in a batch script, as
batchspawner starts a single-user server; or a job named ``interactive``, as ``salloc`` names it), an executable named
``srun`` on ``PATH`` (Lightning only looks for one), and a ``ddp_notebook`` fit on 2 CPU processes. Without the
docs' lines Lightning takes SLURM's rank and world for both forked ranks and the fit fails; with them the fit runs
and no srun warning is left.
The code under test is the docs page's own block, with ``accelerator="gpu"`` read as ``"cpu"``.
"""

from __future__ import annotations

import os
import re
import sys
import textwrap
from pathlib import Path

import pytest

from tests.process_group import run

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs" / "clusters.md"
NOTICE = "The `srun` command is available on your system but is not used"
# what SLURM 22.05 sets for the one task of `srun jupyterhub-singleuser` in a batch job (seen in make test-cluster)
TASK = {
    "SLURM_JOB_ID": "7",
    "SLURM_JOB_NAME": "spawner-jupyterhub",
    "SLURM_NTASKS": "1",
    "SLURM_NTASKS_PER_NODE": "1",
    "SLURM_NNODES": "1",
    "SLURM_NODEID": "0",
    "SLURM_PROCID": "0",
    "SLURM_LOCALID": "0",
    "SLURM_STEP_ID": "0",
    "SLURM_JOB_NODELIST": "n1",
}


def docs_block() -> str:
    """The Python block under the docs' heading on a notebook inside a job."""
    text = DOCS.read_text()
    section = text.split("### What a notebook inside a job sets for Lightning", 1)[1]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


FIT = textwrap.dedent(
    """
    import torch
    torch.set_num_threads(1)
    from torch.utils.data import DataLoader, TensorDataset

    class Tiny(L.LightningModule):
        def __init__(self):
            super().__init__()
            self.layer = torch.nn.Linear(4, 2)
        def training_step(self, batch, batch_idx):
            x, y = batch
            return torch.nn.functional.cross_entropy(self.layer(x), y)
        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=0.1)

    data = TensorDataset(torch.randn(16, 4), torch.randint(0, 2, (16,)))
    trainer.fit(Tiny(), DataLoader(data, batch_size=4))
    print("fitted on", trainer.world_size, "processes with", type(trainer.strategy.cluster_environment).__name__)
    """
)
PLAIN = textwrap.dedent(
    """
    import lightning as L
    trainer = L.Trainer(accelerator="cpu", devices=2, strategy="ddp_notebook", max_epochs=1, logger=False,
                        enable_checkpointing=False, enable_progress_bar=False)
    """
)


def _run(code: str, tmp_path: Path, **slurm: str):
    folder = tmp_path / "bin"
    folder.mkdir(exist_ok=True)
    (folder / "srun").write_text("#!/bin/sh\nexit 1\n")
    (folder / "srun").chmod(0o755)
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_") and k != "PYTHONWARNINGS"}
    env.update(slurm, PATH=f"{folder}{os.pathsep}{env['PATH']}", OMP_NUM_THREADS="1")
    return run([sys.executable, "-c", code], capture_output=True, text=True, timeout=400, env=env, cwd=tmp_path)


def _as_configured(block: str) -> str:
    """The docs' block on the CPU, with the fit's quiet settings."""
    block = block.replace('accelerator="gpu"', 'accelerator="cpu"')
    assert 'accelerator="cpu", devices=2, strategy="ddp_notebook"' in block, block
    return block.replace("plugins=[LightningEnvironment()])", textwrap.dedent(
        """plugins=[LightningEnvironment()], max_epochs=1, logger=False,
                    enable_checkpointing=False, enable_progress_bar=False)"""
    ))  # fmt: skip


@pytest.mark.timeout(600)
def test_inside_a_jobs_task_the_notebooks_ranks_fail_until_lightning_is_told_who_starts_them(tmp_path):
    refused = _run(PLAIN + FIT, tmp_path, **TASK)
    assert refused.returncode != 0
    # Lightning took SLURM's environment: both forked ranks are SLURM's rank 0 of 1, and both host the store
    assert "SLURM auto-requeueing enabled" in refused.stderr and "EADDRINUSE" in refused.stderr, refused.stderr[-3000:]
    done = _run(_as_configured(docs_block()) + FIT, tmp_path, **TASK)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "fitted on 2 processes with LightningEnvironment" in done.stdout
    assert NOTICE not in done.stderr


@pytest.mark.timeout(600)
def test_in_an_interactive_job_the_docs_lines_silence_the_srun_advice_and_nothing_else(tmp_path):
    interactive = {**TASK, "SLURM_JOB_NAME": "interactive"}
    check = "\nimport warnings\nwarnings.warn('a real warning')\n"
    warned = _run(PLAIN + FIT, tmp_path, **interactive)  # Lightning ignores SLURM in such a job, and warns
    assert warned.returncode == 0 and NOTICE in warned.stderr, warned.stderr[-3000:]
    done = _run(_as_configured(docs_block()) + FIT + check, tmp_path, **interactive)
    assert done.returncode == 0, done.stderr[-3000:]
    assert NOTICE not in done.stderr and "UserWarning: a real warning" in done.stderr
