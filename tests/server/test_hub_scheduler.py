"""The Hub's GPU hooks step aside where a scheduler places the servers (batchspawner, KubeSpawner): they reserve
nothing on the Hub's machine, and say so in the Hub's log."""

from __future__ import annotations

import asyncio
import logging
import types

import pytest

pytest.importorskip("jupyterhub", reason="JupyterHub is in the hub extra: pip install -e '.[hub]'")
from jupyterhub.spawner import LocalProcessSpawner  # noqa: E402

from gpulab.server.hub import gpu_hooks  # noqa: E402
from gpulab.server.scheduler_spawners import scheduler_spawner  # noqa: E402


def _spawner_class(module: str, name: str) -> type:
    """A class named and placed as the spawner package's own (the packages are not installed for the unit tests)."""
    return type(name, (), {"__module__": module})


@pytest.mark.parametrize(
    ("module", "name", "scheduler"),
    [
        ("batchspawner.batchspawner", "SlurmSpawner", "a batch scheduler (SLURM, PBS, …)"),
        ("kubespawner.spawner", "KubeSpawner", "Kubernetes"),
        ("jupyterhub.spawner", "LocalProcessSpawner", None),
        ("dockerspawner.dockerspawner", "DockerSpawner", None),  # one machine: the hooks pass GPUs into containers
    ],
)
def test_which_spawners_leave_gpus_to_a_scheduler(module, name, scheduler):
    assert scheduler_spawner(_spawner_class(module, name)) == scheduler
    site = type("SiteSpawner", (_spawner_class(module, name),), {"__module__": "jupyterhub_config"})
    assert scheduler_spawner(site) == scheduler  # a site's subclass, as configs often define
    assert scheduler_spawner(LocalProcessSpawner) is None


def test_with_a_batch_spawner_the_hooks_reserve_nothing(tmp_path, monkeypatch, caplog):
    monkeypatch.setenv("GPULAB_SIMULATE_GPUS", "workshop-8")
    pre, post = gpu_hooks(n_gpus=1, reservations=tmp_path)
    spawner = type("SiteSlurm", (_spawner_class("batchspawner.batchspawner", "SlurmSpawner"),), {})()
    spawner.user, spawner.name, spawner.environment = types.SimpleNamespace(name="ada"), "", {"KEEP": "1"}
    with caplog.at_level(logging.WARNING, logger="gpulab.hub"):
        asyncio.run(pre(spawner))
    post(spawner)
    assert spawner.environment == {"KEEP": "1"}
    assert not any(p.name.startswith("GPU-") for p in tmp_path.rglob("*"))
    assert "leaves GPUs to a batch scheduler" in caplog.text and "the GPU hooks reserve nothing" in caplog.text
