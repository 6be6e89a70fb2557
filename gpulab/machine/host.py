"""The host side of the machine: CPU cores and RAM, cgroup-aware (a probe: reads /proc, /sys and psutil).

In a container (JupyterHub, Kaggle, Colab, Docker) the RAM you may use is the cgroup's limit, not what the host has:
``free -h`` and ``psutil.virtual_memory()`` show the host's. Taught in ``notebooks/00_setup.ipynb``.
"""

from __future__ import annotations

import math
import os
import platform
from dataclasses import dataclass
from pathlib import Path

import psutil

__all__ = [
    "HostInfo",
    "HostSample",
    "host_info",
    "host_sample",
    "cgroup_memory",
    "cgroup_cpu_limit",
    "shared_memory_bytes",
]

_CGROUP_ROOT = Path("/sys/fs/cgroup")
_NO_LIMIT = 1 << 60  # cgroup v1 writes a huge number for "unlimited"


@dataclass(frozen=True)
class HostInfo:
    """The CPU side: cores this process may use and the RAM it may use."""

    cpu_model: str
    logical_cores: int
    usable_cores: int  # os.sched_getaffinity (taskset, cpuset), capped by a cgroup CPU quota (docker --cpus)
    memory_total_bytes: int  # the host's RAM
    memory_available_bytes: int
    cgroup_memory_limit_bytes: int | None  # None: no limit set
    cgroup_memory_used_bytes: int | None

    @property
    def memory_limit_bytes(self) -> int:
        """What this process can really use: the cgroup limit if lower than the host's RAM."""
        if self.cgroup_memory_limit_bytes is not None:
            return min(self.cgroup_memory_limit_bytes, self.memory_total_bytes)
        return self.memory_total_bytes

    @property
    def memory_free_bytes(self) -> int:
        """What a new allocation can take now: available RAM, or what is left under the cgroup limit if less."""
        if self.cgroup_memory_limit_bytes is not None and self.cgroup_memory_used_bytes is not None:
            left = self.cgroup_memory_limit_bytes - self.cgroup_memory_used_bytes
            return max(0, min(left, self.memory_available_bytes))
        return self.memory_available_bytes


@dataclass(frozen=True)
class HostSample:
    """What a monitor polls: RAM in use (cgroup's if limited) and CPU busy share across usable cores."""

    memory_used_bytes: int
    memory_limit_bytes: int
    cpu_percent: float  # 0–100, across all usable cores
    process_rss_bytes: int  # this Python process


def cgroup_memory(root: Path = _CGROUP_ROOT, self_cgroup: str | None = None) -> tuple[int | None, int | None]:
    """``(limit_bytes, used_bytes)`` of this process's memory cgroup (v2 or v1); ``None`` where no limit is set.

    The cgroup is the one ``/proc/self/cgroup`` names (``self_cgroup``: that file's text), not the mount's root: a
    JupyterHub spawner or a Slurm job sets the limit on the process's own cgroup or on a parent of it. The tightest
    limit on the way up counts. Where the named cgroup is not under ``root`` (a container that sees its own cgroup
    as the root), the root's files count.
    """
    v2_path, v1_path = _own_cgroup(self_cgroup, "memory")
    for base, path, max_name, cur_name in (
        (root, v2_path, "memory.max", "memory.current"),
        (root / "memory", v1_path, "memory.limit_in_bytes", "memory.usage_in_bytes"),
    ):
        found, limits, used = False, [], None
        for d in _up(base, path):
            raw = _read(d / max_name)
            if raw is None:
                continue
            if not found:
                cur = _read(d / cur_name)
                found, used = True, int(cur) if cur and cur.isdigit() else None
            if raw.isdigit() and int(raw) < _NO_LIMIT:
                limits.append(int(raw))
        if found:
            return (min(limits) if limits else None), used
    return None, None


def cgroup_cpu_limit(root: Path = _CGROUP_ROOT, self_cgroup: str | None = None) -> float | None:
    """CPUs' worth of time this process's cgroup may use (quota / period: ``cpu.max``, or v1's ``cpu.cfs_*``), the
    tightest on the way up to the root; ``None`` where no quota is set. ``docker --cpus`` and Kubernetes CPU limits
    set this, not the affinity mask, so ``os.sched_getaffinity`` alone still shows every host core."""
    v2_path, v1_path = _own_cgroup(self_cgroup, "cpu")
    for base, path, v2 in ((root, v2_path, True), (root / "cpu", v1_path, False)):
        found, limits = False, []
        for d in _up(base, path):
            if v2:
                raw = _read(d / "cpu.max")
                quota, period = (raw.split() + ["100000"])[:2] if raw else (None, None)
            else:
                quota, period = _read(d / "cpu.cfs_quota_us"), _read(d / "cpu.cfs_period_us")
            if quota is None:
                continue
            found = True
            if quota.isdigit() and period and period.isdigit() and int(period) > 0:
                limits.append(int(quota) / int(period))  # "max" (v2) and "-1" (v1) mean no quota
        if found:
            return min(limits) if limits else None
    return None


def _own_cgroup(self_cgroup: str | None, controller: str) -> tuple[str, str]:
    """This process's cgroup path in the v2 hierarchy and in the v1 hierarchy of ``controller``."""
    text = _read(Path("/proc/self/cgroup")) if self_cgroup is None else self_cgroup
    v2_path = v1_path = "/"
    for line in (text or "").splitlines():
        hierarchy, controllers, path = (line.split(":", 2) + ["", ""])[:3]
        if hierarchy == "0" and not controllers:
            v2_path = path
        elif controller in controllers.split(","):
            v1_path = path
    return v2_path, v1_path


def _up(base: Path, path: str) -> list[Path]:
    """The cgroup directory ``path`` under ``base``, then each parent up to ``base`` itself."""
    parts = [p for p in path.strip().split("/") if p]
    return [base.joinpath(*parts[:depth]) for depth in range(len(parts), -1, -1)]


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None


def shared_memory_bytes(path: Path = Path("/dev/shm")) -> int | None:
    """Size of the shared-memory filesystem that DataLoader workers hand batches through (``df -h /dev/shm``);
    ``None`` where there is none (macOS, Windows). A container gets 64 MiB unless started with ``--shm-size``."""
    import shutil

    try:
        return shutil.disk_usage(path).total if path.is_dir() else None
    except OSError:
        return None


def _cpu_model() -> str:
    for line in (_read(Path("/proc/cpuinfo")) or "").splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine()


def _usable_cores() -> int:
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # macOS, Windows
        return os.cpu_count() or 1
    quota = cgroup_cpu_limit()
    return cores if quota is None else max(1, min(cores, math.ceil(quota)))


def host_info() -> HostInfo:
    """This computer's CPU model, cores (all, and those this process may use) and RAM, with a container's memory
    limit."""
    vm = psutil.virtual_memory()
    limit, used = cgroup_memory()
    return HostInfo(_cpu_model(), os.cpu_count() or 1, _usable_cores(), vm.total, vm.available, limit, used)


_process: psutil.Process | None = None


def _this_process() -> psutil.Process:
    """psutil's handle on this process, made again after a fork (a handle made in the parent describes the parent)."""
    global _process
    if _process is None or _process.pid != os.getpid():
        _process = psutil.Process()
    return _process


def host_sample() -> HostSample:
    """A cheap reading (well under a millisecond) for the live monitor.

    CPU percent is measured since the previous call (psutil's convention), so the first call returns 0.
    """
    vm = psutil.virtual_memory()
    limit, used = cgroup_memory()
    if limit is not None and used is not None:
        mem_used, mem_limit = used, min(limit, vm.total)
    else:
        mem_used, mem_limit = vm.total - vm.available, vm.total
    return HostSample(mem_used, mem_limit, psutil.cpu_percent(interval=None), _this_process().memory_info().rss)
