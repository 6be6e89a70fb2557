"""The server view for the room: pure rendering, the real reading of a described server with real reservations and
real processes, the terminal loop with a bounded number of views, and the notebook widget's thread."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import threading
import time

import psutil
import pytest

from gpulab.machine.simulated import SimulatedGpuReader
from gpulab.placement.reservation import reserve_gpus
from gpulab.server.owners import kernel_id, process_owner
from gpulab.server.render import ServerView, bar, render_html, render_text
from gpulab.server.watch import WATCH_THREAD_NAME, ServerWatch, read_server, watch_gpus, watch_terminal
from tests import process_group
from tests.placement.other_kernel import held_elsewhere
from tests.process_group import kill_group
from tests.seams import set_usage

W8 = SimulatedGpuReader("workshop-8")
W8_GPUS = tuple(W8.info(i) for i in range(W8.count()))


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_bars_show_shares_in_eighths_of_a_block():
    assert bar(0.5, 10) == "█████░░░░░" and bar(0.0, 4) == "░░░░" and bar(1.7, 4) == "████"
    assert bar(0.0625, 2) == "▏░" and bar(None, 3) == "   "
    assert bar(0.95, 4, color=True).startswith("\x1b[31m")  # nearly full: red


def test_the_text_view_names_every_gpu_and_who_is_on_it():
    view = ServerView(
        W8_GPUS,
        holders={W8_GPUS[1].uuid: "alice: kernel 1a2b3c4d (pid 4242)"},
        owners={31000: "bob: kernel 9f8e7d6c (pid 31000)"},
        host="gpu-server",
        taken_at=0.0,
        simulated=True,
    )
    text = render_text(view)
    lines = text.splitlines()
    assert lines[0].startswith("gpulab watch — gpu-server — 8 GPU(s)") and "SIMULATED" in lines[0]
    row = {line.split()[0]: line for line in lines[2:10]}
    assert "reserved by alice: kernel 1a2b3c4d (pid 4242)" in row["1"]
    assert "bob: kernel 9f8e7d6c (pid 31000), 29.0 GiB" in row["0"] and "97 %" in row["0"]
    assert "pid 31002 python" in row["2"]  # no owner known: the pid and NVML's name
    assert lines[-1] == "free now: GPU 3, 5 — hold one with gpulab.reserve_gpus(1)"  # GPU 1 is reserved
    html = render_html(view)
    assert "<table" in html and "reserved by alice" in html and "color:#b00'>SIMULATED" in html


def test_a_reserved_kernel_without_a_connection_file_in_its_command_line_is_named_by_its_reservation():
    from gpulab.server.watch import _named_owner

    # a provisioned kernel: ipykernel in its command line, no kernel-<id>.json (the workshop guide's "kernel ?")
    child = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(60)", "ipykernel_launcher", "-f", "/tmp/connection.json"],
        start_new_session=True,
    )
    try:
        for _ in range(100):  # the new process's command line is empty for a moment while it starts
            if "-f" in psutil.Process(child.pid).cmdline():
                break
            time.sleep(0.05)
        assert process_owner(child.pid).kernel == "?"
        named = _named_owner(child.pid, "alice", "56569379-aaaa")
        unnamed = _named_owner(child.pid, "alice", None)
    finally:
        kill_group(child)
    assert str(named) == f"alice: kernel 56569379 (pid {child.pid})"
    assert str(unnamed) == f"alice: kernel ? (pid {child.pid})"  # nothing better to say: the reservation named none


def test_views_without_gpus_say_why():
    assert "No GPU can be read: no NVIDIA driver" in render_text(ServerView((), error="no NVIDIA driver library"))
    assert "NVML sees no GPU" in render_html(ServerView(()))


def test_reading_a_described_server_names_the_reservation_holder(tmp_path):
    held = reserve_gpus(1, W8, reservations=tmp_path)
    try:
        with held_elsewhere(1, "workshop-8", tmp_path) as (pid, theirs):
            view = read_server(W8, tmp_path)
            them = process_owner(pid)
    finally:
        held.release()
    assert set(view.holders) == {held.gpus[0].uuid, W8.info(theirs[0]).uuid}
    assert view.holders[held.gpus[0].uuid] == "this notebook"  # this kernel's own reservation, as the picker says it
    assert view.holders[W8.info(theirs[0]).uuid] == f"{them.user}: {them.command} (pid {pid})"
    assert "reserved by this notebook" in render_text(view) and "reserved by this notebook" in render_html(view)
    assert view.simulated and view.owners[31000] == "pid 31000 python (described)"
    assert read_server(W8, tmp_path).holders == {}  # released: nobody


def test_a_kernel_process_is_named_by_its_user_and_kernel_id():
    assert (
        kernel_id(["python", "-m", "ipykernel_launcher", "-f", "/run/user/1000/jupyter/kernel-1a2b3c4d-55.json"])
        == "1a2b3c4d-55"
    )
    assert kernel_id(["python", "train.py"]) is None
    child = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import time; time.sleep(60)",
            "ipykernel_launcher",
            "-f",
            "/tmp/kernel-1a2b3c4d-9999.json",
        ],
        start_new_session=True,
    )
    try:
        for _ in range(100):  # the new process's command line is empty for a moment while it starts
            if "-f" in psutil.Process(child.pid).cmdline():
                break
            time.sleep(0.05)
        owner = process_owner(child.pid)
    finally:
        kill_group(child)
    assert owner.kernel == "1a2b3c4d-9999" and owner.user == process_owner(os.getpid()).user
    assert str(owner) == f"{owner.user}: kernel 1a2b3c4d (pid {child.pid})"
    gone = process_owner(child.pid)
    assert gone.user is None and "not visible here" in gone.command


def test_the_terminal_view_redraws_in_place_a_bounded_number_of_times(tmp_path):
    waits = []
    term = Terminal()
    assert watch_terminal(W8, frames=3, reservations=tmp_path, out=term, sleep=waits.append, interval_s=2) == 3
    out = term.getvalue()
    assert out.count("\x1b[H\x1b[2J") == 3 and out.count("gpulab watch —") == 3 and "\x1b[31m" in out
    assert waits == [2.0, 2.0]  # no wait after the last view
    piped = io.StringIO()
    watch_terminal(W8, frames=2, reservations=tmp_path, out=piped, sleep=lambda s: None)
    assert "\x1b[" not in piped.getvalue() and piped.getvalue().count("gpulab watch —") == 2


def test_ctrl_c_ends_the_terminal_view_cleanly(tmp_path):
    def interrupted(_s):
        raise KeyboardInterrupt

    out = io.StringIO()
    assert watch_terminal(W8, reservations=tmp_path, out=out, sleep=interrupted) == 1
    assert out.getvalue().endswith("\n")


@pytest.mark.parametrize("bad", [0.1, 0, -1, float("nan")])
def test_a_too_short_interval_is_refused(bad):
    with pytest.raises(ValueError, match="use 0.5 or more"):
        watch_terminal(W8, interval_s=bad, frames=1, out=io.StringIO())


@pytest.mark.parametrize("bad, kind", [("2", "str"), (True, "bool"), (None, "NoneType")])
def test_an_interval_that_is_not_a_number_is_named_as_such(bad, kind):
    # "2" is a long enough interval: the message must say it is text, not that it is too short
    with pytest.raises(
        TypeError,
        match=rf"interval_s={bad!r} is a {kind}; interval_s takes a number of seconds "
        r"between redraws, written without quotes: interval_s=2\.",
    ) as caught:
        watch_gpus(W8, interval_s=bad, frames=1)
    assert "too often" not in str(caught.value)


def _watch_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == WATCH_THREAD_NAME]


def test_the_notebook_view_is_redrawn_by_a_thread_that_ends(tmp_path):
    bounded = ServerWatch(W8, interval_s=0.5, frames=3, reservations=tmp_path)
    assert "SIMULATED" in bounded.widget.value and "GPU 1, 3, 5" in bounded.widget.value
    bounded._thread.join(10)
    assert bounded.frames_drawn == 3 and not bounded.running
    set_usage(W8, 5, memory_used_bytes=39 * 2**30, utilization_gpu_percent=99)
    try:
        with ServerWatch(W8, interval_s=0.5, reservations=tmp_path) as live:
            for _ in range(100):
                if "GPU 1, 3 —" in live.widget.value:
                    break
                live._stop.wait(0.1)
            assert "GPU 1, 3 —" in live.widget.value  # GPU 5 got busy: the next view says so
            assert live.running
    finally:
        set_usage(W8, 5, memory_used_bytes=4 * 2**20, utilization_gpu_percent=0)
    assert not live.running and _watch_threads() == []
    assert "application/vnd.jupyter.widget-view+json" in live._repr_mimebundle_()


def test_the_command_line_watch_runs_on_a_described_server():
    ok = process_group.run(
        [sys.executable, "-m", "gpulab", "watch", "--frames", "1"],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "GPULAB_SIMULATE_GPUS": "kaggle-2xT4"},
    )
    assert ok.returncode == 0, ok.stderr
    assert "SIMULATED" in ok.stdout and "Tesla T4" in ok.stdout
    bad = process_group.run(
        [sys.executable, "-m", "gpulab", "watch", "--interval", "0.1"], capture_output=True, text=True, timeout=120
    )
    assert bad.returncode == 2 and "use 0.5 or more" in bad.stderr


def test_inside_a_slurm_job_watch_names_the_job_its_gpus_and_what_the_course_tools_do_not_decide(tmp_path, monkeypatch):
    for name, value in {"SLURM_JOB_ID": "77", "SLURM_JOB_GPUS": "2,3", "CUDA_VISIBLE_DEVICES": "2,3"}.items():
        monkeypatch.setenv(name, value)
    view = read_server(W8, tmp_path)
    text, page = render_text(view), render_html(view)
    assert "in SLURM job 77: GPU(s) 2,3 (SLURM_JOB_GPUS); not confined" in text
    assert "gpulab's reservations only choose among them" in text and "GPU hooks and share caps" in page
    monkeypatch.delenv("SLURM_JOB_ID")
    assert "SLURM" not in render_text(read_server(W8, tmp_path))
