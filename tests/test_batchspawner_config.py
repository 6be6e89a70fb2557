"""deploy/batchspawner_config.py, the Hub config docs/clusters.md gives a SLURM site, read without a cluster.

Every setting it makes is one of SlurmSpawner's or JupyterHub's (a misspelt one would be ignored with only a
warning in the Hub's log), and its batch script, rendered by batchspawner as the Hub renders it, asks SLURM for
``--gpus`` exactly when the server has GPUs and starts the server with the ``srun env …`` line docs/clusters.md
shows. The real Hub on a real cluster is tests/cluster/test_batchspawner.py (make test-cluster).
"""

from __future__ import annotations

import runpy
from pathlib import Path

import pytest

pytest.importorskip("batchspawner", reason="batchspawner is in the hub extra: pip install -e '.[hub]'")
from batchspawner import SlurmSpawner  # noqa: E402
from batchspawner.batchspawner import format_template  # noqa: E402
from jupyterhub.app import JupyterHub  # noqa: E402
from traitlets.config import Config  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
CONFIG = ROOT / "deploy" / "batchspawner_config.py"
DOCS = ROOT / "docs" / "clusters.md"
SRUN_LINE = 'srun env CUDA_VISIBLE_DEVICES="${CUDA_VISIBLE_DEVICES-}" '


def _config() -> Config:
    c = Config()
    runpy.run_path(str(CONFIG), init_globals={"get_config": lambda: c})
    return c


def _render(c: Config, **options: str) -> str:
    """The batch script the Hub submits for a server: the template with the spawner's req_* values (the config's
    where it sets them, batchspawner's defaults otherwise), then the spawn's options."""
    spawner = c.SlurmSpawner
    subvars = {
        name[4:]: spawner.get(name, SlurmSpawner.class_traits()[name].default_value)
        for name in SlurmSpawner.class_trait_names()
        if name.startswith("req_") and name not in ("req_username", "req_homedir", "req_keepvars")
    }
    subvars |= {"username": "ada", "homedir": "/home/ada", "keepvars": "PATH", "cmd": "SERVER", **options}
    return format_template(spawner.batch_script, **subvars)


def test_every_setting_is_one_the_hub_or_slurmspawner_has():
    c = _config()
    for section, cls in (("SlurmSpawner", SlurmSpawner), ("Spawner", SlurmSpawner), ("JupyterHub", JupyterHub)):
        traits = cls.class_traits(config=True)
        unknown = sorted(set(c[section]) - set(traits))
        assert unknown == [], f"{CONFIG.name} sets {section}.{unknown}, which {cls.__name__} does not have"
    assert c.JupyterHub.spawner_class == "batchspawner.SlurmSpawner"


def test_the_batch_script_asks_for_gpus_only_for_a_gpu_server_and_starts_it_in_a_step():
    c = _config()
    with_gpu, without = _render(c), _render(c, ngpus="")
    assert c.SlurmSpawner.req_ngpus == "1" and "#SBATCH --gpus=1\n" in with_gpu
    assert "--gpus" not in without and "--gres" not in without
    for script in (with_gpu, without):
        assert f"\n{SRUN_LINE}SERVER\n" in script
        assert "--get-user-env" not in script  # the Hub passes the environment, PATH included
        assert "#SBATCH --export=PATH\n" in script and "#SBATCH --chdir=/home/ada\n" in script
    assert "#SBATCH --gpus=2\n" in _render(c, ngpus="2")


def test_the_docs_show_the_configs_server_line_and_how_to_load_it():
    docs = DOCS.read_text()
    assert f"{SRUN_LINE}jupyterhub-singleuser" in docs
    assert 'load_subconfig("/path/to/gpulab/deploy/batchspawner_config.py")' in docs
    assert 'load_subconfig("/path/to/gpulab/deploy/batchspawner_config.py")' in CONFIG.read_text()
    assert "{{cmd}}" in _config().SlurmSpawner.batch_script
