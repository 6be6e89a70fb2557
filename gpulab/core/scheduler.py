"""Which scheduler gave this process its GPUs, and which: read from the variables SLURM and Kubernetes set (pure).

On a shared server gpulab hands out GPUs (reservations). On a SLURM cluster or in a Kubernetes pod the scheduler
does, and gpulab must choose only among what it was given:

- **SLURM** (``SLURM_JOB_ID``, set for everything in a job: the batch script, ``salloc``'s shell, each task). A job
  that asked for GPUs (``--gpus``, ``--gres=gpu:N``) gets ``CUDA_VISIBLE_DEVICES``, and ``SLURM_STEP_GPUS`` (in a
  step) or ``SLURM_JOB_GPUS`` (in the batch script) holding the node's indices of its GPUs. Without device
  confinement (``TaskPlugin=task/cgroup`` with ``ConstrainDevices=yes``) ``CUDA_VISIBLE_DEVICES`` holds those same
  node indices and NVML sees every GPU of the node; with it, the process sees only its GPUs, renumbered from 0. A job
  that asked for none gets **no** ``CUDA_VISIBLE_DEVICES`` at all (SLURM removes an exported one), so where nothing
  confines devices it sees every GPU of the node, including other jobs' GPUs.
- **Kubernetes** (``KUBERNETES_SERVICE_HOST``, set in every pod). The NVIDIA device plugin gives a pod the GPUs of
  its ``nvidia.com/gpu`` limit and names them in ``NVIDIA_VISIBLE_DEVICES`` (UUIDs or indices); the container then
  sees only those. ``void`` or ``none`` (a CPU profile) means no GPU; unset, with the NVIDIA runtime, a pod without a
  limit sees every GPU of the node.

``allocation(environ)`` reads this into an ``Allocation`` (None outside any scheduler). The placement helpers use it
to reserve nothing where the job has no GPU and to say how to ask for one; the environment report names it. Taught
in ``docs/clusters.md``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

__all__ = ["Allocation", "allocation", "SLURM", "KUBERNETES"]

SLURM = "SLURM"
KUBERNETES = "Kubernetes"
_NO_GPU = ("", "void", "none", "NoDevFiles")  # NVIDIA_VISIBLE_DEVICES's values for "no GPU"


def _entries(value: str | None) -> tuple[str, ...] | None:
    if value is None:
        return None
    return tuple(e.strip() for e in value.split(",") if e.strip())


@dataclass(frozen=True)
class Allocation:
    """What a scheduler gave this process. ``gpus``: the GPUs as the scheduler names them (a SLURM node's indices, a
    pod's UUIDs or indices), ``None`` when it said nothing that names them (a Kubernetes pod without
    ``NVIDIA_VISIBLE_DEVICES``: every GPU the container sees); ``confined``: whether the process can see only its own
    GPUs (None: cannot be told from the variables)."""

    scheduler: str
    job: str
    gpus: tuple[str, ...] | None
    confined: bool | None
    source: str

    @property
    def has_gpus(self) -> bool | None:
        """Whether the scheduler gave GPUs (None: unknown, the container's own view decides)."""
        return None if self.gpus is None else bool(self.gpus)

    def how_to_ask(self, n: int = 1) -> str:
        """The learner's next step where the job has too few GPUs."""
        if self.scheduler == SLURM:
            return (
                f"ask SLURM for GPUs when you start the job: `salloc --gpus={n} …` or `sbatch --gpus={n} …` "
                f"(older clusters: `--gres=gpu:{n}`), then start the notebook inside that job"
            )
        return (
            f"choose a server profile with {n} GPU(s) when you start your server (its pod then has an "
            f"nvidia.com/gpu limit of {n}); ask your hub's admin if there is none"
        )

    def course_tools(self) -> str:
        """Which course tools do nothing here, and why."""
        return (
            f"{self.scheduler} decides which GPUs this {self._unit} has: gpulab's reservations only choose among "
            "them (they cannot see other jobs), and JupyterHub's GPU hooks and share caps are not used"
        )

    @property
    def _unit(self) -> str:
        return "job" if self.scheduler == SLURM else "pod"

    def __str__(self) -> str:
        if self.gpus is None:
            gpus = "GPUs: every GPU this container sees (NVIDIA_VISIBLE_DEVICES is not set)"
        elif not self.gpus:
            gpus = "no GPU"
        else:
            gpus = f"GPU(s) {','.join(self.gpus)} ({self.source})"
        confinement = {True: "confined to them", False: "not confined: every GPU of the node is visible", None: ""}
        extra = f"; {confinement[self.confined]}" if self.confined is not None and self.gpus is not None else ""
        return f"{self.scheduler} {self.job}: {gpus}{extra}"


def _slurm(env: Mapping[str, str]) -> Allocation:
    job = f"job {env['SLURM_JOB_ID']}"
    for name in ("SLURM_STEP_GPUS", "SLURM_JOB_GPUS"):
        node_gpus = _entries(env.get(name))
        if node_gpus:
            break
    else:
        name, node_gpus = "", ()
    visible = _entries(env.get("CUDA_VISIBLE_DEVICES"))
    if not node_gpus and not visible:
        # no GPU asked for: SLURM removed CUDA_VISIBLE_DEVICES; only cgroups could hide the node's GPUs
        return Allocation(SLURM, job, (), None, "no SLURM_JOB_GPUS, no CUDA_VISIBLE_DEVICES")
    if not node_gpus:
        return Allocation(SLURM, job, visible, None, "CUDA_VISIBLE_DEVICES")
    if visible is None or visible == node_gpus:
        # the same node indices in both (or no variable): nothing renumbered them
        confined = None if visible is None or node_gpus == tuple(str(i) for i in range(len(node_gpus))) else False
        return Allocation(SLURM, job, node_gpus, confined, name)
    # CUDA_VISIBLE_DEVICES renumbered from 0 while the node's indices differ: ConstrainDevices hides the others
    return Allocation(SLURM, job, node_gpus, True, name)


def _kubernetes(env: Mapping[str, str]) -> Allocation:
    pod = f"pod {env.get('HOSTNAME', '?')}"
    value = env.get("NVIDIA_VISIBLE_DEVICES")
    if value is None or value == "all":
        return Allocation(KUBERNETES, pod, None, True, "NVIDIA_VISIBLE_DEVICES" if value else "")
    if value.strip() in _NO_GPU:
        return Allocation(KUBERNETES, pod, (), True, f"NVIDIA_VISIBLE_DEVICES={value}")
    return Allocation(KUBERNETES, pod, _entries(value), True, "NVIDIA_VISIBLE_DEVICES")


def allocation(environ: Mapping[str, str]) -> Allocation | None:
    """The scheduler's allocation for a process with this environment; None outside SLURM and Kubernetes."""
    if environ.get("SLURM_JOB_ID"):
        return _slurm(environ)
    if environ.get("KUBERNETES_SERVICE_HOST"):
        return _kubernetes(environ)
    return None
