"""Which GPUs are free: a pure policy over ``GpuInfo`` readings (the replacement for Lightning's ``auto_select_gpus``).

``judge`` is the one rule every view applies (``choose_gpus``, ``reserve_gpus``, the picker, ``watch``, the report):
a GPU is **yours** when its reservation is held for this process already (this notebook's own reservation, or the one
of the server this kernel runs in); else **busy** when someone else holds it, or a process has a CUDA context on it,
or more than a little of its memory is used, or it is not nearly idle (a GPU whose processes were not read cannot be
judged free); else **free**. Free GPUs are ranked by free memory, then utilisation. The policy takes the candidates
as an argument (NVML readings, or described GPUs), so it never creates a CUDA context and is testable anywhere.
Holding the chosen GPUs against other kernels is ``gpulab.placement.reservation``'s job. Taught in
``notebooks/02_choosing_gpus.ipynb``.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field

from ..core.arguments import flag, gpu_list, is_real_number, shown, whole_number
from ..core.readings import NOT_READ, GpuInfo, Unavailable, is_known
from ..core.reservable import NO_MIG_SLICE, ONE_MIG_SLICE, device_key, device_readings
from ..core.tables import Table, TableView
from ..core.units import format_bytes
from .allowed import Usable, as_usable

__all__ = [
    "Policy",
    "Verdict",
    "Choice",
    "NoFreeGpu",
    "judge",
    "rank_gpus",
    "choose_gpus",
    "choose_up_to",
    "validated_policy",
    "STATES",
]

STATES = ("free", "yours", "busy")  # a verdict's state, in the order the views sort them


@dataclass(frozen=True)
class Policy:
    """What "free" means: at most this share of memory used, this utilisation, and (by default) no processes."""

    max_memory_used_fraction: float = 0.10
    max_utilization_percent: int = 10
    allow_processes: bool = False

    def __post_init__(self) -> None:
        for name in ("max_memory_used_fraction", "max_utilization_percent"):
            value = getattr(self, name)
            if not is_real_number(value):
                raise TypeError(
                    f"Policy({name}={shown(value)}): {name} is a number, e.g. "
                    "Policy(max_memory_used_fraction=0.5, max_utilization_percent=50)."
                )
        flag(self.allow_processes, "allow_processes")
        if not 0.0 <= self.max_memory_used_fraction <= 1.0:
            raise ValueError(
                f"max_memory_used_fraction is a share of the GPU's memory, between 0 and 1; got "
                f"{self.max_memory_used_fraction!r} (0.1 means at most 10 % already used)."
            )
        if not 0 <= self.max_utilization_percent <= 100:
            raise ValueError(f"max_utilization_percent is between 0 and 100; got {self.max_utilization_percent!r}.")


@dataclass(frozen=True)
class Verdict:
    """One GPU judged by the rule (``judge``): ``free`` or not, ``yours`` (held for this process already), and the
    reason in words."""

    gpu: GpuInfo
    free: bool
    reason: str
    yours: bool = False

    @property
    def state(self) -> str:
        """``"free"``, ``"yours"`` or ``"busy"``: the word every view shows for this GPU."""
        return "yours" if self.yours else "free" if self.free else "busy"

    @property
    def sort_key(self) -> tuple[int, float, float, int]:
        """Free GPUs first, then yours, then the most free memory, the least busy, the lowest index: the order GPUs
        are chosen in."""
        free_b = self.gpu.memory_free_bytes if is_known(self.gpu.memory_free_bytes) else 0
        util = self.gpu.utilization_gpu_percent if is_known(self.gpu.utilization_gpu_percent) else 100
        return (STATES.index(self.state), -float(free_b), float(util), self.gpu.physical_index)


def judge(
    gpu: GpuInfo,
    policy: Policy | None = None,
    *,
    taken: Mapping[str, str] | None = None,
    yours: Mapping[str, str] | None = None,
) -> Verdict:
    """The one rule for "free", a pure function of one GPU's reading (its processes included) and its reservation.

    ``yours`` maps the UUIDs held for this process already to whose they are (``"reserved by this notebook"``,
    ``"reserved for alice's server"``); ``taken`` the UUIDs someone else holds to who (``"pid 4242 (bob@box)"``).
    """
    return _judge(gpu, validated_policy(policy) or Policy(), _taken(taken), _taken(yours, "yours"))


def _judge(g: GpuInfo, policy: Policy, taken: Mapping[str, str], yours: Mapping[str, str]) -> Verdict:
    if g.uuid in yours:  # before the readings: this process's own work on it does not make it busy for it
        return Verdict(g, False, f"yours: {yours[g.uuid]}", yours=True)
    if g.uuid in taken:
        return Verdict(g, False, f"reserved by {taken[g.uuid]}")
    if g.mig_enabled is True:
        return Verdict(g, False, NO_MIG_SLICE)
    if not (is_known(g.memory_used_bytes) and is_known(g.memory_total_bytes)) or not g.memory_total_bytes:
        return Verdict(g, False, f"memory use unknown ({g.memory_used_bytes}), so it cannot be judged free")
    share = g.memory_used_bytes / g.memory_total_bytes
    if share > policy.max_memory_used_fraction:
        return Verdict(
            g,
            False,
            f"{format_bytes(g.memory_used_bytes)} of {format_bytes(g.memory_total_bytes)} "
            f"used ({share:.0%} > {policy.max_memory_used_fraction:.0%})",
        )
    if is_known(g.utilization_gpu_percent) and g.utilization_gpu_percent > policy.max_utilization_percent:
        return Verdict(g, False, f"{g.utilization_gpu_percent} % busy (> {policy.max_utilization_percent} %)")
    if not policy.allow_processes and isinstance(g.processes, Unavailable) and g.processes.reason == NOT_READ:
        return Verdict(
            g,
            False,
            "its processes were not read (processes=False), so it cannot be judged free: read the GPUs with "
            "gpulab.devices(), which reads them",
        )
    if not policy.allow_processes and not isinstance(g.processes, Unavailable) and g.processes:
        pids = ", ".join(str(p.pid) for p in g.processes)
        return Verdict(g, False, f"{len(g.processes)} process(es) already have a CUDA context on it (pid {pids})")
    util = (
        f"{g.utilization_gpu_percent} % busy"
        if is_known(g.utilization_gpu_percent)
        else f"utilisation {g.utilization_gpu_percent}"
    )
    return Verdict(g, True, f"free: {format_bytes(g.memory_free_bytes)} free, {util}")


def rank_gpus(
    gpus: Sequence[GpuInfo],
    policy: Policy | None = None,
    *,
    taken: Mapping[str, str] | None = None,
    yours: Mapping[str, str] | None = None,
) -> tuple[Verdict, ...]:
    """Every GPU with its verdict (``judge``), free ones first (most free memory, then least busy, then lowest index),
    then yours, then busy ones. A reader given as ``gpus`` is read with its processes. A GPU in MIG mode is judged as
    a whole GPU (CUDA cannot use it); give ``core.reservable.device_readings(gpus)`` to judge its slices instead.

    ``taken`` maps UUIDs already reserved by someone to a description of who (``"pid 4242 (alice)"``); ``yours`` those
    held for this process already to whose they are.
    """
    policy = validated_policy(policy) or Policy()
    taken, yours = _taken(taken), _taken(yours, "yours")
    candidates = gpu_list(gpus, processes=True)
    return tuple(sorted((_judge(g, policy, taken, yours) for g in candidates), key=lambda v: v.sort_key))


def validated_policy(policy: object) -> Policy | None:
    """``policy`` if it is a ``Policy`` or None; otherwise ``TypeError`` saying how to write one."""
    if policy is not None and not isinstance(policy, Policy):
        raise TypeError(
            f"policy={shown(policy)} is a {type(policy).__name__}; policy takes a Policy, e.g. "
            "gpulab.placement.selection.Policy(max_memory_used_fraction=0.5), or None for the default."
        )
    return policy


def _taken(taken: object, name: str = "taken") -> Mapping[str, str]:
    if taken is None:
        return {}
    if not isinstance(taken, Mapping):
        whom = {"taken": "who holds it, e.g. {'GPU-5a16…': 'pid 4242 (alice)'}"}.get(
            name, "whose it is, e.g. {'GPU-5a16…': 'reserved by this notebook'}"
        )
        raise TypeError(
            f"{name}={shown(taken)} is a {type(taken).__name__}; {name} maps each reserved GPU's UUID to {whom}."
        )
    return taken


class NoFreeGpu(RuntimeError):
    """Fewer free GPUs than asked for; the message lists why each GPU was passed over.

    ``ranking`` holds the verdicts the message was written from (empty when the machine has no GPU), and ``notes`` the
    lines after them (GPUs this process may not use), so that a caller can act on them without reading the text."""

    def __init__(self, message: str, ranking: Sequence[Verdict] = (), notes: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.ranking, self.notes = tuple(ranking), tuple(notes)


@dataclass(frozen=True)
class Choice(TableView):
    """The GPUs picked (best first) and the verdict on every GPU, for the table."""

    chosen: tuple[GpuInfo, ...]
    ranking: tuple[Verdict, ...] = field(repr=False)

    @property
    def physical_indices(self) -> tuple[int, ...]:
        """The chosen GPUs' physical indices, in ``cuda:k`` order."""
        return tuple(g.physical_index for g in self.chosen)

    @property
    def visible_devices(self) -> str:
        """The ``CUDA_VISIBLE_DEVICES`` value for the chosen GPUs: UUIDs (``MIG-…`` for a slice), right whatever
        ``CUDA_DEVICE_ORDER`` is."""
        return ",".join(g.uuid for g in self.chosen)

    def rows(self) -> list[list[str]]:
        """One row per GPU judged: index, name, the ``cuda:k`` it becomes (or free / yours / busy), and why."""
        chosen = {g.uuid: k for k, g in enumerate(self.chosen)}
        return [
            [
                v.gpu.label,
                v.gpu.name,
                f"→ cuda:{chosen[v.gpu.uuid]}" if v.gpu.uuid in chosen else v.state,
                v.reason,
            ]
            for v in self.ranking
        ]

    _HEAD = ("physical", "name", "pick", "why")

    @property
    def simulated(self) -> bool:
        """True when the GPUs judged are described ones (``SimulatedGpuReader``), not this computer's."""
        return any(v.gpu.simulated for v in self.ranking)

    def table(self) -> Table:
        """Every GPU judged, titled with the ones picked (and SIMULATED for described GPUs)."""
        picked = ", ".join(g.label for g in self.chosen) or "none"
        label = "SIMULATED machine (described GPUs, not this computer's): " if self.simulated else ""
        return Table(self._HEAD, self.rows(), title=f"{label}Picked physical GPU(s) {picked}")


def choose_gpus(
    n: int,
    gpus: Sequence[GpuInfo],
    policy: Policy | None = None,
    *,
    taken: Mapping[str, str] | None = None,
    yours: Mapping[str, str] | None = None,
    allowed: Collection[int] | Usable | None = None,
    prefer: Collection[str] = (),
) -> Choice:
    """Pick the ``n`` best free GPUs of ``gpus`` (GPUs already read: ``gpulab.devices(...)``, or a reader, read here
    with its processes; pure otherwise), free by ``judge``'s rule. ``allowed`` limits the candidates to these physical
    indices; left out, inside a SLURM job or a Kubernetes pod, this machine's GPUs (``gpulab.devices()``, or NVML's
    readings) are limited to those the scheduler gave (``placement.allowed``), and where it gave fewer than ``n`` the
    error says how to ask it. Free GPUs whose UUID is in ``prefer`` come first (a restarted kernel gets its GPUs
    back when they are still free). GPUs in ``yours`` are held for this process already: the table says so, and
    they are not chosen again.

    A GPU in MIG mode offers its slices instead, each judged as a GPU and chosen by its ``MIG-…`` UUID; a slice is
    chosen only alone (``n=1``): CUDA lets a process use one MIG slice only.

    Raises ``NoFreeGpu`` (saying why each GPU was passed over) when fewer than ``n`` are free.
    """
    n = whole_number(n, "n", minimum=1, what="how many GPUs you want", example="choose_gpus(2, gpulab.devices())")
    this_machine = getattr(gpus, "this_machine", None)  # gpulab.devices() says; GPUs read otherwise, their driver
    gpus = gpu_list(gpus, "gpus", processes=True)
    policy = validated_policy(policy)
    taken, yours = _taken(taken), _taken(yours, "yours")
    usable = as_usable(allowed, gpus, this_machine)
    pool = [g for g in device_readings(gpus) if usable.allows(g.physical_index)]
    ranking = rank_gpus(pool, policy, taken=taken, yours=yours)
    if isinstance(prefer, (str, bytes)) or not isinstance(prefer, Collection):
        raise TypeError(
            f"prefer={shown(prefer)}: prefer takes the UUIDs of GPUs to pick first when they are free, "
            "e.g. prefer={'GPU-5a16…'}, or () for none."
        )
    free = sorted((v.gpu for v in ranking if v.free), key=lambda g: g.uuid not in prefer)  # stable: ranking kept
    slices = [g.label for g in free if g.mig_index is not None] if n > 1 else []
    free = [g for g in free if n == 1 or g.mig_index is None]
    shortfall = usable.shortfall(n)
    if shortfall:  # the scheduler gave too few: the free ones it gave are in the ranking, the way to get more here
        raise NoFreeGpu(shortfall, ranking, [f"  ({shortfall})"])
    if len(free) < n:
        if not gpus:
            raise NoFreeGpu(
                f"asked for {n} GPU(s), but this machine has no GPU that NVML can see. "
                "Run on the CPU (device='cpu'), or move to a machine with GPUs."
            )
        notes = []
        if slices:
            notes.append(f"  (MIG slice(s) {', '.join(slices)} are free, but {ONE_MIG_SLICE}: ask for 1)")
        if len({g.physical_index for g in pool}) < len(gpus) or usable.unseen:
            notes.append(usable.note())
        lines = "\n".join([_passed_over(v) for v in ranking] + notes)
        label = "SIMULATED machine (described GPUs, not this computer's): " if any(g.simulated for g in gpus) else ""
        raise NoFreeGpu(
            f"{label}asked for {n} free GPU(s) but only {len(free)} of {len(pool)} qualify:\n{lines}\n"
            "Wait and try again (wait_s=…), ask for fewer, or loosen the policy (e.g. "
            "Policy(max_memory_used_fraction=0.5)) if sharing a GPU is acceptable.",
            ranking,
            notes,
        )
    return Choice(tuple(free[:n]), ranking)


def _passed_over(v: Verdict) -> str:
    return f"  GPU {v.gpu.label}: {v.reason}"


def choose_up_to(
    n: int,
    gpus: Sequence[GpuInfo],
    policy: Policy | None = None,
    *,
    taken: Mapping[str, str] | None = None,
    yours: Mapping[str, str] | None = None,
    allowed: Collection[int] | Usable | None = None,
) -> tuple[tuple[int | str, ...], str]:
    """The picker's "Pick N": the GPUs that are yours already (``judge``), then the best free ones, ``n`` in all; or,
    where fewer are yours or free, all that are (a MIG slice only alone), with a sentence saying so and why each other
    GPU was passed over ("" when ``n`` were found). ``NoFreeGpu`` when none is yours or free. Each is named by its
    ``core.reservable.device_key``: its physical index, or ``"0/mig1"`` for a slice."""
    gpus = gpu_list(gpus, "gpus", processes=True)
    allowed = as_usable(allowed, gpus)
    pool = [g for g in gpus if allowed.allows(g.physical_index)]
    mine = [v.gpu for v in rank_gpus(device_readings(pool), policy, taken=taken, yours=yours) if v.yours][:n]
    picked: tuple[int | str, ...] = tuple(device_key(g) for g in mine)
    if len(mine) == n:
        return picked, ""
    try:
        others = [g for g in gpus if g.uuid not in {m.uuid for m in mine}]
        rest = choose_gpus(n - len(mine), others, policy, taken=taken, yours=yours, allowed=allowed)
        return picked + tuple(device_key(g) for g in rest.chosen), ""
    except NoFreeGpu as exc:
        free = [v.gpu for v in exc.ranking if v.free]
        free = [device_key(g) for g in [g for g in free if g.mig_index is None] or free[: 0 if picked else 1]]
        if not free and not picked:
            raise
        chosen = picked + tuple(free)
        reasons = "\n".join([_passed_over(v) for v in exc.ranking if not v.free and not v.yours] + list(exc.notes))
        verb = "is" if len(chosen) == 1 else "are"
        what = "yours or free" if picked else "free"
        return chosen, (
            f"Asked for {n} free GPU(s) but only {len(chosen)} {verb} {what}, so GPU {', '.join(map(str, chosen))} "
            f"{verb} ticked. Passed over:\n{reasons}"
        )
