"""The environment report: content through the fake reader, the CLI, and no CUDA context, checked for real."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from gpulab.checkup.report import environment_report
from gpulab.machine.cuda import CudaState
from gpulab.machine.cuda_evidence import DriverAnswer
from gpulab.machine.simulated import SimulatedGpuReader
from tests import process_group


def _python(code: str, **env: str) -> subprocess.CompletedProcess:
    return process_group.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env={**os.environ, **env}
    )


def test_report_on_a_machine_without_gpus_says_so_plainly():
    r = environment_report(SimulatedGpuReader(None, error="no NVIDIA driver library (libnvidia-ml.so) was found: x"))
    text = str(r)
    assert "No GPU found (no NVIDIA driver library (libnvidia-ml.so) was found)" in text
    assert "CPU fallback mode" in text
    assert "✘ at least one CUDA GPU usable by PyTorch" in text
    assert "✔ gloo backend" in text
    assert "no GPU visible" in text
    html = r._repr_html_()
    assert "CPU fallback mode" in html and "<table" in html


def test_report_maps_visible_devices_on_a_described_machine(monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "5,1")
    r = environment_report(SimulatedGpuReader("workshop-8"))
    rows = r.visible.rows()
    assert [row[:2] for row in rows] == [["cuda:0", "5"], ["cuda:1", "1"]]
    assert "CUDA_VISIBLE_DEVICES='5,1'" in str(r)


def test_cli_env_runs_and_bad_simulation_is_explained():
    ok = process_group.run(
        [sys.executable, "-m", "gpulab", "env"],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "GPULAB_SIMULATE_GPUS": "kaggle-2xT4"},
    )
    assert ok.returncode == 0, ok.stderr
    assert "[SIMULATED GPUs" in ok.stdout and "Tesla T4" in ok.stdout
    bad = process_group.run(
        [sys.executable, "-m", "gpulab", "devices"],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "GPULAB_SIMULATE_GPUS": "eight-h100s"},
    )
    assert bad.returncode == 2
    assert "unknown simulated-GPU description 'eight-h100s'" in bad.stderr and "workshop-8" in bad.stderr


def test_cli_without_command_prints_help():
    out = process_group.run([sys.executable, "-m", "gpulab"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 2 and "env" in out.stdout


# Calls that start the CUDA driver (is_available) or initialise CUDA in the process (get_device_capability and
# everything built on get_device_properties). On this machine they find no GPU, so the context finding above cannot
# see them: record who calls them (each still runs for real).
STARTERS_SCRIPT = """
import torch, gpulab.checkup.report
called = []
for name in ("is_available", "get_device_capability", "get_device_properties", "current_device", "mem_get_info",
             "init", "_lazy_init"):
    real = getattr(torch.cuda, name)
    setattr(torch.cuda, name, lambda *a, _real=real, _name=name, **k: called.append(_name) or _real(*a, **k))
r = gpulab.checkup.report.environment_report()
str(r); r._repr_html_()
print(r.torch.cudnn)
print(sorted(set(called)))
"""


@pytest.mark.parametrize("simulate", ["", "workshop-8"])
def test_the_report_calls_nothing_that_starts_cuda(simulate):
    out = _python(STARTERS_SCRIPT, GPULAB_SIMULATE_GPUS=simulate)
    assert out.returncode == 0, out.stderr
    cudnn, called = out.stdout.strip().splitlines()[-2:]
    assert called == "[]", f"the report called torch.cuda.{called}, which start CUDA on a GPU machine"
    import torch

    if torch.backends.cudnn.is_available():
        assert cudnn[0].isdigit(), "the cuDNN version is still reported"


@pytest.mark.parametrize(
    "driver, mark, says",
    [
        (
            DriverAnswer.answered("/usr/lib/libcuda.so.1", 3),
            "✔",
            "the CUDA driver (libcuda) is loaded but not initialised",
        ),
        (
            DriverAnswer.answered("/usr/lib/libcuda.so.1", 0, 1),
            "✘",
            "The CUDA driver in this process says it has started",
        ),
        (DriverAnswer.unlisted("win32"), "?", "gpulab cannot tell whether CUDA has read CUDA_VISIBLE_DEVICES"),
    ],
    ids=["loaded, not initialised", "initialised", "cannot tell"],
)
def test_report_says_what_the_driver_says_about_cuda_starting(monkeypatch, driver, mark, says):
    """A loaded libcuda is not a started CUDA (import torch loads it on a GPU machine); is_available() starts it."""
    from gpulab.checkup import report

    monkeypatch.setattr(report, "cuda_state", lambda: CudaState(True, False, driver))
    r = environment_report(SimulatedGpuReader("colab-T4"))
    text = str(r)
    row = next(line for line in text.splitlines() if "CUDA not yet started in this kernel" in line)
    assert row.lstrip().startswith(mark) and says in row, row
    assert f"CUDA driver in this process       {driver.summary}" in text
    fix = {"✔": None, "✘": "      fix: restart the kernel", "?": "      to be sure: restart the kernel"}[mark]
    assert fix is None or fix in text
    assert {"✔": "#080", "✘": "#b00", "?": "#a60"}[mark] in r._repr_html_()


def test_the_report_names_a_reservation_of_this_process_reserved_by_this_notebook(tmp_path, monkeypatch):
    from gpulab.placement.reservation import reserve_gpus

    monkeypatch.setenv("GPULAB_RESERVATIONS_DIR", str(tmp_path))
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    mine = reserve_gpus(3, SimulatedGpuReader("workshop-8"), reservations=tmp_path)  # every free GPU: 1, 3, 5
    try:
        report = environment_report("workshop-8")
    finally:
        mine.release()
    finding = next(c for c in report.findings if c.what == "a free GPU to work on")
    # yours, by the rule every view applies: held by this notebook, so neither free for others nor busy for it
    assert finding.ok and "free now" not in finding.meaning, finding
    assert "GPU 1, 3, 5 yours (reserved by this notebook)" in finding.meaning and f"pid {os.getpid()}" not in str(
        report
    )
