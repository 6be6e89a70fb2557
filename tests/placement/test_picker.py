"""The GPU picker with real ipywidgets (no frontend needed): rows, selection, live mapping, apply, no-GPU view."""
from __future__ import annotations

import os
import sys

import ipywidgets as w
import pytest

from gpulab.placement import setter
from gpulab.machine.cuda import CudaState
from gpulab.placement.setter import patched_environ
from gpulab.placement.picker import GpuPicker, parse_pick
from gpulab.placement.reservation import reserve_gpus
from gpulab.placement.selection import NoFreeGpu
from gpulab.machine.simulated import SimulatedGpuReader
from tests import process_group



def _texts(picker: GpuPicker) -> str:
    return " ".join(c.value for row in picker.rows_box.children for c in getattr(row, "children", [row])
                    if isinstance(c, w.HTML))


def test_one_row_per_gpu_with_memory_bar_utilisation_and_users(tmp_path):
    picker = GpuPicker(SimulatedGpuReader("workshop-8"), reservations=str(tmp_path))
    assert len(picker.rows_box.children) == 8
    row0 = picker.rows_box.children[0].children
    assert row0[0].description == "GPU 0" and isinstance(row0[2], w.FloatProgress)
    assert row0[2].value == pytest.approx(30110 / 40960) and row0[2].bar_style == "warning"
    assert picker.rows_box.children[4].children[2].bar_style == "danger"
    text = _texts(picker)
    assert "NVIDIA A100-SXM4-40GB" in text and "97 %" in text and "pid 31000 python" in text and "no process" in text
    assert "SIMULATED machine" in picker.widget.children[0].value


def test_ticking_rows_updates_the_mapping_live():
    picker = GpuPicker(SimulatedGpuReader("workshop-8"))
    picker._checks[5].value = True  # what a click does
    picker._checks[2].value = True
    assert picker.selected == (5, 2) and picker.value == "5,2"
    assert "cuda:0" in picker.mapping_view.value and picker.mapping.physical(1).physical_index == 2
    picker._checks[5].value = False
    assert picker.selected == (2,) and picker.mapping.physical(0).physical_index == 2


def test_selection_from_argument_or_environment(monkeypatch):
    assert GpuPicker(SimulatedGpuReader("workshop-8"), selected=[3, 1]).selected == (3, 1)
    monkeypatch.setenv("GPULAB_PICK_GPUS", "free:2")
    assert GpuPicker(SimulatedGpuReader("workshop-8")).selected == (1, 3)
    monkeypatch.setenv("GPULAB_PICK_GPUS", "7,0")
    assert GpuPicker(SimulatedGpuReader("workshop-8")).value == "7,0"


@pytest.mark.parametrize("text", ["free:0", "two", "1;2"])
def test_bad_pick_text_says_how_to_write_it(text):
    with pytest.raises(ValueError, match=r"GPULAB_PICK_GPUS=.* is not understood: give physical GPU numbers"):
        parse_pick(text)


def test_bad_selection_is_refused():
    picker = GpuPicker(SimulatedGpuReader("workshop-8"))
    with pytest.raises(ValueError, match=r"cannot select \[9\]: GPU 9 is not one this kernel may use"):
        picker.select([9])
    with pytest.raises(ValueError, match="a GPU is listed twice"):
        picker.select([1, 1])
    with pytest.raises(ValueError, match="nothing is selected"):
        picker.apply()


def test_gpus_hidden_from_the_kernel_cannot_be_ticked():
    picker = GpuPicker(SimulatedGpuReader("workshop-8"), env={"CUDA_VISIBLE_DEVICES": "4,5"})
    assert [k for k, b in picker._checks.items() if not b.disabled] == [4, 5]
    assert "hidden from this kernel" in _texts(picker)
    picker.pick_free(1)
    assert picker.selected == (5,)


def test_pick_free_skips_reserved_gpus_and_button_reports_shortage(tmp_path):
    held = reserve_gpus(1, SimulatedGpuReader("workshop-8"), directory=tmp_path)
    picker = GpuPicker(SimulatedGpuReader("workshop-8"), reservations=str(tmp_path))
    assert f"reserved by pid {os.getpid()}" in _texts(picker)
    picker.pick_free(2)
    assert picker.selected == (3, 5)
    assert not picker._checks[1].disabled  # still shown and tickable, merely reserved
    picker.select([3, 5, 6, 7])
    picker.free_button.click()  # asks for as many as ticked (4): only 2 are free, so it ticks those and says so
    assert picker.selected == (3, 5)
    assert "Asked for 4 free GPU(s) but only 2 are free, so GPU 3, 5 are ticked" in picker.status.value
    assert f"GPU 1: reserved by pid {os.getpid()}" in picker.status.value and "color:#b00" not in picker.status.value
    picker._checks[6].value = True  # a new selection: what Pick free said no longer applies
    assert picker.status.value == ""
    held.release()


def test_apply_on_a_simulated_machine_changes_nothing():
    picker = GpuPicker(SimulatedGpuReader("workshop-8"), selected="free:1")
    with patched_environ(CUDA_VISIBLE_DEVICES=None):
        spec = picker.apply()
        assert spec.entries == (1,) and "CUDA_VISIBLE_DEVICES" not in os.environ
    assert "Nothing was changed in this kernel" in picker.status.value


def test_apply_button_shows_the_refusal_once_cuda_started(monkeypatch):
    picker = GpuPicker(SimulatedGpuReader("kaggle-2xT4"), selected=[1], this_kernel=True)  # reach the real setter
    monkeypatch.setattr(setter, "cuda_state", lambda: CudaState(True, True, True))  # see test_visible for why
    picker.apply_button.click()
    assert "Restart the kernel and run this cell first" in picker.status.value


APPLY_SCRIPT = """
import os
from gpulab.placement.picker import GpuPicker
from gpulab.machine.simulated import SimulatedGpuReader

p = GpuPicker(SimulatedGpuReader("kaggle-2xT4"), selected=[1, 0], this_kernel=True)  # described GPUs stand in for this machine's
p.apply()
print(os.environ["CUDA_VISIBLE_DEVICES"], os.environ["CUDA_DEVICE_ORDER"])
"""


def test_apply_sets_the_variables_in_a_fresh_kernel():
    env = {k: v for k, v in os.environ.items() if not k.startswith("CUDA_")}
    out = process_group.run([sys.executable, "-c", APPLY_SCRIPT], capture_output=True, text=True, timeout=60, env=env)
    assert out.stdout.split() == ["1,0", "PCI_BUS_ID"], out.stderr


def test_no_gpu_shows_the_cpu_and_what_would_appear():
    picker = GpuPicker(SimulatedGpuReader(None, error="no NVIDIA driver library (libnvidia-ml.so) was found"))
    text = picker.rows_box.children[0].value
    assert "<b>CPU</b>" in text and "libnvidia-ml.so" in text and "one row per GPU appears here" in text
    assert picker.apply_button.disabled and "torch will use the CPU" in picker.mapping_view.value
    assert "0 GPU(s)" in str(picker)


def test_renders_as_a_widget_with_a_text_fallback():
    bundle = GpuPicker(SimulatedGpuReader("two-gpus-mig"), selected=[1])._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle and "selected: 1" in bundle["text/plain"]


def test_ticking_a_busy_full_gpu_warns_and_a_free_one_does_not():
    picker = GpuPicker(SimulatedGpuReader("workshop-8"))
    picker._checks[1].value = True  # free
    assert picker.warnings() == [] and "⚠" not in picker.mapping_view.value
    picker._checks[4].value = True  # 38.9 of 40 GiB used, 100 % busy, a process on it
    [warning] = picker.warnings()
    assert warning.startswith("GPU 4 is not free: 97% full (38.9 GiB of 40.0 GiB), 100 % busy, 1 process(es) on it")
    assert "⚠ GPU 4 is not free" in picker.mapping_view.value and "⚠ GPU 4 is not free" in str(picker)


def test_the_mapping_shows_once_and_an_old_status_goes_when_the_selection_changes():
    picker = GpuPicker(SimulatedGpuReader("workshop-8"), selected=[5, 1])
    assert picker.mapping_view.value.count("CUDA_VISIBLE_DEVICES") == 1
    assert str(picker).count("CUDA_VISIBLE_DEVICES") == 1 and str(picker).count("SIMULATED") == 1
    picker.apply_button.click()
    assert "CUDA_VISIBLE_DEVICES=5,1" in picker.status.value
    picker._checks[5].value = False
    assert picker.status.value == "" and picker.selected == (1,)


def test_pick_free_with_none_free_says_why_each_was_passed_over(tmp_path):
    held = reserve_gpus(3, SimulatedGpuReader("workshop-8"), directory=tmp_path)  # every free GPU
    picker = GpuPicker(SimulatedGpuReader("workshop-8"), reservations=str(tmp_path))
    picker.free_button.click()
    assert picker.selected == () and "asked for 1 free GPU(s) but only 0 of 8 qualify" in picker.status.value
    with pytest.raises(NoFreeGpu, match="GPU 4: 38.9 GiB of 40.0 GiB used"):
        picker.pick_free(2)
    held.release()
