"""Units, course settings, host readings (cgroup v1/v2) and the %%gpu cell magic."""
from __future__ import annotations

import math
import os

import pytest

from gpulab import config, host, units


@pytest.mark.parametrize("n, text", [(0, "0 B"), (1023, "1023 B"), (1536, "1.5 KiB"), (3 * 2**30, "3.0 GiB"),
                                     (-2048, "-2.0 KiB"), (math.nan, "N/A"), (None, "N/A")])
def test_format_bytes(n, text):
    assert units.format_bytes(n) == text


@pytest.mark.parametrize("s, text", [(0, "0 s"), (0.00042, "420 µs"), (1.5e-9, "1.50 ns"), (0.0123, "12.3 ms"),
                                     (2.0, "2.00 s"), (90, "1.5 min"), (7200, "2.0 h"), (-0.5, "-500 ms")])
def test_format_seconds(s, text):
    assert units.format_seconds(s) == text


def test_format_rate_and_percent():
    assert units.format_rate(12345.6) == "12.3 k samples/s"
    assert units.format_rate(12.0, "steps") == "12.0 steps/s"
    assert units.format_percent(0.371, is_fraction=True) == "37 %"


@pytest.mark.parametrize("raw, fast", [("1", True), ("yes", True), ("0", False), ("", False)])
def test_fast_mode(monkeypatch, raw, fast):
    monkeypatch.setenv("GPULAB_FAST", raw)
    assert config.fast_mode() is fast
    assert config.pick(full=100, fast=3) == (3 if fast else 100)


def test_fast_mode_rejects_nonsense(monkeypatch):
    monkeypatch.setenv("GPULAB_FAST", "quick")
    with pytest.raises(ValueError, match="GPULAB_FAST='quick' is not understood: use 1"):
        config.fast_mode()


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


def test_host_readings_are_real():
    info, sample = host.host_info(), host.host_sample()
    assert info.usable_cores >= 1 and info.memory_limit_bytes <= info.memory_total_bytes
    assert 0 < sample.process_rss_bytes and 0 < sample.memory_used_bytes <= sample.memory_limit_bytes


@pytest.fixture
def shell():
    from IPython.core.interactiveshell import InteractiveShell

    sh = InteractiveShell.instance()
    sh.run_line_magic("load_ext", "gpulab")
    yield sh
    InteractiveShell.clear_instance()


def test_gpu_magic_skips_with_the_reason_on_a_machine_without_gpus(shell, capsys):
    from gpulab.gpus import gpu_requirement

    if gpu_requirement(2) is None:
        pytest.skip("this machine has 2 GPUs: the skip path cannot be shown here")
    shell.run_cell("%%gpu 2\nran = True")
    assert "Skipped on this machine: this cell needs 2 CUDA GPU(s)" in capsys.readouterr().out
    assert "ran" not in shell.user_ns


def test_gpu_magic_rejects_a_bad_count(shell):
    result = shell.run_cell("%%gpu two\nx = 1")
    assert isinstance(result.error_in_exec, ValueError)
    assert "%%gpu takes the number of GPUs" in str(result.error_in_exec)


@pytest.mark.gpu
def test_gpu_magic_runs_the_cell_where_a_gpu_exists(shell):
    shell.run_cell("%%gpu\nimport torch\nx = torch.ones(1, device='cuda')")
    assert shell.user_ns["x"].is_cuda


def test_best_device_is_the_cpu_without_gpus():
    from gpulab.gpus import best_device, cuda_gpu_count

    if cuda_gpu_count():
        pytest.skip("this machine has a GPU")
    assert best_device().type == "cpu"


@pytest.mark.gpu
def test_counting_gpus_does_not_freeze_cuda_visible_devices():
    """is_available() would start the driver and freeze the variable; gpulab's count must not."""
    import subprocess
    import sys

    code = ("import os, gpulab, torch; n = gpulab.cuda_gpu_count(); d = gpulab.best_device();"
            "os.environ['CUDA_VISIBLE_DEVICES'] = ''; print(n, d.type, torch.cuda.is_available())")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    n, kind, available = out.stdout.split()
    assert int(n) >= 1 and kind == "cuda"
    assert available == "False", "the hidden-GPU setting was still honoured, so counting did not start CUDA"


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


@pytest.mark.parametrize("value, words", [("", "CUDA_VISIBLE_DEVICES='' lets this process see no GPU"),
                                          ("-1", "CUDA_VISIBLE_DEVICES='-1' lets this process see no GPU")])
def test_a_gpu_cell_skipped_because_the_variable_hides_every_gpu_says_so(monkeypatch, value, words):
    # on a GPU server a learner who set CUDA_VISIBLE_DEVICES= must not read "no usable CUDA GPU on this machine"
    from gpulab.gpus import gpu_requirement

    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", value)
    import torch

    if torch.version.cuda is None:
        pytest.skip("a CPU-only torch build is the reason on this machine")
    assert words in gpu_requirement(1)


def test_host_sample_describes_the_process_it_runs_in_even_after_a_fork():
    import multiprocessing

    host.host_sample()  # the handle is made in the parent first
    ctx = multiprocessing.get_context("fork")
    with ctx.Pool(1) as pool:
        child_pid = pool.apply(_pid_seen_by_host_module)
    assert child_pid != os.getpid()


def _pid_seen_by_host_module() -> int:
    host.host_sample()
    return host._this_process().pid
