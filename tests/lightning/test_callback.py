"""The monitor callback in real Lightning fits on the CPU: one process, a monitor passed in, and DDP ranks forked
by ddp_fork reporting to the monitor in this process. Compared with Lightning's own DeviceStatsMonitor."""

from __future__ import annotations

import csv
import os
import pickle
import threading

import pytest

lightning = pytest.importorskip("lightning")
import torch  # noqa: E402
from lightning.pytorch.callbacks import DeviceStatsMonitor  # noqa: E402
from lightning.pytorch.loggers import CSVLogger  # noqa: E402
from torch.utils.data import DataLoader, TensorDataset  # noqa: E402

from gpulab.lightning.callback import MonitorCallback  # noqa: E402
from gpulab.lightning.classifier import DigitsClassifier  # noqa: E402
from gpulab.lightning.step_relay import RELAY_THREAD_NAME  # noqa: E402
from gpulab.monitoring import monitor  # noqa: E402
from gpulab.monitoring.sampler import SAMPLER_THREAD_NAME  # noqa: E402
from gpulab.workload import load_digits  # noqa: E402

QUIET = {"logger": False, "enable_progress_bar": False, "enable_model_summary": False, "enable_checkpointing": False}
SAMPLES, BATCH, EPOCHS = 256, 32, 2


@pytest.fixture(autouse=True)
def one_thread(monkeypatch):
    """Forked ranks inherit this process's OpenMP state: one thread each, or a rank can hang (the chapter's lesson)."""
    before = torch.get_num_threads()
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="module")
def loader():
    x, y = load_digits().train.tensors
    return DataLoader(TensorDataset(x[:SAMPLES], y[:SAMPLES]), batch_size=BATCH)


def _fit(loader, callbacks, tmp_path, **flags):
    trainer = lightning.Trainer(
        accelerator="cpu", max_epochs=EPOCHS, callbacks=callbacks, default_root_dir=tmp_path, **(QUIET | flags)
    )
    trainer.fit(DigitsClassifier(hidden=64), loader)
    return trainer


def _labels(marks):
    return [label for _, label in marks]


def _our_threads():
    return [t.name for t in threading.enumerate() if t.name in (RELAY_THREAD_NAME, SAMPLER_THREAD_NAME)]


def test_own_monitor_in_a_single_process_fit(loader, tmp_path):
    cb = MonitorCallback(title="one process", show=False, interval_s=0.05)
    _fit(loader, [cb], tmp_path)
    s = cb.summary
    assert (s.samples_total, s.steps_total) == (SAMPLES * EPOCHS, SAMPLES // BATCH * EPOCHS)
    assert _labels(s.marks) == ["fit: 1 process", "epoch 1", "epoch 2"]
    assert s.ended_by == "completed" and not cb.monitor.running and len(cb.monitor.history) > 0
    assert _our_threads() == []


def test_reports_into_a_monitor_running_in_this_process(loader, tmp_path):
    with monitor("passed in", show=False, interval_s=0.05) as mon:
        cb = MonitorCallback(mon)
        _fit(loader, [cb], tmp_path)
        assert mon.running  # the block owns it, not the callback
    s = mon.summary()
    assert (s.samples_total, s.steps_total) == (SAMPLES * EPOCHS, SAMPLES // BATCH * EPOCHS)
    assert "epoch 2" in _labels(s.marks)
    cb.relay.join(2)
    assert _our_threads() == []


def test_forked_ddp_ranks_report_through_the_relay_rank_zero_only(loader, tmp_path):
    with monitor("ddp_fork", show=False, interval_s=0.05) as mon:
        cb = MonitorCallback(mon)
        _fit(loader, [cb], tmp_path, devices=2, strategy="ddp_fork")
    s = mon.summary()
    steps_per_rank = SAMPLES // 2 // BATCH * EPOCHS  # DistributedSampler halves the data; rank 1 reports nothing
    assert s.steps_total == steps_per_rank
    assert s.samples_total == SAMPLES * EPOCHS  # each step counts its batch × 2 processes
    assert _labels(s.marks) == ["fit: 2 processes", "epoch 1", "epoch 2"]
    cb.relay.join(2)
    assert _our_threads() == [] and cb.relay.dropped == 0


class _FailsOnRankZero(DigitsClassifier):
    def training_step(self, batch, batch_idx):
        if self.global_rank == 0 and batch_idx == 1:
            raise ValueError("rank 0 gives up")
        return super().training_step(batch, batch_idx)


def test_a_rank_that_fails_is_marked_on_the_monitor_and_nothing_hangs(loader, tmp_path):
    with monitor("failing", show=False, interval_s=0.05) as mon:
        cb = MonitorCallback(mon)
        trainer = lightning.Trainer(
            accelerator="cpu",
            devices=2,
            strategy="ddp_fork",
            max_epochs=1,
            callbacks=[cb],
            default_root_dir=tmp_path,
            **QUIET,
        )
        with pytest.raises(Exception, match="rank 0 gives up"):
            trainer.fit(_FailsOnRankZero(hidden=64), loader)
    assert "fit failed: ProcessRaisedException" in _labels(mon.summary().marks)
    cb.relay.join(2)
    assert _our_threads() == []


def test_a_stopped_monitor_or_options_beside_a_monitor_are_refused():
    with monitor("done", show=False) as mon:
        pass
    with pytest.raises(ValueError, match="is not running: start it first"):
        MonitorCallback(mon)
    with monitor("running", show=False) as mon:
        with pytest.raises(TypeError, match="already configured"):
            MonitorCallback(mon, interval_s=0.1)


def test_in_a_spawned_rank_the_passed_monitor_stays_behind_with_a_warning(tmp_path):
    trainer = lightning.Trainer(accelerator="cpu", default_root_dir=tmp_path, **QUIET)
    with monitor("spawn", show=False) as mon:
        cb = MonitorCallback(mon)
        copy = pickle.loads(pickle.dumps(cb))  # what spawn does to callbacks
    assert copy.relay is None and copy.monitor is None
    with pytest.warns(UserWarning, match="started by spawn, which cannot reach the monitor"):
        assert copy._choose_role(trainer) is None


def test_forked_from_a_notebook_without_a_monitor_warns_instead_of_drawing(tmp_path):
    from IPython.core.interactiveshell import InteractiveShell

    trainer = lightning.Trainer(accelerator="cpu", default_root_dir=tmp_path, **QUIET)
    cb = MonitorCallback()
    cb.owner_pid = os.getpid() + 1  # as if this process had been forked from the one that made the callback
    shell = InteractiveShell.instance()
    try:
        with pytest.warns(UserWarning, match="forked from the notebook, which cannot draw there"):
            assert cb._choose_role(trainer) is None
    finally:
        InteractiveShell.clear_instance()
    assert cb._choose_role(trainer) == "own"  # the same fork outside a notebook (a script) monitors in rank 0
    assert shell is not None


def test_what_lightnings_device_stats_monitor_logs_on_a_cpu(loader, tmp_path):
    flags = QUIET | {"logger": CSVLogger(tmp_path), "log_every_n_steps": 1}
    _fit(loader, [DeviceStatsMonitor()], tmp_path, **flags)
    with open(next(tmp_path.rglob("metrics.csv"))) as f:
        columns = set(next(csv.reader(f)))
    stats = {c.split("/")[-1] for c in columns if c.startswith("DeviceStatsMonitor")}
    assert stats == {"cpu_percent", "cpu_vm_percent", "cpu_swap_percent"}  # no samples/s, no GPU utilisation
    with pytest.raises(Exception, match=r"Cannot use `DeviceStatsMonitor` callback with `Trainer\(logger=False\)`"):
        _fit(loader, [DeviceStatsMonitor()], tmp_path)


def test_the_relay_drops_lines_once_its_monitor_has_stopped_and_cannot_be_pickled():
    from gpulab.lightning.step_relay import StepRelay

    with monitor("short", show=False, interval_s=0.05) as mon:
        relay = StepRelay(mon, ack_timeout_s=0.5)
        with pytest.raises(TypeError, match="only in processes forked from the one that made it"):
            pickle.dumps(relay)
    relay.join(2)
    relay.send_step(32)  # a rank forked after this point would write into closed (maybe reused) descriptors
    assert relay.dropped == 1 and relay.finish() is False
    assert _our_threads() == []
