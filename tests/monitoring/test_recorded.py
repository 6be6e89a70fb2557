"""A recorded GPU run: written from a real monitor run, read back, drawn again, labelled with machine and date."""

from __future__ import annotations

import json
import time

import numpy as np
import pytest

from gpulab.machine.simulated import SimulatedGpuReader
from gpulab.monitoring.live_monitor import monitor
from gpulab.monitoring.recorded import FORMAT, RecordedRun, latest_recorded_run, record_run


class StandInNvml(SimulatedGpuReader):
    """Our NVML seam answering for one T4, as NvmlReader would on a machine that has one (not labelled SIMULATED)."""

    simulated = False


def _run(reader) -> object:
    with monitor("digits MLP on cuda:0", machine=reader, show=False, interval_s=0.05) as mon:
        for epoch in (1, 2):
            mon.mark(f"epoch {epoch}")
            for _ in range(5):
                time.sleep(0.02)
                mon.step(samples=32)
    return mon


def test_a_run_is_recorded_read_back_and_drawn_with_its_machine_and_date(tmp_path):
    mon = _run(StandInNvml("colab-T4"))
    path = record_run(mon, tmp_path / "ch05-monitor-gpu.json", ran_on="1× Tesla T4 (test file), torch 2.14.1")
    data = json.loads(path.read_text())
    assert data["format"] == FORMAT and data["columns"][0] == "elapsed_s" and data["gpus"] == [0]
    assert data["machine"] == "1× Tesla T4 (test file), torch 2.14.1"  # the file's key, as recorded runs have it
    run = RecordedRun.load(path)
    assert run.ran_on == "1× Tesla T4 (test file), torch 2.14.1" and run.date == data["date"]
    assert run.label.startswith("Recorded GPU run: digits MLP on cuda:0 — on 1× Tesla T4 (test file)")
    assert run.label.endswith(
        "A recording, drawn again from evidence/ch05-monitor-gpu.json: not a reading of this computer."
    )  # DESIGN.md, Labels: recorded elsewhere says so where it is shown
    assert data["date"] in str(run) and "Monitor summary" in str(run)
    assert [label for _, label in run.marks] == ["epoch 1", "epoch 2"] and len(run.rows) == len(mon.history)
    assert run.figure_png()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "<img src='data:image/png;base64," in run._repr_html_() and "1× Tesla T4" in run._repr_html_()


def test_the_newest_recorded_run_in_a_folder_and_none_while_there_is_none(tmp_path):
    assert latest_recorded_run(tmp_path / "absent") is None
    (tmp_path / "other-evidence.json").write_text(json.dumps({"kind": "explain", "rows": []}))
    assert latest_recorded_run(tmp_path) is None  # other kinds of evidence are not a recorded run
    columns = [
        "elapsed_s",
        "host_memory_used_bytes",
        "host_memory_limit_bytes",
        "host_cpu_percent",
        "process_rss_bytes",
        "process_cpu_percent",
        "samples_total",
        "steps_total",
        "samples_per_s",
        "step_time_s",
    ]
    for date in ("2026-11-20T10:00:00Z", "2026-11-24T18:00:00Z"):
        rows = [[0.2 * k, 2e9, 8e9, 50.0, 5e8, None, 32.0 * k, k, None if k == 0 else 160.0, 0.2] for k in range(6)]
        (tmp_path / f"run-{date[:10]}.json").write_text(
            json.dumps(
                {
                    "format": FORMAT,
                    "machine": "1× NVIDIA H100 80GB HBM3 (written by this test)",
                    "date": date,
                    "title": "digits MLP on cuda:0",
                    "gpus": [],
                    "cuda_devices": 0,
                    "columns": columns,
                    "rows": rows,
                    "marks": [[0.2, "epoch 1"]],
                    "summary": "Monitor summary: digits MLP on cuda:0",
                }
            )
        )
    run = latest_recorded_run(tmp_path)
    assert run.date == "2026-11-24T18:00:00Z" and np.isnan(run.rows[0, 5]) and run.rows[3, 6] == 96.0
    assert run.figure_png()[:4] == b"\x89PNG"


def test_what_is_not_a_recorded_run_is_refused_saying_why(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(ValueError, match="is not a recorded monitor run: it is not JSON"):
        RecordedRun.load(bad)
    bad.write_text(json.dumps({"format": FORMAT, "machine": "x"}))
    with pytest.raises(ValueError, match="lacks date, title, gpus"):
        RecordedRun.load(bad)
    bad.write_text(json.dumps({"format": "something else"}))
    with pytest.raises(ValueError, match='its "format" is not'):
        RecordedRun.load(bad)


def test_only_a_finished_run_on_a_real_gpu_is_recorded(tmp_path):
    with pytest.raises(ValueError, match="must come from a machine with an NVIDIA GPU"):
        record_run(_run(SimulatedGpuReader("colab-T4")), tmp_path / "x.json", ran_on="a described T4")
    with pytest.raises(TypeError, match=r"^ran_on='': say in words what the run ran on, e\.g\. ran_on=\"1× NVIDIA"):
        record_run(_run(StandInNvml("colab-T4")), tmp_path / "x.json", ran_on="")
    with monitor("still going", machine=StandInNvml("colab-T4"), show=False) as mon:
        with pytest.raises(RuntimeError, match="still running"):
            record_run(mon, tmp_path / "x.json", ran_on="1× Tesla T4")
    assert not (tmp_path / "x.json").exists()
