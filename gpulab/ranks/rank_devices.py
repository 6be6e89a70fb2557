"""Which backend the ranks use and which device each rank computes on, decided from facts (pure).

NCCL carries only GPU tensors and wants every rank on a GPU of its own: a rank whose model stays on the CPU fails
with "No backend type associated with device type cpu", a rank told ``cuda:1`` on a one-GPU machine fails with
"invalid device ordinal", and two ranks on one GPU make NCCL refuse the duplicate GPU. All three were seen on one H100
(``evidence/``, 2026-11-26). So the rule is: NCCL only when every rank has a GPU of its own (rank k on ``cuda:k``
while k is below the count of GPUs) and NCCL is built in; otherwise gloo, every rank on the CPU. ``backend="nccl"``
asked where it cannot work is refused with what to do instead.

The facts come from the launcher (``plan``: the GPUs one machine's process sees). Tests give them directly for 0, 1, 2
and 8 GPUs. Taught in ``notebooks/04_ddp.ipynb``.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["RankDevices", "decide_rank_devices"]

_NAMED = ("auto", "gloo", "nccl")
_OTHERS = ("mpi", "ucc", "xccl")  # passed through as asked; the launcher checks this build has them


@dataclass(frozen=True)
class RankDevices:
    """The decision: one backend for all ranks, each rank's device (``"cuda:0"``, ``"cpu"``), and why, in words."""

    backend: str
    devices: tuple[str, ...]
    reason: str

    def __str__(self) -> str:
        return self.reason


def decide_rank_devices(
    world_size: int, gpu_count: int, *, nccl_available: bool, requested: str = "auto"
) -> RankDevices:
    """Backend and device per rank for ``world_size`` ranks on one machine with ``gpu_count`` GPUs.

    ``requested``: ``"auto"`` (NCCL when every rank has a GPU of its own and NCCL exists, else gloo on the CPU),
    ``"gloo"`` (the CPU, as asked), ``"nccl"`` (refused with a ``ValueError`` where it cannot work), or another
    backend of ``torch.distributed`` (``mpi``, ``ucc``, ``xccl``), passed through with the ranks on the CPU.
    """
    n = world_size
    if n < 1:
        raise ValueError(f"there must be at least one rank to decide for; got {n} ranks.")
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
    why_not = _why_not_nccl(n, gpu_count, nccl_available)
    if why_not is None:
        devices = tuple(f"cuda:{k}" for k in range(n))
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


def _why_not_nccl(n: int, gpu_count: int, nccl_available: bool) -> str | None:
    """Why NCCL cannot give every one of ``n`` ranks a GPU of its own, in a clause; None when it can."""
    if not nccl_available:
        return "this PyTorch has no NCCL (it comes with CUDA builds on Linux)"
    if gpu_count <= 0:
        return "no rank has a CUDA GPU"
    if gpu_count < n:
        return (
            f"{_ranks(n)} but only {gpu_count} GPU(s), so {_listed('rank', list(range(gpu_count, n)))} would have "
            f"none (never cuda:k past the GPUs there are)"
        )
    return None


def _ranks(n: int) -> str:
    return "1 rank" if n == 1 else f"{n} ranks"


def _listed(word: str, ranks: list[int]) -> str:
    shown = ", ".join(map(str, ranks[:4])) + (", …" if len(ranks) > 4 else "")
    return f"{word} {shown}" if len(ranks) == 1 else f"{word}s {shown}"
