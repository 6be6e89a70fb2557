"""The GPU picker with real ipywidgets (no frontend needed): rows, selection, live mapping, apply, no-GPU view."""

from __future__ import annotations

import os
import sys

import ipywidgets as w
import pytest

from gpulab.machine.cuda import CudaState
from gpulab.machine.simulated import SimulatedGpuReader
from gpulab.placement import setter
from gpulab.placement.picker import GpuPicker, parse_pick
from gpulab.placement.reservation import reserve_gpus
from gpulab.placement.selection import NoFreeGpu, rank_gpus
from gpulab.placement.setter import patched_environ
from tests import process_group
from tests.placement.other_kernel import held_elsewhere


def _texts(picker: GpuPicker) -> str:
    return " ".join(
        c.value for row in picker.rows_box.children for c in getattr(row, "children", [row]) if isinstance(c, w.HTML)
    )


def test_one_row_per_gpu_with_memory_bar_utilisation_and_users(tmp_path):
    picker = GpuPicker(SimulatedGpuReader("workshop-8"), reservations=str(tmp_path))
    assert len(picker.rows_box.children) == 8
    row0 = picker.rows_box.children[0].children
    assert row0[0].description == "GPU 0" and isinstance(row0[3], w.FloatProgress)
    assert row0[3].value == pytest.approx(30110 / 40960)
    text = _texts(picker)
    assert "NVIDIA A100-SXM4-40GB" in text and "97 %" in text and "pid 31000 python" in text and "no process" in text
    assert "SIMULATED machine" in picker.widget.children[0].value
    assert [c.value for c in picker.header.children] == [
        f"<b>{h}</b>" for h in ("GPU", "model", "memory", "utilisation", "in use by")
    ]


def test_bar_colour_and_badge_follow_the_free_rule_that_pick_free_applies():
    picker = GpuPicker(SimulatedGpuReader("workshop-8"))
    free = {v.gpu.physical_index for v in rank_gpus(picker.gpus) if v.free}
    assert free == {1, 3, 5}
    for i, row in enumerate(picker.rows_box.children):
        bar, badge = row.children[3], row.children[1].value
        assert (bar.bar_style == "success") == (i in free) == (">free<" in badge), (i, bar.bar_style, badge)
    # GPU 6: 2 GiB used, 3 % busy, but a process on it: not free, so not green (it was, by a memory rule of its own)
    assert picker.rows_box.children[6].children[3].bar_style == "warning"
    assert "at most 10 % of memory used, at most 10 % utilisation, no process on it" in picker.rule_view.value
    assert picker.pick_free(3) == (1, 3, 5)


def test_the_button_says_how_many_it_picks_and_the_count_can_be_set():
    picker = GpuPicker(SimulatedGpuReader("workshop-8"), selected="free:2")
    assert picker.free_button.description == "Pick 2 free" and picker.selected == (1, 3)
    picker.count.value = 3
    assert picker.free_button.description == "Pick 3 free"
    picker.free_button.click()
    assert picker.selected == (1, 3, 5)
    assert GpuPicker(SimulatedGpuReader("workshop-8")).free_button.description == "Pick 1 free"


def test_the_text_form_lists_every_gpu_under_the_same_header_with_badges():
    picker = GpuPicker(SimulatedGpuReader("workshop-8"), selected=[5, 1])
    lines = str(picker).splitlines()
    assert lines[0].startswith("SIMULATED machine") and "selected: 5, 1" in lines[0]
    assert lines[1].split() == ["GPU", "model", "memory", "utilisation", "in", "use", "by"]
    rows = [line for line in lines if line.lstrip()[:1].isdigit() and "[" in line]
    assert len(rows) == 8
    assert rows[1].split()[:2] == ["1", "[free]"] and rows[6].split()[:2] == ["6", "[busy]"]
    assert "free (green badge) = at most 10 % of memory used" in str(picker)
    assert "cuda:0" in str(picker) and "5" in str(picker)


def test_a_reservation_of_this_kernel_reads_this_notebook_and_stays_choosable(tmp_path):
    mine = reserve_gpus(1, SimulatedGpuReader("workshop-8"), reservations=tmp_path)  # GPU 1
    with held_elsewhere(1, "workshop-8", tmp_path) as (pid, theirs):  # GPU 3, another learner's kernel
        assert theirs == [3]
        picker = GpuPicker(SimulatedGpuReader("workshop-8"), reservations=str(tmp_path), selected=[1, 3])
        text = _texts(picker)
        assert "reserved by this notebook" in text and f"reserved by pid {pid}" in text
        assert f"pid {os.getpid()}" not in text
        assert picker.state(1) == "yours" and picker.state(3) == "busy"
        assert [w.split(":")[0] for w in picker.warnings()] == ["GPU 3 is not free"]
        assert picker.pick_free(2) == (1, 5)
        assert "reserved by this notebook" in str(picker) and f"reserved by pid {pid}" in str(picker)
    mine.release()


def test_renders_without_the_widgets_own_mimebundle(monkeypatch):
    # ipywidgets 7 (Colab) widgets have no _repr_mimebundle_; the picker must not need it
    for cls in w.VBox.__mro__:
        if "_repr_mimebundle_" in cls.__dict__:
            monkeypatch.delattr(cls, "_repr_mimebundle_")
    assert not hasattr(w.VBox(), "_repr_mimebundle_")
    picker = GpuPicker(SimulatedGpuReader("workshop-8"))
    bundle = picker._repr_mimebundle_()
    assert bundle["application/vnd.jupyter.widget-view+json"]["model_id"] == picker.widget.model_id
    assert bundle["application/vnd.jupyter.widget-view+json"]["version_major"] == 2


def test_ticking_rows_updates_the_mapping_live():
    picker = GpuPicker(SimulatedGpuReader("workshop-8"))
    picker._boxes[5].value = True  # what a click does
    picker._boxes[2].value = True
    assert picker.selected == (5, 2) and picker.value == "5,2"
    assert "cuda:0" in picker.mapping_view.value and picker.mapping.physical(1).physical_index == 2
    picker._boxes[5].value = False
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
    assert [k for k, b in picker._boxes.items() if not b.disabled] == [4, 5]
    assert "hidden from this kernel" in _texts(picker)
    picker.pick_free(1)
    assert picker.selected == (5,)


def test_pick_free_skips_reserved_gpus_and_button_reports_shortage(tmp_path):
    with held_elsewhere(1, "workshop-8", tmp_path) as (pid, _):
        picker = GpuPicker(SimulatedGpuReader("workshop-8"), reservations=str(tmp_path))
        assert f"reserved by pid {pid}" in _texts(picker)
        picker.pick_free(2)
        assert picker.selected == (3, 5)
        assert not picker._boxes[1].disabled  # still shown and tickable, merely reserved
        picker.count.value = 4
        picker.free_button.click()  # asks for 4: only 2 are free, so it ticks those and says so
        assert picker.selected == (3, 5)
        assert "Asked for 4 free GPU(s) but only 2 are free, so GPU 3, 5 are ticked" in picker.status.value
        assert f"GPU 1: reserved by pid {pid}" in picker.status.value and "color:#b00" not in picker.status.value
        picker._boxes[6].value = True  # a new selection: what Pick free said no longer applies
        assert picker.status.value == ""


def test_apply_on_a_simulated_machine_changes_nothing():
    picker = GpuPicker(SimulatedGpuReader("workshop-8"), selected="free:1")
    with patched_environ(CUDA_VISIBLE_DEVICES=None):
        spec = picker.apply()
        assert spec.entries == (1,) and "CUDA_VISIBLE_DEVICES" not in os.environ
    assert "Nothing was changed in this kernel" in picker.status.value
    assert "SIMULATED machine" in str(spec)  # printed (chapter 02's print(apply())), it carries its label


def test_apply_button_shows_the_refusal_once_cuda_started(monkeypatch):
    picker = GpuPicker(SimulatedGpuReader("kaggle-2xT4"), selected=[1], this_kernel=True)  # reach the real setter
    monkeypatch.setattr(setter, "cuda_state", lambda: CudaState(True, True))  # see test_visible for why
    picker.apply_button.click()
    assert "Restart the kernel and run this cell first" in picker.status.value


def test_apply_button_sets_and_says_so_where_cuda_start_cannot_be_told(monkeypatch):
    from gpulab.machine.cuda_evidence import DriverAnswer

    picker = GpuPicker(SimulatedGpuReader("kaggle-2xT4"), selected=[1], this_kernel=True)
    monkeypatch.setattr(setter, "cuda_state", lambda: CudaState(True, False, DriverAnswer.unlisted("win32")))
    with patched_environ(CUDA_VISIBLE_DEVICES=None, CUDA_DEVICE_ORDER=None):
        picker.apply_button.click()
        assert os.environ["CUDA_VISIBLE_DEVICES"] == "1"
    status = picker.status.value
    assert "Set CUDA_VISIBLE_DEVICES=&#x27;1&#x27;, but could not verify" in status and "color:#a60" in status, status


APPLY_SCRIPT = """
import os
from gpulab.placement.picker import GpuPicker
from gpulab.machine.simulated import SimulatedGpuReader

# described GPUs stand in for this machine's
p = GpuPicker(SimulatedGpuReader("kaggle-2xT4"), selected=[1, 0], this_kernel=True)
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


def test_the_widget_part_of_its_bundle_is_what_ipywidgets_displays_for_the_same_widget():
    """ipywidgets 8 displays through _repr_mimebundle_, ipywidgets 7 (Colab's) through _ipython_display_; the picker's
    own bundle must name the same view either way (captured from a real IPython shell's display)."""
    from IPython.core.interactiveshell import InteractiveShell
    from IPython.display import display
    from IPython.utils.capture import capture_output

    InteractiveShell.instance()
    picker = GpuPicker(SimulatedGpuReader("two-gpus-mig"), selected=[1])
    with capture_output() as shown:
        display(picker.widget)
    [own] = [o.data for o in shown.outputs if "application/vnd.jupyter.widget-view+json" in o.data]
    ours = picker._repr_mimebundle_()["application/vnd.jupyter.widget-view+json"]
    assert ours == own["application/vnd.jupyter.widget-view+json"] and ours["model_id"] == picker.widget.model_id


def test_ticking_a_busy_full_gpu_warns_and_a_free_one_does_not():
    picker = GpuPicker(SimulatedGpuReader("workshop-8"))
    picker._boxes[1].value = True  # free
    assert picker.warnings() == [] and "⚠" not in picker.mapping_view.value
    picker._boxes[4].value = True  # 38.9 of 40 GiB used, 100 % busy, a process on it
    [warning] = picker.warnings()
    assert warning.startswith("GPU 4 is not free: 97% full (38.9 GiB of 40.0 GiB), 100 % busy, 1 process(es) on it")
    assert "⚠ GPU 4 is not free" in picker.mapping_view.value and "⚠ GPU 4 is not free" in str(picker)


def test_the_mapping_shows_once_and_an_old_status_goes_when_the_selection_changes():
    picker = GpuPicker(SimulatedGpuReader("workshop-8"), selected=[5, 1])
    assert picker.mapping_view.value.count("CUDA_VISIBLE_DEVICES") == 1
    assert str(picker).count("CUDA_VISIBLE_DEVICES") == 1 and str(picker).count("SIMULATED") == 1
    picker.apply_button.click()
    assert "CUDA_VISIBLE_DEVICES=5,1" in picker.status.value
    picker._boxes[5].value = False
    assert picker.status.value == "" and picker.selected == (1,)


def test_pick_free_with_none_free_says_why_each_was_passed_over(tmp_path):
    with held_elsewhere(3, "workshop-8", tmp_path):  # every free GPU, by another kernel
        picker = GpuPicker(SimulatedGpuReader("workshop-8"), reservations=str(tmp_path))
        picker.free_button.click()
        assert picker.selected == () and "asked for 1 free GPU(s) but only 0 of 8 qualify" in picker.status.value
        with pytest.raises(NoFreeGpu, match="GPU 4: 38.9 GiB of 40.0 GiB used"):
            picker.pick_free(2)


def test_a_card_in_mig_mode_shows_its_slices_as_rows_and_ticking_one_names_it_by_its_mig_uuid():
    picker = GpuPicker(SimulatedGpuReader("two-gpus-mig"))
    slices = picker.gpus[0].mig_devices
    text = str(picker)
    assert "0/mig0 [free]  NVIDIA A100 80GB PCIe MIG 3g.40gb" in text and "0/mig1 [free]" in text
    assert "1 [busy]" in text and "in MIG mode" not in text
    assert picker.state("0/mig1") == "free" and picker.state(1) == "busy"
    with pytest.raises(ValueError, match=r"0 is not a row of this picker; its rows are \['0/mig0', '0/mig1', 1\]"):
        picker.state(0)  # the card itself is not offered: CUDA cannot use it whole
    assert picker.pick_free(1) == ("0/mig0",) and picker.value == slices[0].uuid
    assert picker.mapping.devices[0].mig_uuid == slices[0].uuid and picker.warnings() == []
    # NVIDIA's MIG guide: a CUDA process enumerates one MIG device only, whatever CUDA_VISIBLE_DEVICES lists
    picker.select(["0/mig1", "0/mig0"])
    assert picker.value == f"{slices[1].uuid},{slices[0].uuid}"
    assert any("CUDA lets a process use one MIG slice only" in w for w in picker.warnings())
    assert picker.pick_free(2) == ("0/mig0",)  # one slice alone, and the status says why not two
    assert "MIG slice(s) 0/mig0, 0/mig1 are free, but CUDA lets a process use one MIG" in picker.status.value
    with pytest.raises(ValueError, match=r"GPU 0/mig7 is not one this kernel may use"):
        picker.select(["0/mig7"])
