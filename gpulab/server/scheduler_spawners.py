"""Which JupyterHub spawners leave GPUs to a scheduler: batchspawner's (SLURM, PBS, …) and KubeSpawner start each
single-user server where the scheduler places it, with the GPUs it allocates, so the Hub's GPU hooks
(``gpulab.server.hub.gpu_hooks``) reserve nothing for them. Pure: it reads a spawner class's modules. Described in
``docs/clusters.md``.
"""

from __future__ import annotations

__all__ = ["SCHEDULER_SPAWNERS", "scheduler_spawner"]

SCHEDULER_SPAWNERS = {"batchspawner": "a batch scheduler (SLURM, PBS, …)", "kubespawner": "Kubernetes"}


def scheduler_spawner(spawner_class: type) -> str | None:
    """The scheduler that places a server started by this spawner class (batchspawner's or KubeSpawner's, or a
    subclass of one), in words; None for a spawner that starts servers on the Hub's own machine."""
    for cls in spawner_class.__mro__:
        scheduler = SCHEDULER_SPAWNERS.get(cls.__module__.split(".")[0])
        if scheduler is not None:
            return scheduler
    return None
