"""CUDA_VISIBLE_DEVICES: CUDA's rules, agreement with PyTorch's own emulation, the map, and the guarded setter."""

from __future__ import annotations

import os
import sys

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from gpulab.core.visible import visible_map
from gpulab.core.visible_text import _leading, format_visible_devices, parse_visible_devices
from gpulab.machine.cuda import CudaState
from gpulab.machine.cuda_evidence import DriverAnswer, driver_in_maps, mapped_drivers
from gpulab.machine.simulated import PRESETS, SimulatedGpuReader, simulated_gpu
from gpulab.placement import setter
from gpulab.placement.setter import CudaAlreadyStarted, CudaStartUnverified, patched_environ, set_visible_devices
from tests import process_group

W8 = SimulatedGpuReader("workshop-8")
W8_GPUS = [W8.info(i, processes=False) for i in range(W8.count())]
UUIDS = [g.uuid for g in W8_GPUS]


def torch_parse(raw: str | None) -> list[int] | list[str]:
    """PyTorch's private parser, fed through the environment as it expects."""
    with patched_environ(CUDA_VISIBLE_DEVICES=raw):
        return torch.cuda._parse_visible_devices()


# -- CUDA's documented examples ---------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "raw, entries",
    [
        ("0,2,-1,1", (0, 2)),  # the CUDA programming guide's example: stop at the first invalid entry
        ("2,1", (2, 1)),  # order is kept: GPU 2 becomes cuda:0
        ("", ()),
        ("-1", ()),  # two common ways to hide every GPU
        ("1gpu2,2ampere", (1, 2)),  # parsed like strtoul: the leading number counts
        ("0,0", ()),
        ("1,2,1", ()),  # a repeat empties the whole list
        ("0,,1", (0,)),
        ("0 ,1", (0, 1)),
        (" 3", (3,)),  # empty entry stops; spaces around a number are ignored
        ("+2,-0", (2, 0)),
        ("0,gpu1", (0,)),
        ("+", ()),
        ("GPU-ab,GPU-cd", ("GPU-ab", "GPU-cd")),
        ("GPU-ab,0", ("GPU-ab",)),
        ("GPU-ab,GPU-ab", ()),
        ("MIG-x,MIG-y", ("MIG-x", "MIG-y")),
        ("MIG-x,GPU-y", ("MIG-x",)),
    ],
)
def test_parse_follows_cudas_rules(raw, entries):
    spec = parse_visible_devices(raw)
    assert spec.entries == entries
    assert (spec.stopped_at is not None or spec.repeated) == (len(entries) < len(raw.split(",")))


def test_parse_explains_where_and_why_it_stopped():
    assert "'-1' is negative, so CUDA stops reading there and keeps only what came before it (0, 2)" in str(
        parse_visible_devices("0,2,-1,1")
    )
    assert "listed twice" in parse_visible_devices("1,1").notes[0]
    assert "hides every GPU" in parse_visible_devices("").notes[0]
    assert parse_visible_devices(None).unset and "unset" in str(parse_visible_devices(None))
    assert "does not start with 'GPU-'" in parse_visible_devices("GPU-a, GPU-b").notes[0]


def test_lone_sign_is_an_invalid_entry_where_torch_itself_crashes():
    for raw in ("0,+,1", "0,-gpu"):
        assert parse_visible_devices(raw).entries == (0,)
        with pytest.raises(ValueError):  # PyTorch's emulation calls int("+"); CUDA's strtoul just stops there
            torch_parse(raw)


# -- agreement with torch.cuda._parse_visible_devices on a large sample ------------------------------------------------
_TOKENS = st.one_of(
    st.integers(0, 12).map(str),
    st.sampled_from(["-1", "-0", "+3", "", " ", " 2", "4 ", "\t5", "1gpu", "gpu", "7a", "00", "010", "-", "-2", "99"]),
    st.sampled_from(["GPU-", "MIG-"]).flatmap(lambda p: st.text("0123456789abcdef-", max_size=6).map(lambda t: p + t)),
    st.text("0123456789+-, GPUMIabcdef\t", max_size=6),
)
_RAW = st.one_of(st.lists(_TOKENS, min_size=1, max_size=7).map(",".join), st.text("0123456789+-, GPUMI\t", max_size=12))


def _torch_would_crash(raw: str) -> bool:
    """True where PyTorch's parser reaches an entry that is a sign without a digit after it (it raises ValueError)."""
    if raw.startswith(("GPU-", "MIG-")):
        return False
    seen: set[int] = set()
    for elem in raw.split(","):
        e = elem.strip()
        if e[:1] in ("+", "-") and not e[1:2].isdigit():
            return True
        x = _leading(e)[0]  # strtoul: "1gpu" → 1, "-0" → 0, "gpu1"/""/"+" → -1
        if x < 0 or x in seen:
            return False
        seen.add(x)
    return False


@settings(max_examples=3000, deadline=None)
@given(_RAW)
def test_parse_agrees_with_torchs_private_parser(raw):
    ours = parse_visible_devices(raw)
    if _torch_would_crash(raw):
        with pytest.raises(ValueError):
            torch_parse(raw)
        return
    assert list(ours.entries) == torch_parse(raw), ours.notes


@settings(max_examples=1500, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.tuples(st.integers(0, 7), st.integers(4, 40)).map(lambda t: UUIDS[t[0]][: t[1]]),
            st.sampled_from(["GPU-", "GPU-0", "GPU-zz", "0"]),
        ),
        min_size=1,
        max_size=6,
    )
)
def test_uuid_prefixes_resolve_like_torchs_transform(candidates):
    raw = ",".join(["GPU-" + c[4:] if c.startswith("GPU-") else c for c in candidates])
    if not raw.startswith("GPU-"):
        raw = UUIDS[0][:8] + "," + raw
    parsed = torch_parse(raw)
    expected = torch.cuda._transform_uuid_to_ordinals(parsed, UUIDS)
    ours = visible_map(W8_GPUS, {"CUDA_VISIBLE_DEVICES": raw, "CUDA_DEVICE_ORDER": "PCI_BUS_ID"})
    assert [d.physical_index for d in ours.devices] == expected


# -- the cuda:k → physical map ----------------------------------------------------------------------------------------
def test_map_seed_example_cuda1_is_physical_3():
    m = visible_map(W8_GPUS, {"CUDA_VISIBLE_DEVICES": "2,3,4,5"})
    assert [d.physical_index for d in m.devices] == [2, 3, 4, 5]
    assert m.physical(1).physical_index == 3
    assert "cuda:1" in str(m) and "<table" in m._repr_html_()
    with pytest.raises(IndexError, match=r"cuda:4 does not exist here: this process would see 4 GPU\(s\)"):
        m.physical(4)


def test_map_unset_uuid_prefix_and_out_of_range():
    assert len(visible_map(W8_GPUS, {}).devices) == 8
    m = visible_map(W8_GPUS, {"CUDA_VISIBLE_DEVICES": f"{UUIDS[6][:10]},1"})
    assert [d.physical_index for d in m.devices] == [6]  # mixed kinds: the index after a UUID is ignored
    m = visible_map(W8_GPUS, {"CUDA_VISIBLE_DEVICES": "7,9,1"})
    assert [d.physical_index for d in m.devices] == [7] and "GPU 9 does not exist" in " ".join(m.notes)
    m = visible_map(W8_GPUS, {"CUDA_VISIBLE_DEVICES": "GPU-"})
    assert m.devices == () and "more than one GPU UUID" in m.notes[0]


def test_map_mig_slices_and_mig_mode_note():
    r = SimulatedGpuReader("two-gpus-mig")
    gpus = [r.info(i) for i in range(r.count())]
    mig = gpus[0].mig_devices[1].uuid
    m = visible_map(gpus, {"CUDA_VISIBLE_DEVICES": mig})
    assert m.devices[0].physical_index == 0 and m.devices[0].mig_uuid == mig
    unset = visible_map(gpus, {})
    assert any("GPU 0 is in MIG mode" in n for n in unset.notes)
    assert any("different models" in n for n in unset.notes)  # A100 + 3090 under FASTEST_FIRST
    assert not any("different models" in n for n in visible_map(gpus, {"CUDA_DEVICE_ORDER": "PCI_BUS_ID"}).notes)
    assert any("not a value CUDA knows" in n for n in visible_map(gpus, {"CUDA_DEVICE_ORDER": "SLOWEST"}).notes)


def test_map_on_a_machine_without_gpus():
    m = visible_map([], {"CUDA_VISIBLE_DEVICES": "0"})
    assert m.devices == () and "No GPU was found on this machine" in m.notes[-1] and "no GPU visible" in str(m)


def test_map_with_described_machine_from_json(tmp_path):
    path = tmp_path / "box.json"
    path.write_text(__import__("json").dumps({"gpus": [simulated_gpu(i, "Tesla T4", 15360) for i in range(3)]}))
    r = SimulatedGpuReader(str(path))
    m = visible_map([r.info(i) for i in range(3)], {"CUDA_VISIBLE_DEVICES": "2,0"})
    assert [d.physical_index for d in m.devices] == [2, 0]


def test_format_visible_devices():
    assert format_visible_devices([2, 3]) == "2,3"
    assert format_visible_devices([]) == ""
    assert format_visible_devices([UUIDS[1]]) == UUIDS[1]
    with pytest.raises(ValueError, match=r"GPU 1 is listed twice .* Give each GPU once"):
        format_visible_devices([1, 1])
    with pytest.raises(ValueError, match=r"'-1' is negative"):
        format_visible_devices([0, -1])
    with pytest.raises(ValueError, match=r"does not start with 'GPU-'"):
        format_visible_devices([UUIDS[0], 2])


# -- the guarded setter -----------------------------------------------------------------------------------------------
def test_driver_detection_reads_proc_maps():
    maps = (
        "7f00-7f01 r-xp 0 08:01 12 /usr/lib/x86_64-linux-gnu/libcuda.so.550.54.15\n"
        "7f01-7f02 r--p 0 08:01 12 /usr/lib/x86_64-linux-gnu/libcuda.so.550.54.15\n"
        "7f02-7f03 r-xp 0 08:01 13 /opt/my libs/libcuda.so.1\n7f03-7f04 rw-p 0 00:00 0 \n"
    )
    assert mapped_drivers(maps) == ("/usr/lib/x86_64-linux-gnu/libcuda.so.550.54.15", "/opt/my libs/libcuda.so.1")
    assert driver_in_maps(maps)
    assert not driver_in_maps("7f00-7f01 r-xp 0 08:01 12 /venv/torch/lib/libcudart.so.13\n7f r /libnvidia-ml.so.1")
    assert not driver_in_maps("")


def test_the_drivers_answers_mean_what_the_driver_api_says():
    # cuDeviceGetCount before cuInit: CUDA_ERROR_NOT_INITIALIZED (3); after: CUDA_SUCCESS (0); anything else: unclear
    assert DriverAnswer.answered("/x/libcuda.so.1", 3).initialised is False
    assert (
        DriverAnswer.answered("/x/libcuda.so.1", 0, 2).said == "libcuda.so.1 answers CUDA_SUCCESS (0) to "
        "cuDeviceGetCount (2 GPU(s))"
    )
    assert DriverAnswer.answered("/x/libcuda.so.1", 100).initialised is None
    assert DriverAnswer.answered("/x/libcuda.so.1", 7).said.endswith("CUresult (7) to cuDeviceGetCount")
    two = (DriverAnswer.answered("/a/libcuda.so.1", 3), DriverAnswer.answered("/b/libcuda.so.1", 0))
    assert DriverAnswer.combined(two).initialised is True and DriverAnswer.combined(two[:1]).initialised is False
    assert DriverAnswer.combined(()) == DriverAnswer.not_loaded()
    assert DriverAnswer.combined((two[0], DriverAnswer.unanswered("/c/libcuda.so", "no symbol"))).initialised is None


DRIVER_MAPPED_SCRIPT = """
import ctypes, math, os, shutil, sys, warnings
from gpulab.machine.cuda import cuda_state
from gpulab.placement.setter import CudaAlreadyStarted, set_visible_devices
before = cuda_state()
set_visible_devices([1])
# a library file named like the driver, mapped for real, that is not a CUDA driver: it cannot answer
shutil.copy(math.__file__, sys.argv[1])
ctypes.CDLL(sys.argv[1])
after = cuda_state()
with warnings.catch_warnings(record=True) as said:
    warnings.simplefilter("always")
    try:
        set_visible_devices([0])
        print("set", os.environ["CUDA_VISIBLE_DEVICES"])
    except CudaAlreadyStarted as exc:
        print("refused", os.environ["CUDA_VISIBLE_DEVICES"])
print(before.variable_read, after.driver.loaded, after.variable_read, [w.category.__name__ for w in said])
print(after)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the driver probe reads /proc/self/maps (Linux)")
def test_a_mapped_libcuda_alone_is_no_reason_to_refuse(tmp_path):
    # On a GPU machine `import torch` maps libcuda without starting CUDA, and the variable still takes effect
    # (gpu-runs/2026-11-26-h100/diag.txt, lines B-D). A file named libcuda.so.1 that cannot answer cuDeviceGetCount
    # leaves gpulab unable to tell: it sets the variable and warns, in a fresh process, with no monkeypatching.
    # (tests/machine/test_cuda_driver_probe.py tries a stand-in driver that does answer.)
    out = process_group.run(
        [sys.executable, "-c", DRIVER_MAPPED_SCRIPT, str(tmp_path / "libcuda.so.1")],
        capture_output=True,
        text=True,
        timeout=120,
        env={k: v for k, v in os.environ.items() if k != "CUDA_VISIBLE_DEVICES"},
    )
    lines = out.stdout.splitlines()
    assert lines[:2] == ["set 0", "False True None ['CudaStartUnverified']"], out.stderr
    assert (
        lines[2].startswith("gpulab cannot tell whether CUDA has read CUDA_VISIBLE_DEVICES in this process")
        and "libcuda.so.1 is loaded but could not be asked" in lines[2]
    )


SETTER_SCRIPT = """
import os, sys
from gpulab.placement.setter import set_visible_devices
from gpulab.machine.cuda import cuda_state
spec = set_visible_devices([3, 1])
print(os.environ["CUDA_VISIBLE_DEVICES"], os.environ["CUDA_DEVICE_ORDER"], spec.entries, 'torch' in sys.modules)
set_visible_devices(None, order=None)
print("CUDA_VISIBLE_DEVICES" in os.environ, cuda_state().variable_read)
"""


def test_setter_writes_the_variable_in_a_fresh_process():
    out = process_group.run(
        [sys.executable, "-c", SETTER_SCRIPT],
        capture_output=True,
        text=True,
        timeout=60,
        env={k: v for k, v in os.environ.items() if k != "CUDA_VISIBLE_DEVICES"},
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == ["3,1 PCI_BUS_ID (3, 1) False", "False False"]


def test_setter_refuses_once_cuda_has_read_the_variable(monkeypatch):
    # This machine cannot start CUDA, so our one probe (cuda_state) stands in for the state of a GPU machine;
    # test_setter_refuses_after_real_cuda_init does the same for real where a GPU exists.
    monkeypatch.setattr(setter, "cuda_state", lambda: CudaState(True, True))
    with patched_environ(CUDA_VISIBLE_DEVICES="0"):
        with pytest.raises(
            CudaAlreadyStarted,
            match=r"not setting CUDA_VISIBLE_DEVICES='2'.*Restart the kernel and run "
            r"this cell first",
        ):
            set_visible_devices([2])
        assert os.environ["CUDA_VISIBLE_DEVICES"] == "0"  # nothing changed
    started = CudaState(True, False, DriverAnswer.answered("/usr/lib/libcuda.so.1", 0, 1))  # is_available() did it
    monkeypatch.setattr(setter, "cuda_state", lambda: started)
    with pytest.raises(CudaAlreadyStarted, match=r"The CUDA driver in this process says it has started"):
        set_visible_devices("1")


def test_setter_sets_and_warns_where_it_cannot_tell(monkeypatch):
    # off Linux gpulab cannot ask the driver: torch's flag and its own record are all it has, and it says so
    off_linux = CudaState(True, False, DriverAnswer.unlisted("win32"))
    monkeypatch.setattr(setter, "cuda_state", lambda: off_linux)
    with patched_environ(CUDA_VISIBLE_DEVICES=None, CUDA_DEVICE_ORDER=None):
        with pytest.warns(
            CudaStartUnverified,
            match=r"set CUDA_VISIBLE_DEVICES='2', but could not verify .* /proc/self"
            r"/maps, which Windows lacks.*restart the kernel and run this cell",
        ):
            set_visible_devices([2])
        assert os.environ["CUDA_VISIBLE_DEVICES"] == "2"


def test_setter_rejects_values_cuda_would_cut_short():
    with pytest.raises(ValueError, match="GPU 1 is listed twice"):
        set_visible_devices("1,1")
    with pytest.raises(ValueError, match="CUDA_DEVICE_ORDER must be one of PCI_BUS_ID, FASTEST_FIRST"):
        set_visible_devices([0], order="BY_SPEED")


def test_patched_environ_restores_exactly():
    with patched_environ(GPULAB_T1=None):
        os.environ.pop("GPULAB_T1", None)
        with patched_environ(GPULAB_T1="x", GPULAB_T2=None):
            assert os.environ["GPULAB_T1"] == "x" and "GPULAB_T2" not in os.environ
        assert "GPULAB_T1" not in os.environ
    with pytest.raises(KeyError), patched_environ(GPULAB_T3="y"):
        raise KeyError("boom")
    assert "GPULAB_T3" not in os.environ


REAL_INIT_SCRIPT = """
import os, torch
from gpulab.placement.setter import set_visible_devices, CudaAlreadyStarted
torch.zeros(1, device="cuda")
n = torch.cuda.device_count()
try:
    set_visible_devices("")
except CudaAlreadyStarted as exc:
    print("refused", n == torch.cuda.device_count())
"""


@pytest.mark.gpu
def test_setter_refuses_after_real_cuda_init():
    out = process_group.run([sys.executable, "-c", REAL_INIT_SCRIPT], capture_output=True, text=True, timeout=120)
    assert out.stdout.split() == ["refused", "True"], out.stderr


def test_presets_still_have_distinct_uuids():
    assert len(set(UUIDS)) == len(PRESETS["workshop-8"]["gpus"])
