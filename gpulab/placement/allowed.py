"""Which of the GPUs NVML lists a process may choose among: the one rule ``reserve_gpus``, ``choose_gpus`` and the
picker apply (pure).

Two things limit it. ``CUDA_VISIBLE_DEVICES``, where set, hides the GPUs it does not name (read as CUDA reads it,
``core.visible``). Inside a SLURM job or a Kubernetes pod, the scheduler's allocation (``core.scheduler``) limits it
to the GPUs it gave, and to none where it gave none: gpulab's lock files cannot see other jobs, so a GPU the scheduler
did not give may be another job's. The scheduler names its GPUs in its own way, mapped onto NVML's list here:

- **UUIDs** (a pod's ``NVIDIA_VISIBLE_DEVICES``): the GPU with that UUID, or the card of that ``MIG-…`` slice.
- **A SLURM node's indices** (``SLURM_STEP_GPUS``/``SLURM_JOB_GPUS``, ``"2,3"``). Where NVML lists exactly as many
  GPUs as the job was given, it sees only the job's own (device confinement, ``ConstrainDevices=yes``: the job's
  ``CUDA_VISIBLE_DEVICES`` is renumbered ``"0,1"``), so every GPU it lists is the job's. Where it lists more, it sees
  the whole node, and the node's index k is taken as NVML's GPU k. SLURM numbers a node's GPUs by device file
  (``/dev/nvidiaN``), NVML (and nvidia-smi) by PCI bus: the two agree where the node's device files follow its bus
  order, which a site checks (``docs/clusters.md``); gpulab cannot. ``CUDA_VISIBLE_DEVICES`` further limits the
  choice only where it counts in NVML's numbering, not where confinement renumbered it on a node NVML sees whole.

Taught in ``docs/clusters.md``; the helpers that apply it in ``notebooks/02_choosing_gpus.ipynb``.
"""

from __future__ import annotations

import os
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

from ..core.arguments import index_list, shown
from ..core.readings import GpuInfo
from ..core.scheduler import SLURM, Allocation, allocation
from ..core.visible import visible_map

__all__ = ["Usable", "usable_gpus", "as_usable"]


@dataclass(frozen=True)
class Usable:
    """The GPUs a process may choose among: ``physical_indices`` (NVML's numbering; None: every GPU NVML lists), the
    scheduler's allocation they come from (``granted``, None outside a scheduler), and the scheduler's names that
    match no GPU NVML lists (``unseen``)."""

    physical_indices: frozenset[int] | None
    granted: Allocation | None = None
    unseen: tuple[str, ...] = ()

    def allows(self, physical_index: int) -> bool:
        """Whether this process may use the GPU NVML numbers ``physical_index``."""
        return self.physical_indices is None or physical_index in self.physical_indices

    @property
    def _limited_by_scheduler(self) -> bool:
        return self.granted is not None and self.granted.gpus is not None

    @property
    def hidden_because(self) -> str:
        """Why a GPU outside the list is hidden, as the picker's "in use by" column says it."""
        if self._limited_by_scheduler:
            return f"not given to this {self.granted.scheduler} {self.granted.job}"
        return "hidden from this kernel by CUDA_VISIBLE_DEVICES"

    def note(self) -> str:
        """The line ``NoFreeGpu`` adds where the others are hidden: which GPUs may be used, and why."""
        allowed = sorted(self.physical_indices or ())
        if not self._limited_by_scheduler:
            return f"  (only GPU(s) {allowed} may be used by this process: CUDA_VISIBLE_DEVICES hides the others)"
        unseen = (
            f"; {self.granted.scheduler}'s GPU(s) {','.join(self.unseen)} match no GPU NVML lists here"
            if self.unseen
            else ""
        )
        return (
            f"  (only GPU(s) {allowed} may be used by this process: {self.granted.scheduler} gave "
            f"{self.granted.job} no other{unseen})"
        )

    def shortfall(self, n: int) -> str:
        """Where the scheduler gave fewer than ``n`` GPUs: what happened, why gpulab takes no other, and how to ask
        the scheduler for them; ``""`` where it gave enough, or where no scheduler decides."""
        granted = self.granted
        if granted is None or granted.gpus is None or len(granted.gpus) >= n:
            return ""
        return f"asked for {n} GPU(s), but {self._given(n)}"

    def none_given(self) -> str:
        """Where the scheduler gave no GPU at all, the picker's line: what happened, why, what to do; else ``""``."""
        return f"No GPU to choose: {self._given(1)}" if self.shortfall(1) else ""

    def _given(self, n: int) -> str:
        granted = self.granted
        given = "no GPU" if not granted.gpus else f"{len(granted.gpus)} GPU(s) ({','.join(granted.gpus)})"
        return (
            f"this runs in {granted.scheduler} {granted.job}, which was given {given}: the scheduler hands out GPUs "
            f"here, and gpulab takes none it did not give (other jobs may be using them). To get "
            f"{'one' if n == 1 else 'them'}, {granted.how_to_ask(n)}. Without a GPU, run on the CPU (device='cpu')."
        )


def _is_uuid(name: str) -> bool:
    return name.startswith(("GPU-", "MIG-"))


def _on_nvml(gpus: Sequence[GpuInfo], granted: Allocation) -> tuple[set[int], tuple[str, ...]]:
    """The scheduler's GPUs as NVML's physical indices, and the names that match none."""
    names = granted.gpus or ()
    listed = {g.physical_index for g in gpus}
    if names and not any(_is_uuid(x) for x in names) and len(gpus) == len(names):
        return listed, ()  # NVML sees as many GPUs as the job has: only the job's own (confined, renumbered)
    found: set[int] = set()
    unseen: list[str] = []
    for name in names:
        if _is_uuid(name):
            match = {g.physical_index for g in gpus if any(u.startswith(name) for u in _uuids(g))}
        else:
            match = {int(name)} & listed if name.isdigit() else set()  # a node's index, as NVML numbers it
        found |= match
        if not match:
            unseen.append(name)
    return found, tuple(unseen)


def _uuids(g: GpuInfo) -> list[str]:
    return [g.uuid, *(m.uuid for m in g.mig_devices)]


def usable_gpus(
    gpus: Sequence[GpuInfo], env: Mapping[str, str], scheduler_env: Mapping[str, str] | None = None
) -> Usable:
    """Which of ``gpus`` (NVML's readings) a process may choose among: those ``CUDA_VISIBLE_DEVICES`` in ``env``
    shows, and, where ``scheduler_env`` is given (these are this machine's GPUs), only those its SLURM job or
    Kubernetes pod was given (``core.scheduler.allocation``)."""
    visible = None
    if "CUDA_VISIBLE_DEVICES" in env:
        visible = frozenset(d.physical_index for d in visible_map(gpus, env).devices)
    granted = None if scheduler_env is None else allocation(scheduler_env)
    if granted is None or granted.gpus is None:
        return Usable(visible, granted)
    given, unseen = _on_nvml(gpus, granted)
    renumbered = granted.scheduler == SLURM and granted.confined is True and len(gpus) > len(granted.gpus)
    if visible is not None and not renumbered:  # a renumbered CUDA_VISIBLE_DEVICES counts the job's GPUs, not NVML's
        given &= visible
    return Usable(frozenset(given), granted, unseen)


def as_usable(allowed: object, gpus: Sequence[GpuInfo], this_machine: bool | None = None) -> Usable:
    """``choose_gpus``'s ``allowed``: these physical indices, this answer, or (None) what this machine's scheduler
    gave, for readings of this machine: ``this_machine`` (``Inventory.this_machine``: ``gpulab.devices()``, also where
    ``GPULAB_SIMULATE_GPUS`` describes this machine), or, where that is not known, readings of a real driver."""
    if isinstance(allowed, Usable):
        return allowed
    if allowed is None:
        mine = not any(g.simulated for g in gpus) if this_machine is None else this_machine
        return usable_gpus(gpus, {}, os.environ if mine else None)
    if isinstance(allowed, (str, bytes)) or not isinstance(allowed, Collection):
        raise TypeError(
            f"allowed={shown(allowed)}: allowed takes the physical GPU numbers this process may use, "
            "e.g. allowed={2, 3}, or None for all."
        )
    return Usable(frozenset(index_list(list(allowed), "allowed", example="{2, 3}")))
