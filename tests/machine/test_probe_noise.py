"""machine.probe_noise: the driver probes' noise is kept out where no CUDA driver exists, and nothing else is hidden."""

from __future__ import annotations

import logging
import sys
import textwrap

import pytest

from gpulab.machine.probe_noise import (
    KINETO_QUIET,
    NO_RUNTIME,
    _NoRuntimeFilter,
    cuda_driver_present,
    quiet_cuda_probes,
)
from tests.process_group import run

_LOGGER = logging.getLogger("torch.utils.cpp_extension")


@pytest.fixture
def clean_logger():
    """The logger without our filter (another test in this process may have loaded the extension), restored after."""
    before = list(_LOGGER.filters)
    _LOGGER.filters[:] = [f for f in before if not isinstance(f, _NoRuntimeFilter)]
    yield
    _LOGGER.filters[:] = before


def test_with_a_driver_nothing_changes(clean_logger) -> None:
    env: dict[str, str] = {}
    assert quiet_cuda_probes(driver_present=True, environ=env) == []
    assert env == {} and not any(isinstance(f, _NoRuntimeFilter) for f in _LOGGER.filters)


class _Kept(logging.Handler):
    """The records that reach the logger's own handlers (torch's "torch" logger may stop them propagating to the root,
    as torch 2.11's logging set-up does, so pytest's caplog would see none)."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


def test_without_a_driver_only_the_probe_message_is_dropped(clean_logger) -> None:
    env: dict[str, str] = {}
    done = quiet_cuda_probes(driver_present=False, environ=env)
    assert env == {"KINETO_LOG_LEVEL": KINETO_QUIET} and len(done) == 2
    assert quiet_cuda_probes(driver_present=False, environ=env) == []  # a second call adds nothing
    kept = _Kept()
    _LOGGER.addHandler(kept)
    try:
        _LOGGER.warning("%s, using CUDA_HOME='%s'", NO_RUNTIME, "/usr/local")
        _LOGGER.warning("a real warning from cpp_extension")
    finally:
        _LOGGER.removeHandler(kept)
    assert kept.messages == ["a real warning from cpp_extension"]


def test_a_kineto_level_the_learner_set_is_kept(clean_logger) -> None:
    env = {"KINETO_LOG_LEVEL": "1"}
    quiet_cuda_probes(driver_present=False, environ=env)
    assert env == {"KINETO_LOG_LEVEL": "1"}


@pytest.mark.skipif(cuda_driver_present(), reason="the noise exists only on a machine without a CUDA driver")
def test_timer_and_profiler_run_quietly_in_a_fresh_process() -> None:
    """Real torch: after quiet_cuda_probes(), importing torch.utils.benchmark and profiling print nothing, while a
    Python warning raised afterwards still shows."""
    code = textwrap.dedent(
        """
        import warnings
        from gpulab.machine.probe_noise import quiet_cuda_probes
        quiet_cuda_probes()
        import torch
        import torch.utils.benchmark
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], profile_memory=True) as p:
            torch.randn(64, 64) @ torch.randn(64, 64)
        assert "aten::mm" in p.key_averages().table(row_limit=50)
        warnings.warn("a real warning")
        """
    )
    out = run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert NO_RUNTIME not in out.stderr and "gpuGetDeviceCount" not in out.stderr and "USDT" not in out.stderr
    assert "UserWarning: a real warning" in out.stderr
