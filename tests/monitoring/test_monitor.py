"""``with gpulab.monitor():`` end to end: threads stop on every way out, the figure (real Agg) and summary are left,
data exports, NVML trouble is survived and explained. GPUs come from our NVML seam (SimulatedGpuReader); matplotlib,
ipywidgets and IPython's display machinery are real."""

from __future__ import annotations

import csv
import math
import threading
import time

import numpy as np
import pytest
import torch
from tqdm import tqdm

from gpulab.machine.simulated import SimulatedGpuReader
from gpulab.monitoring import Monitor, monitor
from gpulab.monitoring.sampler import SAMPLER_THREAD_NAME
from gpulab.monitoring.view import RENDER_THREAD_NAME
from tests.seams import FakeClock

MONITOR_THREADS = {SAMPLER_THREAD_NAME, RENDER_THREAD_NAME}


def monitor_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name in MONITOR_THREADS]


@pytest.fixture
def ipython_shell():
    """A real IPython shell whose display publisher keeps what a notebook cell would show."""
    from IPython.core.displaypub import CapturingDisplayPublisher
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    saved = shell.display_pub
    shell.display_pub = CapturingDisplayPublisher()
    try:
        yield shell
    finally:
        shell.display_pub = saved
        InteractiveShell.clear_instance()


def test_the_public_names():
    import gpulab.monitoring

    assert gpulab.monitor is monitor and gpulab.monitoring.Monitor is Monitor
    assert "monitor" in gpulab.__all__


def test_a_block_that_completes_leaves_a_summary_and_no_thread():
    with monitor("ok", machine=SimulatedGpuReader("kaggle-2xT4"), show=False) as mon:
        assert mon.running and len(monitor_threads()) == 1
        for _ in range(5):
            mon.step(samples=16)
    assert not mon.running and monitor_threads() == []
    s = mon.summary()
    assert s.ended_by == "completed" and s.samples_total == 80 and s.steps_total == 5
    assert [p.device for p in s.peaks] == ["host", "this process", "GPU 0", "GPU 1"]
    assert s.simulated_gpus and "[SIMULATED GPUs]" in str(s)


def test_an_exception_stops_the_thread_and_is_not_swallowed():
    with pytest.raises(ValueError, match="loss is NaN"):
        with monitor(machine=SimulatedGpuReader(None), show=False) as mon:
            mon.step(samples=8)
            raise ValueError("loss is NaN")
    assert monitor_threads() == []
    assert mon.summary().ended_by == "ValueError: loss is NaN" and mon.summary().samples_total == 8


def test_ctrl_c_stops_the_thread_and_leaves_the_figure(ipython_shell):
    with pytest.raises(KeyboardInterrupt):
        with monitor("interrupted", machine=SimulatedGpuReader("colab-T4")) as mon:
            mon.step(samples=1)
            raise KeyboardInterrupt
    assert monitor_threads() == []
    shown = ipython_shell.display_pub.outputs
    assert [sorted(o["data"]) for o in shown] == [["image/png", "text/plain"], ["text/html", "text/plain"]]
    assert "ended by" in shown[1]["data"]["text/plain"] and "KeyboardInterrupt" in shown[1]["data"]["text/plain"]
    assert mon.summary().ended_by == "KeyboardInterrupt"


def test_in_a_notebook_the_end_leaves_one_static_figure_and_the_summary_table(ipython_shell):
    with monitor("nb", machine=SimulatedGpuReader("colab-T4")) as mon:
        mon.mark("epoch 1")
        mon.step(samples=3)
    shown = ipython_shell.display_pub.outputs
    assert len(shown) == 2
    png = shown[0]["data"]["image/png"]
    assert png[:4] in (b"\x89PNG", "iVBO")  # bytes, or base64 text, depending on IPython's formatter
    assert "<table" in shown[1]["data"]["text/html"] and "epoch 1" in shown[1]["data"]["text/html"]


def test_outside_a_notebook_the_summary_is_printed(capsys):
    with monitor("script", machine=SimulatedGpuReader(None)) as mon:
        mon.step(samples=2)
    out = capsys.readouterr().out
    assert out.startswith("Monitor summary: script") and "2 samples in 1 steps" in out


def test_100_start_stop_cycles_leave_no_thread_behind():
    before = set(threading.enumerate())
    reader = SimulatedGpuReader("kaggle-2xT4")
    for i in range(100):
        with monitor(machine=reader, show=False) as mon:
            mon.step(samples=i)
    assert set(threading.enumerate()) == before


def test_the_live_image_is_redrawn_from_its_thread_and_stops_with_the_block():
    before = set(threading.enumerate())
    with monitor("live", machine=SimulatedGpuReader("colab-T4"), live=True, show=False) as mon:
        assert {t.name for t in monitor_threads()} == MONITOR_THREADS
        end = time.monotonic() + 60
        while mon._live.draws < 2 and time.monotonic() < end:  # a bounded wait, not a timing check
            mon.step(samples=4)
            time.sleep(0.02)
        assert mon._live.draws >= 2
        assert mon._live.figure is mon._figure  # one figure, updated in place
        assert mon._live.widget.value[:8] == b"\x89PNG\r\n\x1a\n"
    assert set(threading.enumerate()) == before


def test_speed_and_step_time_follow_the_clock():
    clock = FakeClock()
    with monitor(machine=SimulatedGpuReader(None), clock=clock, sleep=lambda s: time.sleep(0.01), show=False) as mon:
        for _ in range(10):
            clock.advance(0.1)
            mon.step(samples=32)
    s = mon.summary()
    assert s.samples_total == 320 and s.steps_total == 10
    assert s.mean_samples_per_s == pytest.approx(320.0) and s.mean_step_time_s == pytest.approx(0.1)


def test_no_step_reported_says_how_to_report_one():
    with monitor(machine=SimulatedGpuReader(None), show=False) as mon:
        pass
    assert "use mon.step(samples=...) or mon.wrap(loader)" in str(mon.summary().mean_samples_per_s)


def test_wrap_counts_batches_of_every_usual_shape():
    x, y = torch.zeros(10, 3), torch.zeros(10)
    batches = [(x[:4], y[:4]), (x[4:8], y[4:8]), (x[8:], y[8:])]
    with monitor(machine=SimulatedGpuReader(None), show=False) as mon:
        seen = [len(xb) for xb, _ in mon.wrap(batches)]
        list(mon.wrap([{"input_ids": torch.zeros(5, 7)}]))
        list(mon.wrap([np.zeros((6, 2))]))
        list(mon.wrap(["a", "b"], samples=10))
        list(mon.wrap([[1, 2, 3]], samples=lambda batch: 2 * len(batch)))
    s = mon.summary()
    assert seen == [4, 4, 2]
    assert s.steps_total == 3 + 1 + 1 + 2 + 1 and s.samples_total == 10 + 5 + 6 + 20 + 6


def test_wrap_works_inside_and_outside_tqdm():
    with monitor(machine=SimulatedGpuReader(None), show=False) as mon:
        watched = mon.wrap(range(7))
        assert len(watched) == 7
        bar = tqdm(watched, disable=True)
        assert len(bar) == 7 and list(bar) == list(range(7))
        assert list(mon.wrap(tqdm(range(3), disable=True))) == [0, 1, 2]
    assert mon.summary().steps_total == 10


def test_marks_reach_the_summary_the_records_and_the_csv(tmp_path):
    with monitor(machine=SimulatedGpuReader("colab-T4"), show=False) as mon:
        mon.mark("epoch 1")
        mon.step(samples=5)
        mon.mark("DDP starts")
    assert [label for _, label in mon.summary().marks] == ["epoch 1", "DDP starts"]
    records = mon.records()
    assert "; ".join(r["marks"] for r in records if r["marks"]) == "epoch 1; DDP starts"
    assert records[-1]["samples_total"] == 5 and records[-1]["gpu0_memory_total_bytes"] == 15360 * 1024**2
    path = tmp_path / "run.csv"
    mon.to_csv(path)
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == len(records) and rows[0].keys() == records[0].keys()
    assert float(rows[-1]["samples_total"]) == 5
    assert rows[0]["samples_per_s"] == ""  # not readable at the first reading: an empty cell, not "nan"


def test_the_figure_is_real_and_follows_the_data():
    with monitor("fig", machine=SimulatedGpuReader("two-gpus-mig"), show=False) as mon:
        mon.mark("warm-up done")
        mon.step(samples=5)
    png = mon.figure_png()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    fig = mon._figure
    assert list(fig.axes) == ["memory", "utilisation", "GPU memory", "speed"]
    n = len(mon.history)
    assert all(len(line.get_xdata()) == n for line in fig.lines.values())
    texts = [t.get_text() for t in fig.axes["memory"].texts]
    assert texts == ["warm-up done"]
    assert "GPU 0 utilisation: N/A (not supported on this GPU)" in fig._notes.get_text()


def test_without_nvml_it_keeps_going_on_the_host_and_says_what_is_missing():
    reason = "no NVIDIA driver library (libnvidia-ml.so) was found"
    with monitor(machine=SimulatedGpuReader(None, error=reason), show=False) as mon:
        mon.step(samples=4)
    s = mon.summary()
    assert s.missing == (f"GPU panels: N/A ({reason})",) and f"not shown: GPU panels: N/A ({reason})" in str(s)
    assert [p.device for p in s.peaks] == ["host", "this process"] and s.peaks[0].peak_bytes > 0
    mon.figure_png()
    assert list(mon._figure.axes) == ["memory", "utilisation", "speed"]


def test_nvml_failing_mid_run_is_survived_and_explained():
    class Flaky(SimulatedGpuReader):
        calls_left = 2

        def sample(self, i):
            Flaky.calls_left -= 1
            if Flaky.calls_left < 0:
                raise RuntimeError("NVML: GPU has fallen off the bus")
            return super().sample(i)

    with monitor(machine=Flaky("colab-T4"), interval_s=0.2, show=False) as mon:
        end = time.monotonic() + 60
        while mon.history.appended < 5 and time.monotonic() < end:
            time.sleep(0.02)
        mon.step(samples=1)
    assert mon.summary().missing == (
        "GPU 0: could not be read (RuntimeError: NVML: GPU has fallen off the bus); its panel has gaps",
    )
    used = mon.history.column("gpu0_memory_used_bytes")
    assert not math.isnan(used[0]) and math.isnan(used[-1])
    assert mon.summary().samples_total == 1 and monitor_threads() == []


def test_summary_renders_as_text_and_html():
    with monitor("both", machine=SimulatedGpuReader("colab-T4"), show=False) as mon:
        mon.step(samples=3)
    s = mon.summary()
    text, page = str(s), s._repr_html_()
    assert "GPU 0" in text and "15.0 GiB" in text and "mean speed" in text
    assert "<table" in page and "GPU 0" in page and "15.0 GiB" in page


def test_mistakes_are_explained():
    mon = Monitor(machine=SimulatedGpuReader(None), show=False)
    with pytest.raises(RuntimeError, match="inside the `with gpulab.monitor"):
        mon.step(samples=1)
    with mon:
        with pytest.raises(
            TypeError,
            match=r"is a Tensor; samples \(the examples the step processed\) takes a whole "
            r"number ≥ 0 \(e.g. mon.step\(samples=len\(x\)\) for a batch tensor x\)",
        ):
            mon.step(samples=torch.zeros(4, 2))
        with pytest.raises(
            ValueError,
            match=r"samples=-1: samples \(the examples the step processed\) must be a "
            r"whole number ≥ 0",
        ):
            mon.step(samples=-1)
        with pytest.raises(RuntimeError, match="is running: a Monitor records one run"):
            mon.start()
    with pytest.raises(RuntimeError, match="is stopped: a Monitor records one run"):
        mon.start()
    with pytest.raises(RuntimeError, match="monitor that is stopped"):
        mon.mark("too late")
    with pytest.raises(RuntimeError, match="not running: nothing to stop"):
        mon.stop()
    with pytest.raises(ValueError, match="live= takes True, False or 'auto'"):
        Monitor(machine=SimulatedGpuReader(None), live="yes")
    assert monitor_threads() == []


def test_live_auto_is_off_without_a_jupyter_server(monkeypatch, ipython_shell):
    from gpulab.monitoring.frontend import frontend_available

    monkeypatch.delenv("JPY_SESSION_NAME", raising=False)
    monkeypatch.delenv("GPULAB_MONITOR_LIVE", raising=False)
    assert not frontend_available()  # nbval / nbconvert: static figure only
    monkeypatch.setenv("GPULAB_MONITOR_LIVE", "1")
    assert frontend_available()
    monkeypatch.setenv("GPULAB_MONITOR_LIVE", "0")
    monkeypatch.setenv("JPY_SESSION_NAME", "05_live_monitor.ipynb")
    assert not frontend_available()


def test_live_without_ipywidgets_explains_and_leaves_no_thread(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "ipywidgets", None)  # what Python does for a package it cannot import
    mon = Monitor(machine=SimulatedGpuReader(None), live=True, show=False)
    with pytest.raises(ImportError, match="pip install ipywidgets.*or pass live=False"):
        mon.start()
    assert monitor_threads() == [] and not mon.running


def test_a_figure_that_cannot_be_shown_does_not_hide_the_loops_exception(ipython_shell, monkeypatch):
    mon = Monitor(machine=SimulatedGpuReader(None))
    monkeypatch.setattr(mon, "figure_png", lambda **_: (_ for _ in ()).throw(MemoryError("no room for a PNG")))
    with pytest.warns(RuntimeWarning, match="could not show its figure \\(MemoryError: no room for a PNG\\)"):
        with pytest.raises(ValueError, match="the learner's bug"):
            with mon:
                raise ValueError("the learner's bug")
    assert monitor_threads() == []


def test_time_counts_from_start_not_from_construction():
    """``mon = gpulab.monitor(...)`` in one cell and ``mon.start()`` later: the wait is neither a step nor elapsed."""
    clock = FakeClock()
    mon = monitor(machine=SimulatedGpuReader(None), clock=clock, sleep=lambda s: time.sleep(0.01), show=False)
    clock.advance(100.0)  # the learner reads the next cell before running it
    mon.start()
    clock.advance(0.5)
    mon.mark("first step")
    clock.advance(0.5)
    mon.step(samples=10)
    summary = mon.stop()
    assert summary.mean_step_time_s == pytest.approx(1.0) and summary.mean_samples_per_s == pytest.approx(10.0)
    assert summary.duration_s == pytest.approx(1.0)
    assert mon.marks == [(pytest.approx(0.5), "first step")]
    assert mon.history.times()[0] == pytest.approx(0.0, abs=1.0)


def test_restarting_the_step_clock_keeps_set_up_out_of_the_first_step():
    """A loop that starts after set-up inside the block (a Lightning fit's sanity check) restarts the step clock."""
    clock = FakeClock()
    with monitor(machine=SimulatedGpuReader(None), clock=clock, sleep=lambda s: time.sleep(0.01), show=False) as mon:
        clock.advance(5.0)  # set-up: not a step
        mon.restart_step_clock()
        for _ in range(4):
            clock.advance(0.25)
            mon.step(samples=8)
    assert mon.summary().mean_step_time_s == pytest.approx(0.25)
    with pytest.raises(RuntimeError, match=r"mon.restart_step_clock\(\) was called on a monitor that is stopped"):
        mon.restart_step_clock()


def test_show_false_in_jupyterlab_shows_nothing(monkeypatch, ipython_shell):
    """A monitor with ``show=False`` (chapter 05 times training with it) must leave no widget in the output: a live
    image would stay behind, blank or frozen, once per run, because only ``show`` replaces it at the end."""
    monkeypatch.setenv("GPULAB_MONITOR_LIVE", "1")  # what JupyterLab looks like to frontend_available()
    with monitor(machine=SimulatedGpuReader(None), show=False) as mon:
        mon.step(samples=1)
    assert mon._live is None and ipython_shell.display_pub.outputs == []
    with monitor(machine=SimulatedGpuReader(None)) as shown:  # show=True: live in JupyterLab, replaced at the end
        assert shown._live is not None
    assert monitor_threads() == []


def test_the_monitor_benchmark_reports_the_paired_ratios_quartiles():
    """bench_monitor.py prints "middle half q1–q3" of the watched/unwatched ratios: the quartiles, not min and max."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_monitor.py"
    spec = importlib.util.spec_from_file_location("bench_monitor", path)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    # three rounds (fast mode): ratios 1.0, 1.1, 1.3 → median 1.1, quartiles 1.05 and 1.2 (numpy's linear rule)
    assert bench.paired_ratios([1.0, 2.2, 3.9], [1.0, 2.0, 3.0]) == pytest.approx((1.1, 1.05, 1.2))
    six = bench.paired_ratios([1.0, 1.1, 1.2, 1.3, 1.4, 1.5], [1.0] * 6)
    assert six == pytest.approx((1.25, 1.125, 1.375))
