"""The sampling thread: GPUs (through a ``GpuReader``), the host, torch's CUDA memory and the work reported done.

It wakes on fixed deadlines (``start + k × interval``; a late sample skips the deadlines it missed instead of bursting)
and appends one row per wake-up to a ``History``. Reading is cheap and never changes the process: NVML memory and
utilisation every sample (5 Hz by default: the driver averages utilisation over 1/6 s to 1 s, so faster adds nothing),
the GPU process list only every ``PROCESS_INTERVAL_S`` (it is slow and takes a driver lock), and torch's allocator
figures only once CUDA is initialised in this process — the sampler never imports torch and never initialises CUDA.
What cannot be read becomes NaN in the row and one sentence in ``missing``, and the thread carries on.
Taught in ``notebooks/05_live_monitor.ipynb``.
"""

from __future__ import annotations

import math
import sys
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import psutil

from ..core.arguments import is_whole_number
from ..core.readings import Unavailable
from ..machine.host import host_info, host_sample
from ..machine.nvml import GpuReader, default_reader
from .ring_buffer import History

__all__ = ["Progress", "Sampler", "SAMPLER_THREAD_NAME"]

SAMPLER_THREAD_NAME = "gpulab-monitor-sampler"
NAN = float("nan")
PROCESS_INTERVAL_S = 2.0  # between reads of the GPU process list: slow, and it takes a driver lock
HOST_COLUMNS = (
    "host_memory_used_bytes",
    "host_memory_limit_bytes",
    "host_cpu_percent",
    "process_rss_bytes",
    "process_cpu_percent",
)
_SPEED_AT = len(HOST_COLUMNS)
SPEED_COLUMNS = ("samples_total", "steps_total", "samples_per_s", "step_time_s")
GPU_FIELDS = ("memory_used_bytes", "memory_total_bytes", "utilization_percent", "processes")
CUDA_FIELDS = ("allocated_bytes", "reserved_bytes")


class Progress:
    """Work done, written by the training loop (``step``) and read by the sampler thread.

    The state is one tuple replaced whole, so the reader never sees samples from one step and steps from another.
    """

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self.state: tuple[int, int, float] = (0, 0, 0.0)  # samples, steps, summed step time (s)
        self._last_t = clock()
        self.first_step_t: float | None = None
        self.last_step_t: float | None = None

    def restart_step_clock(self) -> None:
        """The next step's time counts from now (a wrapped loop starts: earlier set-up is not a step)."""
        self._last_t = self._clock()

    def step(self, samples: int = 1, steps: int = 1) -> None:
        """Count ``samples`` and ``steps`` done since the last call, and the time they took."""
        now = self._clock()
        samples_done, steps_done, step_time = self.state
        self.state = (samples_done + samples, steps_done + steps, step_time + (now - self._last_t))
        self._last_t = now
        if self.first_step_t is None:
            self.first_step_t = now
        self.last_step_t = now


def _number(value: Any) -> float:
    return NAN if value is None or isinstance(value, Unavailable) else float(value)


class Sampler:
    """Reads everything once per ``interval_s`` on a daemon thread named ``gpulab-monitor-sampler``.

    ``clock`` and ``sleep`` are injectable (tests pass ``tests.seams.FakeClock``); by default the thread sleeps on
    an event, so ``stop()`` wakes it at once. ``gpus`` picks physical indices (nvidia-smi numbering); default all.
    ``interval_s`` is checked where a monitor is made (``options.validated_options``), not again here.
    """

    def __init__(
        self,
        *,
        reader: GpuReader | None = None,
        progress: Progress | None = None,
        gpus: Sequence[int] | None = None,
        interval_s: float = 0.2,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Any] | None = None,
    ) -> None:
        self.reader = reader if reader is not None else default_reader()
        self.progress = progress if progress is not None else Progress(clock)
        self.interval_s = float(interval_s)
        self._clock = clock
        self._stop = threading.Event()
        self._sleep = sleep if sleep is not None else self._stop.wait
        self._thread: threading.Thread | None = None
        self.missing: list[str] = []  # what could not be read, one sentence each, in order of discovery
        self.missed_deadlines = 0
        self.busy_s = 0.0  # CPU time spent reading (thread_time): the cost of watching
        self.gpus = self._gpus_to_watch(gpus)
        self.cuda_devices = self._cuda_device_count()
        columns = list(HOST_COLUMNS) + list(SPEED_COLUMNS)
        columns += [f"gpu{k}_{f}" for k in self.gpus for f in GPU_FIELDS]
        columns += [f"cuda{j}_{f}" for j in range(self.cuda_devices) for f in CUDA_FIELDS]
        self.history = History(columns)
        self._row = np.full(len(columns), NAN)
        self._gpu_at = self.history.index(f"gpu{self.gpus[0]}_{GPU_FIELDS[0]}") if self.gpus else len(columns)
        self._cuda_at = self.history.index(f"cuda0_{CUDA_FIELDS[0]}") if self.cuda_devices else len(columns)
        self.t0 = clock()
        self._previous: tuple[float, tuple[int, int, float]] | None = None
        self._next_process_t = self.t0
        self._process_counts = [NAN] * len(self.gpus)
        self._process = psutil.Process()
        self._cores = host_info().usable_cores  # affinity capped by a cgroup CPU quota (docker --cpus, Kubernetes)
        self._cpu_before = self._cpu_clock()

    # -- what can be read ---------------------------------------------------------------------------------------------
    def _gpus_to_watch(self, gpus: Sequence[int] | None) -> list[int]:
        error = self.reader.error
        count = self.reader.count()
        if error:
            self._note(f"GPU panels: N/A ({error})")
        elif count == 0:
            self._note("GPU panels: N/A (NVML sees no GPU on this machine): host and speed only")
        if gpus is None:
            return list(range(count))
        chosen = list(gpus)
        bad = [k for k in chosen if not is_whole_number(k) or not 0 <= k < count]
        if bad:
            raise ValueError(
                f"cannot watch GPU(s) {bad}: NVML sees {count} GPU(s)"
                + (f" ({error})" if error else "")
                + ". gpus= takes physical indices (nvidia-smi's numbers), or leave it out to watch all."
            )
        return chosen

    @staticmethod
    def _cuda_device_count() -> int:
        torch = sys.modules.get("torch")  # never import torch here: a script without it must not pay for it
        if torch is None:
            return 0
        return int(torch.cuda.device_count())  # does not create a CUDA context

    def _note(self, sentence: str) -> None:
        if sentence not in self.missing:
            self.missing.append(sentence)

    # -- one sample ---------------------------------------------------------------------------------------------------
    def tick(self, *, rate: bool = True) -> None:
        """Take one sample now and append it to ``history`` (the thread calls this; tests may too).

        ``rate=False`` (the extra reading when the monitor stops, a fraction of an interval after the last) records
        the counts but no samples/s or step time, which would be noise over so short a span.
        """
        started = time.thread_time()  # CPU time of this thread: waiting for the GIL is not cost
        now = self._clock()
        row = self._row
        row.fill(NAN)
        try:
            h = host_sample()
            row[0:4] = (h.memory_used_bytes, h.memory_limit_bytes, h.cpu_percent, h.process_rss_bytes)
            if self.history.appended == 0:
                row[2] = NAN  # psutil measures CPU since its previous call: the first answer is a meaningless 0
            row[4] = self._process_cpu_percent()
        except Exception as exc:  # psutil refusing (a locked-down container): the rest still works
            self._note(f"host panel: N/A ({type(exc).__name__}: {exc})")
        self._read_progress(now, row, rate)
        if self.gpus:
            self._read_gpus(now, row)
        if self.cuda_devices:
            self._read_torch(row)
        self.history.append(now - self.t0, row)
        self.busy_s += time.thread_time() - started

    def _cpu_clock(self) -> tuple[float, float]:
        """(real seconds, this process's CPU seconds) now: the two ends of a CPU-share measurement."""
        times = self._process.cpu_times()
        return time.perf_counter(), times.user + times.system

    def _process_cpu_percent(self) -> float:
        """This process's CPU use since the last reading, as a share of the usable cores (comparable with the host's).

        Real time, not the injected clock: it is a ratio of two real durations.
        """
        wall, cpu = self._cpu_clock()
        before_wall, before_cpu = self._cpu_before
        self._cpu_before = (wall, cpu)
        if wall <= before_wall:
            return NAN
        return min(100.0 * (cpu - before_cpu) / (wall - before_wall) / self._cores, 100.0)

    def _read_progress(self, now: float, row: np.ndarray, rate: bool) -> None:
        state = self.progress.state
        at = _SPEED_AT
        row[at], row[at + 1] = state[0], state[1]
        if not rate:
            return
        if self._previous is not None:
            before_t, before = self._previous
            if now > before_t:
                row[at + 2] = (state[0] - before[0]) / (now - before_t)
            if state[1] > before[1]:
                row[at + 3] = (state[2] - before[2]) / (state[1] - before[1])
        self._previous = (now, state)

    def _read_gpus(self, now: float, row: np.ndarray) -> None:
        slow = now >= self._next_process_t
        if slow:
            self._next_process_t = now + PROCESS_INTERVAL_S
        for n, k in enumerate(self.gpus):
            at = self._gpu_at + n * len(GPU_FIELDS)
            try:
                s = self.reader.sample(k)
                if slow:
                    procs = self.reader.info(k, processes=True).processes
                    if isinstance(procs, Unavailable):
                        self._note(f"GPU {k} process list: {procs}")
                    self._process_counts[n] = _number(None if isinstance(procs, Unavailable) else len(procs))
            except Exception as exc:  # a GPU lost mid-run, a driver hiccup: keep sampling the rest
                self._note(f"GPU {k}: could not be read ({type(exc).__name__}: {exc}); its panel has gaps")
                continue
            for field, value in (("memory used", s.memory_used_bytes), ("utilisation", s.utilization_gpu_percent)):
                if isinstance(value, Unavailable):
                    self._note(f"GPU {k} {field}: {value}")
            row[at : at + 4] = (
                _number(s.memory_used_bytes),
                _number(s.memory_total_bytes),
                _number(s.utilization_gpu_percent),
                self._process_counts[n],
            )

    def _read_torch(self, row: np.ndarray) -> None:
        torch = sys.modules.get("torch")
        if torch is None or not torch.cuda.is_initialized():  # never initialise CUDA to read it
            return
        for j in range(self.cuda_devices):
            at = self._cuda_at + j * len(CUDA_FIELDS)
            row[at] = torch.cuda.memory_allocated(j)
            row[at + 1] = torch.cuda.memory_reserved(j)

    # -- the thread ---------------------------------------------------------------------------------------------------
    @property
    def running(self) -> bool:
        """Whether the sampling thread is alive."""
        return self._thread is not None and self._thread.is_alive()

    def start(self) -> None:
        """Start the sampling thread; time counts from now if nothing was sampled yet. A sampler records one run."""
        if self._thread is not None:
            raise RuntimeError("this sampler has already been started; a Sampler records one run, make a new one.")
        if self.history.appended == 0:  # made in one cell, started in a later one: time counts from now
            self.t0 = self._next_process_t = self._clock()
            self._cpu_before = self._cpu_clock()
        self._thread = threading.Thread(target=self._run, name=SAMPLER_THREAD_NAME, daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 10.0) -> None:
        """Stop the thread and wait for it (the sample it is taking finishes first)."""
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout)
            if self._thread.is_alive():
                raise RuntimeError(
                    f"the sampler thread did not stop within {timeout} s: a GPU reader call is stuck "
                    "(a hung driver?). It is a daemon thread and will not keep Python from exiting."
                )

    def _run(self) -> None:
        deadline = self._clock()
        while not self._stop.is_set():
            self.tick()
            deadline += self.interval_s
            now = self._clock()
            if deadline <= now:  # late (a slow reading, a busy machine): skip to the next deadline, never burst
                skipped = math.floor((now - deadline) / self.interval_s) + 1
                self.missed_deadlines += skipped
                deadline += skipped * self.interval_s
            if self._stop.is_set():
                break
            self._sleep(deadline - now)
