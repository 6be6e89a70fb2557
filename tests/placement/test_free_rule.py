"""One rule for "free" (``selection.judge``): every view gives every GPU the same verdict, however the machine is given.

``choose_gpus`` (given ``gpulab.devices(...)`` or a reader), ``reserve_gpus``, the picker, ``watch`` and the
environment report are compared GPU by GPU on every described machine, with no reservation, and on workshop-8 with a
reservation of this process ("yours") and one of another process ("busy"). The picker's legend is checked against the
widget it draws.
"""

from __future__ import annotations

import colorsys
import re

import ipywidgets as w
import pytest

import gpulab
from gpulab.checkup.report import environment_report
from gpulab.machine.nvml import NvmlReader
from gpulab.machine.simulated import PRESETS, SimulatedGpuReader
from gpulab.placement.picker import GpuPicker
from gpulab.placement.reservation import reserve_gpus
from gpulab.placement.selection import NoFreeGpu, choose_gpus
from gpulab.server.watch import read_server
from tests.machine.nvml_stub import Stub
from tests.placement.other_kernel import held_elsewhere


def _states_from_choose(gpus) -> dict[int, str]:
    try:
        ranking = choose_gpus(1, gpus).ranking
    except NoFreeGpu as exc:
        ranking = exc.ranking
    return {v.gpu.physical_index: v.state for v in ranking}


def _free_in_watch(preset: str, reservations) -> tuple[set[int], set[int]]:
    """The GPUs ``watch``'s last line calls free, and those it calls yours."""
    last = str(read_server(preset, reservations)).splitlines()[-1]
    free = re.match(r"free now: GPU ([\d, ]+) —", last)
    yours = re.search(r"yours: GPU ([\d, ]+)$", last)
    numbers = lambda m: {int(x) for x in m.group(1).split(",")} if m else set()  # noqa: E731
    return numbers(free), numbers(yours)


@pytest.fixture(autouse=True)
def _no_visible_devices(monkeypatch):
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)  # every GPU is a candidate in every view


# two-gpus-mig: choose_gpus, the picker and watch offer its MIG slices (test_selection, test_picker, test_watch_mig)
@pytest.mark.parametrize("preset", [p for p in PRESETS if p != "two-gpus-mig"])
def test_every_view_gives_every_gpu_of_every_preset_the_same_verdict(preset, tmp_path):
    expected = _states_from_choose(gpulab.devices(preset).gpus)  # the inventory, read with its processes
    assert set(expected) == set(range(SimulatedGpuReader(preset).count()))
    assert _states_from_choose(SimulatedGpuReader(preset)) == expected  # a reader: read here, processes included
    picker = GpuPicker(preset, reservations=str(tmp_path))
    assert {i: picker.state(i) for i in expected} == expected
    free = {i for i, s in expected.items() if s == "free"}
    assert _free_in_watch(preset, tmp_path) == (free, set())
    if free:
        with reserve_gpus(len(free), preset, reservations=tmp_path) as held:
            assert set(held.physical_indices) == free
    with pytest.raises(NoFreeGpu) as caught:
        reserve_gpus(len(free) + 1, preset, reservations=tmp_path)
    assert {v.gpu.physical_index: v.state for v in caught.value.ranking} == expected


def test_choose_gpus_given_a_reader_counts_another_users_process_as_busy():
    # workshop-8's GPU 6 is 5 % full and 3 % busy, but pid 31006 has a CUDA context on it: not free
    with pytest.raises(NoFreeGpu, match=r"only 3 of 8 qualify:(.|\n)*GPU 6: 1 process\(es\) already have"):
        choose_gpus(4, SimulatedGpuReader("workshop-8"))
    assert choose_gpus(3, SimulatedGpuReader("workshop-8")).physical_indices == (1, 3, 5)


def test_an_nvml_reader_is_read_with_its_processes_too():
    stub = Stub()  # GPU 1: an RTX 3090, 5 % of its memory used, with two processes on it
    stub.gpus[1]["util"] = (3, 1)  # nearly idle: only its processes make it busy
    with pytest.raises(NoFreeGpu, match=r"GPU 1: 2 process\(es\) already have a CUDA context on it"):
        choose_gpus(1, NvmlReader(stub), allowed={1})  # GPU 0 is in MIG mode: its slices are free


def test_gpus_whose_processes_were_not_read_are_not_judged_free():
    with pytest.raises(NoFreeGpu, match=r"GPU 1: its processes were not read \(processes=False\)"):
        choose_gpus(1, gpulab.devices("workshop-8", processes=False))


def test_a_reservation_of_this_process_is_yours_in_every_view_and_anothers_is_busy(tmp_path, monkeypatch):
    """Chapter 02's scene: this notebook holds GPU 1, another learner's kernel GPU 3; GPU 5 stays free."""
    monkeypatch.setenv("GPULAB_RESERVATIONS_DIR", str(tmp_path))  # the report reads the shared folder
    mine = reserve_gpus(1, "workshop-8", reservations=tmp_path)
    with held_elsewhere(1, "workshop-8", tmp_path) as (_, theirs):
        assert mine.physical_indices == (1,) and theirs == [3]
        expected = {1: "yours", 3: "busy", 5: "free"}
        with pytest.raises(NoFreeGpu) as caught:
            reserve_gpus(2, "workshop-8", reservations=tmp_path)
        seen = {v.gpu.physical_index: v.state for v in caught.value.ranking}
        assert {i: seen[i] for i in expected} == expected
        assert "GPU 1: yours: reserved by this notebook" in str(caught.value)
        picker = GpuPicker("workshop-8", reservations=str(tmp_path))
        assert {i: picker.state(i) for i in expected} == expected
        assert "1 [yours]" in str(picker) and "5 [free]" in str(picker) and "3 [busy]" in str(picker)
        assert picker.pick_free(2) == (1, 5)  # yours first, then the freest
        assert _free_in_watch("workshop-8", tmp_path) == ({5}, {1})
        gpu_finding = [f for f in environment_report("workshop-8").findings if f.what == "a free GPU to work on"]
        assert gpu_finding[0].ok and "(GPU 5)" in gpu_finding[0].meaning
        assert "GPU 1 yours (reserved by this notebook)" in gpu_finding[0].meaning
    mine.release()


_NAMED = {"green": 120, "blue": 215, "orange": 30, "grey": None}  # hue in degrees (None: no colour)


def _colour_word(css: str) -> str:
    r, g, b = (int(css.lstrip("#")[k : k + 2], 16) / 255 for k in (0, 2, 4))
    hue, light, sat = colorsys.rgb_to_hls(r, g, b)
    if sat < 0.15:
        return "grey"
    return min((n for n, h in _NAMED.items() if h is not None), key=lambda n: abs(_NAMED[n] - hue * 360))


def test_the_legend_names_the_colours_the_widget_shows(tmp_path):
    """Every "<state> (<colour> <element>)" in the legend: each GPU in that state shows that colour there, visibly.
    A free GPU's memory bar is nearly empty, so a legend that names the bar's colour for "free" is never seen."""
    with reserve_gpus(1, "workshop-8", reservations=tmp_path):
        picker = GpuPicker("workshop-8", reservations=str(tmp_path))
        claims = re.findall(r"(free|yours|busy) \((\w+) (badge|bar)\)", picker.rule())
        assert {state for state, _, _ in claims} == {"free", "yours", "busy"}, picker.rule()
        for i, row in enumerate(picker.rows_box.children):
            state = picker.state(i)
            badge, bar = row.children[1], row.children[3]
            assert isinstance(badge, w.HTML) and isinstance(bar, w.FloatProgress)
            for claimed, colour, element in claims:
                if claimed != state:
                    continue
                if element == "bar":
                    assert bar.value > 0.05, f"GPU {i} is {state}, but its bar is empty: its colour cannot be seen"
                    continue
                assert f">{state}<" in badge.value
                shown = re.search(r"background:(#[0-9a-fA-F]{6})", badge.value).group(1)
                assert _colour_word(shown) == colour, (i, state, shown, colour)
