"""Wrong inputs to the machine readers, each refused with what to type instead; described machines always say
SIMULATED; and a random description is either refused at load (naming GPU and field) or read without a crash."""

from __future__ import annotations

import copy
import json
import os
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import gpulab
from gpulab.core.visible import visible_map
from gpulab.machine.cuda import too_few_gpus
from gpulab.machine.nvml import default_reader
from gpulab.machine.resolve import as_reader
from gpulab.machine.simulated import PRESETS, SimulatedGpuReader, simulated_gpu
from gpulab.placement.selection import rank_gpus
from tests import process_group
from tests.junk import JUNK, assert_ours


def _colab(**changes) -> dict:
    d = copy.deepcopy(PRESETS["colab-T4"])
    d["gpus"][0].update(changes)
    return d


WRONG = [
    (
        lambda: SimulatedGpuReader(_colab(memory_total_bytes="16 GB")),
        ValueError,
        r"GPU 0 of the simulated-GPU description given as a dict: 'memory_total_bytes' is '16 GB', a str; it must be a "
        r"whole number \(bytes, e.g. 17179869184 for 16 GiB\)",
    ),
    (
        lambda: SimulatedGpuReader(_colab(memory_used_bytes=2**60)),
        ValueError,
        r"'memory_used_bytes' is 1152921504606846976; it must be between 0 and 16106127360",
    ),
    (
        lambda: SimulatedGpuReader(_colab(utilization_gpu_percent=150)),
        ValueError,
        r"'utilization_gpu_percent' is 150; it must be between 0 and 100",
    ),
    (lambda: SimulatedGpuReader(_colab(name=7)), ValueError, r"'name' is 7; it must be text"),
    (lambda: SimulatedGpuReader(_colab(power_w="30 W")), ValueError, r"'power_w' is '30 W'; it must be a number"),
    (
        lambda: SimulatedGpuReader(_colab(processes=[{"pid": "x"}])),
        ValueError,
        r"'processes\[0\]' needs a whole 'pid', whole 'used_memory_bytes' and a 'name'",
    ),
    (lambda: SimulatedGpuReader(_colab(processes=5)), ValueError, r"'processes' must be a list of objects"),
    (lambda: SimulatedGpuReader(_colab(unsupported="power_w")), ValueError, r"'unsupported' must be a list of field"),
    (lambda: SimulatedGpuReader({"gpus": [{"name": "x"}]}), ValueError, r"GPU 0 of .* lacks 'uuid', 'pci_bus_id'"),
    (lambda: SimulatedGpuReader({}), ValueError, r"needs a top-level object with a 'gpus' list"),
    (
        lambda: SimulatedGpuReader({"gpus": [], "driver_version": 550}),
        ValueError,
        r"'driver_version' is 550; it is "
        r"text",
    ),
    (
        lambda: SimulatedGpuReader(5),
        TypeError,
        r"SimulatedGpuReader takes a preset name \(two-gpus-mig, .*\), the "
        r"path of a JSON description, or a dict; got a int",
    ),
    (lambda: SimulatedGpuReader([1, 2]), TypeError, r"got a list. Try SimulatedGpuReader\(\"workshop-8\"\)"),
    (
        lambda: SimulatedGpuReader("workshop8"),
        ValueError,
        r"unknown simulated-GPU description 'workshop8'.*Did you "
        r"mean 'workshop-8'\?",
    ),
    (lambda: SimulatedGpuReader("/"), ValueError, r"neither a preset .* nor an existing JSON file"),
    (
        lambda: as_reader(5),
        TypeError,
        r"machine=5 is a int, not a machine to read. Leave machine out for this machine, "
        r"or name a described one: machine=\"workshop-8\"",
    ),
    (lambda: as_reader([SimulatedGpuReader("colab-T4")]), TypeError, r"is a list, not a machine to read"),
    (
        lambda: as_reader(gpulab.devices("colab-T4")),
        TypeError,
        r"^machine= was given an Inventory \(what gpulab.devices\(\) returns\): GPUs already read, not a machine to "
        r"read\. machine says which machine: name it, e\.g\. machine=\"workshop-8\"",
    ),
    (
        lambda: as_reader(list(gpulab.devices("colab-T4").gpus)),
        TypeError,
        r"^machine= was given 1 GpuInfo "
        r"record\(s\): GPUs already read.*call them "
        r"gpus=\.$",
    ),
    (lambda: as_reader(gpulab.devices(SimulatedGpuReader(None))), TypeError, r"given an Inventory"),  # with no GPU
    (lambda: gpulab.devices(5), TypeError, r"machine=5 is a int, not a machine to read"),
    (
        lambda: gpulab.devices("workshop-8", processes="no"),
        TypeError,
        r"processes='no': processes takes True or "
        r"False",
    ),
    (
        lambda: gpulab.environment_report(object()),
        TypeError,
        r"machine=<object object at .*> is a object, not a "
        r"machine to read",
    ),
    (lambda: too_few_gpus("2"), TypeError, r"needed='2' is a str; needed takes a whole number ≥ 1"),
    (lambda: too_few_gpus(0), ValueError, r"needed=0: needed must be a whole number ≥ 1"),
]


@pytest.mark.parametrize("call, kind, message", WRONG, ids=[m[:50] for _, _, m in WRONG])
def test_each_wrong_input_gets_what_was_wrong_and_what_to_type(call, kind, message):
    with pytest.raises(kind, match=message):
        call()


def test_a_json_file_of_the_wrong_type_is_refused_at_load_naming_the_field(tmp_path):
    path = tmp_path / "box.json"
    path.write_text(json.dumps(_colab(memory_total_bytes="16 GB")))
    with pytest.raises(ValueError, match=rf"GPU 0 of the simulated-GPU description {path}: 'memory_total_bytes'"):
        SimulatedGpuReader(str(path))
    out = process_group.run(
        [sys.executable, "-m", "gpulab", "devices"],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "GPULAB_SIMULATE_GPUS": str(path)},
    )
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert out.stderr.startswith("gpulab: GPU 0 of the simulated-GPU description") and "'16 GB'" in out.stderr


def test_a_preset_name_or_path_is_taken_wherever_a_reader_is():
    assert as_reader("workshop-8").count() == 8 and isinstance(as_reader(None), default_reader().__class__)
    r = SimulatedGpuReader("kaggle-2xT4")
    assert as_reader(r) is r
    assert gpulab.devices("workshop-8").gpu_count == 8 and gpulab.devices("colab-T4").gpu_count == 1
    assert gpulab.environment_report("kaggle-2xT4").inventory.gpu_count == 2


def test_described_gpus_say_simulated_in_text_and_html():
    inv = gpulab.devices("workshop-8")
    assert str(inv).startswith("SIMULATED machine (described GPUs, not this computer's): 8 GPU(s)")
    assert ">SIMULATED</b> machine" in inv._repr_html_()
    report = gpulab.environment_report("two-gpus-mig")
    assert str(report).count("SIMULATED") >= 3 and report._repr_html_().count("SIMULATED") >= 3
    real = gpulab.devices()  # this machine, read through NVML: never labelled
    assert "SIMULATED" not in str(real) + real._repr_html_()


def test_cli_labels_described_gpus_and_notes_odd_entries():
    env = {**os.environ, "GPULAB_SIMULATE_GPUS": "workshop-8", "CUDA_VISIBLE_DEVICES": "0x1,2;3"}
    env.pop("CUDA_DEVICE_ORDER", None)
    outs = {
        c: process_group.run(
            [sys.executable, "-m", "gpulab", c], capture_output=True, text=True, timeout=120, env=env
        ).stdout
        for c in ("devices", "visible")
    }
    assert outs["devices"].startswith("SIMULATED machine")
    visible = outs["visible"]
    assert visible.startswith("SIMULATED machine") and "CUDA_DEVICE_ORDER=FASTEST_FIRST (default)" in visible
    assert "'0x1' is read as GPU 0" in visible and "hexadecimal is not understood" in visible
    assert "'2;3' is read as GPU 2" in visible and "separate them with commas: '2,3'" in visible


def test_report_without_a_driver_gives_the_long_reason_once():
    why = (
        "no NVIDIA driver library (libnvidia-ml.so) was found: this machine has no NVIDIA GPU driver, or this "
        "container was started without GPU access."
    )
    report = gpulab.environment_report(SimulatedGpuReader(None, error=why))
    assert str(report).count("this container was started without GPU access") == 1
    assert "No NVIDIA GPU found: no NVIDIA driver library (libnvidia-ml.so) was found (the checklist below" in str(
        report
    )
    assert report._repr_html_().count("this container was started without GPU access") == 1


# -- random descriptions: refused at load with our message, or read everywhere without a crash --------------------
_FIELD_VALUES = st.one_of(
    st.integers(-5, 2**36),
    st.floats(allow_nan=False),
    st.text(max_size=6),
    st.none(),
    st.booleans(),
    st.lists(st.integers(0, 3), max_size=2),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
)
_GPU = st.builds(
    lambda base, changes, drop: {**{k: v for k, v in base.items() if k not in drop}, **changes},
    st.sampled_from(
        [
            simulated_gpu(0, "Tesla T4", 15360),
            simulated_gpu(1, "A100", 40960, used_mib=9000, util=50, processes=((7, 8, "p"),), mig_slices_mib=(100,)),
        ]
    ),
    st.dictionaries(st.sampled_from(list(simulated_gpu(0, "x", 1)) + ["extra"]), _FIELD_VALUES, max_size=2),
    st.sets(st.sampled_from(list(simulated_gpu(0, "x", 1))), max_size=1),
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_GPU, max_size=3))
def test_a_random_description_is_refused_at_load_or_read_without_a_crash(gpus):
    try:
        reader = SimulatedGpuReader({"gpus": gpus})
    except Exception as exc:
        assert_ours(exc)
        return
    inv = gpulab.devices(reader)
    str(inv), inv._repr_html_()
    str(visible_map(inv, {"CUDA_VISIBLE_DEVICES": "1,0"}))
    [str(v.reason) for v in rank_gpus(inv.gpus)]
    [reader.sample(i) for i in range(reader.count())]


@settings(max_examples=60, deadline=None)
@given(JUNK, JUNK)
def test_junk_where_a_machine_goes_is_refused_with_our_message(a, b):
    for call in (
        lambda: SimulatedGpuReader(a),
        lambda: as_reader(a),
        lambda: gpulab.devices(a, processes=b),
        lambda: too_few_gpus(a),
    ):
        try:
            call()
        except Exception as exc:
            assert_ours(exc)
