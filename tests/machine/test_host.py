"""Host readings: cgroup v1/v2 memory and CPU limits, and the process handle after a fork."""

from __future__ import annotations

import math
import mmap
import os
import sys

import pytest

from gpulab.machine import host
from tests.process_group import run


def test_cgroup_v2_limit(tmp_path):
    (tmp_path / "memory.max").write_text("4294967296\n")
    (tmp_path / "memory.current").write_text("1073741824\n")
    assert host.cgroup_memory(tmp_path) == (4 * 2**30, 2**30)


def test_cgroup_v2_unlimited(tmp_path):
    (tmp_path / "memory.max").write_text("max\n")
    (tmp_path / "memory.current").write_text("123\n")
    assert host.cgroup_memory(tmp_path) == (None, 123)


def test_cgroup_v1_unlimited_and_absent(tmp_path):
    (tmp_path / "memory").mkdir()
    (tmp_path / "memory" / "memory.limit_in_bytes").write_text(str(9223372036854771712))
    (tmp_path / "memory" / "memory.usage_in_bytes").write_text("77")
    assert host.cgroup_memory(tmp_path) == (None, 77)
    assert host.cgroup_memory(tmp_path / "nowhere") == (None, None)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="compared with /proc and sched_getaffinity (Linux)")
def test_host_readings_are_this_machine_s():
    info = host.host_info()
    mem_total_kib = int(next(line for line in open("/proc/meminfo") if line.startswith("MemTotal:")).split()[1])
    assert info.memory_total_bytes == mem_total_kib * 1024
    quota = host.cgroup_cpu_limit()
    cores = len(os.sched_getaffinity(0))
    assert info.usable_cores == (cores if quota is None else max(1, min(cores, math.ceil(quota))))
    assert info.memory_limit_bytes == min(
        info.cgroup_memory_limit_bytes or info.memory_total_bytes, info.memory_total_bytes
    )


def test_the_process_memory_reading_follows_an_allocation():
    before = host.host_sample().process_rss_bytes
    block = mmap.mmap(-1, 64 * 2**20)  # pages of its own: malloc could reuse heap that is resident already
    block.write(b"\1" * len(block))  # written, so every page is resident
    grown = host.host_sample().process_rss_bytes
    block.close()
    assert grown - before >= 60 * 2**20, (before, grown)
    sample = host.host_sample()
    assert 0 < sample.memory_used_bytes <= sample.memory_limit_bytes


def test_cgroup_v2_limit_of_this_process_cgroup_not_the_root(tmp_path):
    # JupyterHub's systemd spawner or a Slurm job: the limit sits on the process's own cgroup (or a parent of it),
    # named in /proc/self/cgroup; the mount's root has none.
    job = tmp_path / "system.slice" / "jupyter-alice.service"
    job.mkdir(parents=True)
    (job / "memory.max").write_text("max\n")  # the innermost cgroup may be unlimited ...
    (job / "memory.current").write_text("5000\n")
    (tmp_path / "system.slice" / "memory.max").write_text("8589934592\n")  # ... while a parent sets the limit
    assert host.cgroup_memory(tmp_path, self_cgroup="0::/system.slice/jupyter-alice.service\n") == (8 * 2**30, 5000)


def test_cgroup_v1_limit_of_this_process_cgroup(tmp_path):
    job = tmp_path / "memory" / "slurm" / "uid_1000" / "job_42"
    job.mkdir(parents=True)
    (tmp_path / "memory" / "memory.limit_in_bytes").write_text(str(9223372036854771712))
    (tmp_path / "memory" / "memory.usage_in_bytes").write_text("999999")
    (job / "memory.limit_in_bytes").write_text(str(16 * 2**30))
    (job / "memory.usage_in_bytes").write_text("77")
    lines = "12:cpu,cpuacct:/slurm/uid_1000/job_42\n4:memory:/slurm/uid_1000/job_42\n0::/\n"
    assert host.cgroup_memory(tmp_path, self_cgroup=lines) == (16 * 2**30, 77)
    # a container's own cgroup mounted as the root (no cgroup namespace): the named path is absent, the root counts
    assert host.cgroup_memory(tmp_path, self_cgroup="4:memory:/docker/abc\n") == (None, 999999)


def test_cgroup_cpu_quota_v2_and_v1(tmp_path):
    # docker --cpus=2.5 / a Kubernetes CPU limit: a quota on the process's cgroup, while the affinity mask shows
    # every host core
    pod = tmp_path / "kubepods" / "pod1"
    pod.mkdir(parents=True)
    (pod / "cpu.max").write_text("max 100000\n")
    (tmp_path / "kubepods" / "cpu.max").write_text("250000 100000\n")
    assert host.cgroup_cpu_limit(tmp_path, self_cgroup="0::/kubepods/pod1\n") == 2.5
    (tmp_path / "kubepods" / "cpu.max").write_text("max 100000\n")
    assert host.cgroup_cpu_limit(tmp_path, self_cgroup="0::/kubepods/pod1\n") is None
    v1 = tmp_path / "v1"
    (v1 / "cpu" / "docker" / "abc").mkdir(parents=True)
    (v1 / "cpu" / "cpu.cfs_quota_us").write_text("-1\n")
    (v1 / "cpu" / "cpu.cfs_period_us").write_text("100000\n")
    (v1 / "cpu" / "docker" / "abc" / "cpu.cfs_quota_us").write_text("50000\n")
    (v1 / "cpu" / "docker" / "abc" / "cpu.cfs_period_us").write_text("100000\n")
    assert host.cgroup_cpu_limit(v1, self_cgroup="3:cpu,cpuacct:/docker/abc\n") == 0.5
    assert host.cgroup_cpu_limit(v1, self_cgroup="3:cpu,cpuacct:/elsewhere\n") is None
    quota = host.cgroup_cpu_limit()  # and this machine's real one caps the usable cores
    assert quota is None or host.host_info().usable_cores <= max(1, math.ceil(quota))


_AFTER_A_FORK = """
import os, sys
from gpulab.machine import host
host.host_sample()  # the handle is made in the parent first
parent = host._this_process().pid
r, w = os.pipe()
child = os.fork()
if child == 0:
    host.host_sample()
    os.write(w, str(host._this_process().pid).encode())
    os._exit(0)
os.close(w)
seen = int(os.read(r, 32))
os.waitpid(child, 0)
print(parent, child, seen)
"""


def test_host_sample_describes_the_process_it_runs_in_even_after_a_fork():
    """In a fresh interpreter whose only thread is the main one: forking the test process itself (a pytest-xdist
    worker with execnet's threads and torch's) can copy a lock another thread holds, and the child then hangs
    (seen once under make test-compat, a 300 s timeout in Pool.terminate)."""
    done = run([sys.executable, "-c", _AFTER_A_FORK], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    parent, child, seen = map(int, done.stdout.split())
    assert seen == child != parent
