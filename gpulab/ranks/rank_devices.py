"""Which backend the ranks use and which device each rank computes on, decided from facts (pure).

NCCL carries only GPU tensors and wants every rank on a GPU of its own: a rank whose model stays on the CPU fails
with "No backend type associated with device type cpu", a rank told ``cuda:1`` on a one-GPU machine fails with
"invalid device ordinal", and two ranks on one GPU (two torchrun "nodes" of one process each on a one-GPU machine,
each seeing ``LOCAL_WORLD_SIZE=1`` and one GPU) make NCCL refuse the duplicate GPU. All three were seen on one H100
(``evidence/``, 2026-11-26). So the rule is: NCCL only when every rank has a GPU of its own — distinct GPUs, told apart
by their UUIDs, which only a comparison *across* ranks can see — and NCCL is built in; otherwise gloo, every rank on
the CPU. ``backend="nccl"`` asked where it cannot work is refused with what to do instead.

The facts come from the launcher (one machine, ``cuda:k`` for rank k while k < the count). Tests give them directly
for 0, 1, 2 and 8 GPUs, and for two ranks that report one UUID. Taught in ``notebooks/04_ddp.ipynb``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["RankGpu", "RankDevices", "decide_rank_devices", "gpus_of_one_machine"]

_NAMED = ("auto", "gloo", "nccl")
_OTHERS = ("mpi", "ucc", "xccl")  # passed through as asked; the launcher checks this build has them


@dataclass(frozen=True)
class RankGpu:
    """The GPU a rank could use: its index in the rank's own process (``cuda:<cuda_index>``) and its identity."""

    cuda_index: int
    uuid: str  # "GPU-4b6a…" (torch.cuda.get_device_properties(i).uuid); the same GPU has the same UUID on any rank


@dataclass(frozen=True)
class RankDevices:
    """The decision: one backend for all ranks, each rank's device (``"cuda:0"``, ``"cpu"``), and why, in words."""

    backend: str
    devices: tuple[str, ...]
    reason: str

    def __str__(self) -> str:
        return self.reason


def gpus_of_one_machine(world_size: int, gpu_count: int) -> list[RankGpu | None]:
    """Ranks started on one machine: rank k may use ``cuda:k`` while k < ``gpu_count`` (distinct indices are
    distinct GPUs in one process's numbering; CUDA refuses a list that names a GPU twice)."""
    return [RankGpu(k, f"cuda:{k}") if k < gpu_count else None for k in range(world_size)]


def decide_rank_devices(
    gpus: Sequence[RankGpu | None], *, nccl_available: bool, requested: str = "auto"
) -> RankDevices:
    """Backend and device per rank for ranks whose possible GPUs are ``gpus`` (rank order; None: no GPU for it).

    ``requested``: ``"auto"`` (NCCL when every rank has a GPU of its own and NCCL exists, else gloo on the CPU),
    ``"gloo"`` (the CPU, as asked), ``"nccl"`` (refused with a ``ValueError`` where it cannot work), or another
    backend of ``torch.distributed`` (``mpi``, ``ucc``, ``xccl``), passed through with the ranks on the CPU.
    """
    n = len(gpus)
    if n < 1:
        raise ValueError("there must be at least one rank to decide for; got an empty list of ranks.")
    strays = [g for g in gpus if g is not None and not isinstance(g, RankGpu)]
    if strays:
        raise TypeError(
            f"each rank's GPU is a RankGpu(cuda_index, uuid) or None (no GPU for that rank); got "
            f"{strays[0]!r}. gpus_of_one_machine(world_size, gpu_count) builds the list for one machine."
        )
    if not isinstance(requested, str):
        raise TypeError(f"backend is a name such as 'auto', 'gloo' or 'nccl'; got {requested!r}.")
    requested = requested.lower()  # torch.distributed accepts 'NCCL' and 'Gloo' too
    if requested not in _NAMED + _OTHERS:
        raise ValueError(
            f"backend={requested!r} is not available in this PyTorch build; use 'auto', 'gloo' or, "
            f"with a GPU per rank, 'nccl'."
        )
    cpu = ("cpu",) * n
    if requested == "gloo" or requested in _OTHERS:
        return RankDevices(requested, cpu, f"{requested} on the CPU for {_ranks(n)}, as asked.")
    why_not = _why_not_nccl(gpus, nccl_available)
    if why_not is None:
        devices = tuple(f"cuda:{g.cuda_index}" for g in gpus if g is not None)
        return RankDevices(
            "nccl",
            devices,
            f"NCCL: each of the {_ranks(n)} has a GPU of its own ({', '.join(devices)} in each rank's numbering).",
        )
    if requested == "nccl":
        raise ValueError(
            f"backend='nccl' cannot work here: {why_not}. NCCL needs a GPU of its own for every rank. "
            f"Use backend='gloo' (CPU tensors; 'auto' picks it here), fewer ranks, or a machine with "
            f"one GPU per rank."
        )
    return RankDevices("gloo", cpu, f"gloo on the CPU for {_ranks(n)}: {why_not}.")


def _why_not_nccl(gpus: Sequence[RankGpu | None], nccl_available: bool) -> str | None:
    """Why NCCL cannot give every rank a GPU of its own, in a clause; None when it can."""
    n = len(gpus)
    if not nccl_available:
        return "this PyTorch has no NCCL (it comes with CUDA builds on Linux)"
    without = [r for r, g in enumerate(gpus) if g is None]
    if len(without) == n:
        return "no rank has a CUDA GPU"
    if without:
        have = n - len(without)
        return (
            f"{_ranks(n)} but only {have} GPU(s), so {_listed('rank', without)} would have none "
            f"(never cuda:k past the GPUs there are)"
        )
    first: dict[str, int] = {}
    for r, g in enumerate(gpus):
        assert g is not None
        if g.uuid in first:
            return (
                f"ranks {first[g.uuid]} and {r} would share one GPU ({g.uuid}), as two nodes on one machine with "
                f"one GPU do, and NCCL refuses two ranks on one GPU"
            )
        first[g.uuid] = r
    return None


def _ranks(n: int) -> str:
    return "1 rank" if n == 1 else f"{n} ranks"


def _listed(word: str, ranks: list[int]) -> str:
    shown = ", ".join(map(str, ranks[:4])) + (", …" if len(ranks) > 4 else "")
    return f"{word} {shown}" if len(ranks) == 1 else f"{word}s {shown}"
