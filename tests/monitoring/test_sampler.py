"""The sampling thread, through our NVML seam (SimulatedGpuReader) and a fake clock; the thread itself is real.

No assertion here depends on how fast this machine is: time is the fake clock's, and waits for the thread are bounded
polls that only decide when to look.
"""

from __future__ import annotations

import math
import sys
import textwrap
import threading
import time

import numpy as np
import psutil
import pytest

from gpulab.machine.host import host_info, host_sample
from gpulab.machine.simulated import SimulatedGpuReader
from gpulab.monitoring.sampler import SAMPLER_THREAD_NAME, Progress, Sampler
from tests import process_group
from tests.seams import FakeClock, requires_gpus, set_usage

MiB = 1024**2


def wait_for(condition, limit_s: float = 30.0) -> None:
    """Poll until ``condition()`` holds (a bounded wait for a real thread, not a timing assertion)."""
    end = time.monotonic() + limit_s
    while not condition():
        if time.monotonic() > end:
            raise AssertionError("the sampler thread did not get there")
        time.sleep(0.005)


def sampler_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == SAMPLER_THREAD_NAME]


def test_one_tick_reads_every_gpu_and_the_host():
    reader = SimulatedGpuReader("kaggle-2xT4")
    s = Sampler(reader=reader, clock=FakeClock())
    set_usage(reader, 1, memory_used_bytes=5000 * MiB, utilization_gpu_percent=88)
    s.tick()
    row = dict(zip(s.history.columns, s.history.snapshot()[1][-1]))
    assert s.gpus == [0, 1]
    assert row["gpu1_memory_used_bytes"] == 5000 * MiB and row["gpu1_utilization_percent"] == 88
    assert row["gpu0_memory_total_bytes"] == 15360 * MiB
    assert row["gpu0_processes"] == 0  # the process list is read on the first tick
    assert row["process_rss_bytes"] == pytest.approx(psutil.Process().memory_info().rss, rel=0.1)  # this process
    assert row["host_memory_limit_bytes"] == host_sample().memory_limit_bytes > row["host_memory_used_bytes"] > 0
    assert s.missing == []


def test_usage_changes_show_up_in_the_next_reading():
    clock, reader = FakeClock(), SimulatedGpuReader("colab-T4")
    s = Sampler(reader=reader, clock=clock)
    for used in (100, 900, 300):
        set_usage(reader, 0, memory_used_bytes=used * MiB)
        s.tick()
        clock.advance(0.2)
    assert (s.history.column("gpu0_memory_used_bytes") / MiB).tolist() == [100, 900, 300]
    assert s.history.peak("gpu0_memory_used_bytes") == 900 * MiB
    assert np.allclose(s.history.times(), [0.0, 0.2, 0.4])


def test_a_field_the_gpu_refuses_is_nan_and_said_once():
    clock = FakeClock()
    s = Sampler(reader=SimulatedGpuReader("two-gpus-mig"), clock=clock)  # GPU 0 is in MIG mode: no utilisation
    for _ in range(3):
        s.tick()
        clock.advance(0.2)
    assert np.isnan(s.history.column("gpu0_utilization_percent")).all()
    assert s.history.column("gpu1_utilization_percent").tolist() == [37, 37, 37]
    assert s.missing == ["GPU 0 utilisation: N/A (not supported on this GPU)"]


def test_speed_comes_from_the_work_reported_between_readings():
    clock = FakeClock()
    progress = Progress(clock)
    s = Sampler(reader=SimulatedGpuReader(None), progress=progress, clock=clock)
    s.tick()
    for _ in range(4):  # four steps of 32 samples, 50 ms each, within one 200 ms interval
        clock.advance(0.05)
        progress.step(32)
    s.tick()
    row = dict(zip(s.history.columns, s.history.snapshot()[1][-1]))
    assert row["samples_total"] == 128 and row["steps_total"] == 4
    assert row["samples_per_s"] == pytest.approx(640.0)
    assert row["step_time_s"] == pytest.approx(0.05)
    s.tick()  # no work since: zero samples/s, and no step time rather than a made-up one
    row = dict(zip(s.history.columns, s.history.snapshot()[1][-1]))
    assert math.isnan(row["samples_per_s"]) or row["samples_per_s"] == 0
    assert math.isnan(row["step_time_s"])


def test_the_process_list_is_read_only_every_process_interval():
    class Counting(SimulatedGpuReader):
        infos = 0

        def info(self, i, *, processes=True):
            Counting.infos += 1
            return super().info(i, processes=processes)

    clock = FakeClock()
    s = Sampler(reader=Counting("colab-T4"), clock=clock, interval_s=0.2)
    for _ in range(20):  # 4 s of readings at 5 Hz, a process list every 2 s
        s.tick()
        clock.advance(0.2)
    assert Counting.infos == 2
    assert s.history.column("gpu0_processes").tolist() == [0] * 20  # carried between process readings


def test_no_nvml_means_host_and_speed_only_and_says_why():
    reader = SimulatedGpuReader(None, error="no NVIDIA driver library (libnvidia-ml.so) was found")
    s = Sampler(reader=reader, clock=FakeClock())
    s.tick()
    assert s.gpus == [] and not any(c.startswith("gpu") for c in s.history.columns)
    assert s.missing == ["GPU panels: N/A (no NVIDIA driver library (libnvidia-ml.so) was found)"]
    assert s.history.last("host_memory_used_bytes") > 0


def test_a_gpu_that_fails_mid_run_leaves_a_gap_and_a_note():
    class Failing(SimulatedGpuReader):
        def sample(self, i):
            if self.fail:
                raise RuntimeError("GPU is lost")
            return super().sample(i)

    clock, reader = FakeClock(), Failing("colab-T4")
    reader.fail = False
    s = Sampler(reader=reader, clock=clock)
    for fail in (False, True, False):
        reader.fail = fail
        s.tick()
        clock.advance(0.2)
    used = s.history.column("gpu0_memory_used_bytes")
    assert not np.isnan(used[0]) and np.isnan(used[1]) and not np.isnan(used[2])
    assert s.missing == ["GPU 0: could not be read (RuntimeError: GPU is lost); its panel has gaps"]
    assert s.history.appended == 3


def test_the_thread_samples_on_fixed_deadlines():
    clock = FakeClock()
    s = Sampler(reader=SimulatedGpuReader("colab-T4"), clock=clock, sleep=clock.sleep, interval_s=0.2)
    s.start()
    wait_for(lambda: s.history.appended >= 25)
    s.stop()
    t = s.history.times()
    assert np.allclose(np.diff(t), 0.2)  # fake time: each wake-up exactly on its deadline
    assert s.missed_deadlines == 0
    assert not s.running and sampler_threads() == []


def test_a_late_sample_skips_missed_deadlines_instead_of_bursting():
    clock = FakeClock()
    sleeps: list[float] = []

    class Slow(SimulatedGpuReader):
        def sample(self, i):
            clock.advance(0.5)  # a slow driver: each reading takes 0.5 s of (fake) time
            return super().sample(i)

    def sleep(seconds: float) -> None:
        sleeps.append(seconds)
        clock.advance(seconds)

    s = Sampler(reader=Slow("colab-T4"), clock=clock, sleep=sleep, interval_s=0.2)
    s.start()
    wait_for(lambda: s.history.appended >= 10)
    s.stop()
    t = s.history.times()
    assert np.allclose(np.diff(t), 0.6)  # deadlines at 0.2 and 0.4 are skipped, the one at 0.6 is kept
    assert all(x == pytest.approx(0.1) for x in sleeps)
    assert s.missed_deadlines == 2 * s.history.appended


def test_stop_wakes_a_sleeping_thread_at_once():
    s = Sampler(reader=SimulatedGpuReader(None), interval_s=3600.0)  # real clock, an hour between readings
    s.start()
    wait_for(lambda: s.history.appended >= 1)
    s.stop(timeout=30.0)
    assert not s.running and sampler_threads() == []


def test_mistakes_are_explained():
    with pytest.raises(ValueError, match="cannot watch GPU\\(s\\) \\[5\\]: NVML sees 2 GPU\\(s\\)"):
        Sampler(reader=SimulatedGpuReader("kaggle-2xT4"), gpus=[5])
    s = Sampler(reader=SimulatedGpuReader(None))
    s.start()
    try:
        with pytest.raises(RuntimeError, match="already been started"):
            s.start()
    finally:
        s.stop()


def test_watching_a_subset_of_gpus():
    s = Sampler(reader=SimulatedGpuReader("workshop-8"), gpus=[1, 6], clock=FakeClock())
    s.tick()
    assert s.gpus == [1, 6]
    assert [c for c in s.history.columns if c.endswith("_memory_used_bytes") and c.startswith("gpu")] == [
        "gpu1_memory_used_bytes",
        "gpu6_memory_used_bytes",
    ]
    assert s.history.last("gpu6_memory_used_bytes") == 2050 * MiB


def _run(code: str) -> str:
    out = process_group.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=240)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def test_the_sampler_never_imports_torch_itself():
    assert (
        _run("""
        import sys
        from gpulab.machine.simulated import SimulatedGpuReader
        from gpulab.monitoring.sampler import Sampler

        s = Sampler(reader=SimulatedGpuReader("colab-T4"), interval_s=0.05)
        s.start(); import time; time.sleep(0.3); s.stop()
        print(s.cuda_devices, "torch" in sys.modules)
    """)
        == "0 False"
    )


def test_this_process_cpu_use_is_read_next_to_the_machine_s():
    s = Sampler(reader=SimulatedGpuReader(None), clock=FakeClock())
    s.tick()
    me = psutil.Process()
    start = sum(me.cpu_times()[:2])
    while sum(me.cpu_times()[:2]) - start < 0.1:  # burn CPU until the kernel has counted some (10 ms ticks)
        sum(range(10_000))
    s.tick()
    share = s.history.column("process_cpu_percent")
    assert 0 < share[-1] <= 100
    # the machine was at least as busy as this process over the same interval (shares of different core counts)
    host_busy_cores = s.history.last("host_cpu_percent") * (psutil.cpu_count() or 1)
    assert host_busy_cores >= 0.5 * share[-1] * host_info().usable_cores, (host_busy_cores, share[-1])


@pytest.mark.gpu
@requires_gpus(1)
def test_torch_memory_is_read_per_cuda_device_once_cuda_is_initialised():
    assert (
        _run("""
        import time, torch
        from gpulab.machine.simulated import SimulatedGpuReader
        from gpulab.monitoring.sampler import Sampler

        x = torch.ones(64 * 2**20, dtype=torch.uint8, device="cuda:0")
        s = Sampler(reader=SimulatedGpuReader(None), interval_s=0.05)
        s.start(); time.sleep(0.3); s.stop()
        allocated, reserved = s.history.last("cuda0_allocated_bytes"), s.history.last("cuda0_reserved_bytes")
        print(allocated >= 64 * 2**20, reserved >= allocated)
    """)
        == "True True"
    )


@pytest.mark.multigpu
@requires_gpus(2)
def test_reading_torch_memory_creates_no_context_on_the_other_gpu():
    assert (
        _run("""
        import time, torch
        from gpulab.machine.simulated import SimulatedGpuReader
        from gpulab.monitoring.sampler import Sampler

        x = torch.ones(1, device="cuda:0")
        s = Sampler(reader=SimulatedGpuReader(None), interval_s=0.05)
        s.start(); time.sleep(0.3); s.stop()
        print(torch._C._cuda_hasPrimaryContext(1), s.history.last("cuda1_allocated_bytes"))
    """)
        == "False 0.0"
    )
