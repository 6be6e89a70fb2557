"""Wrong inputs to the placement helpers, each refused at the door with what to type instead; described machines are
labelled SIMULATED everywhere; and random junk (or random PyTorch-ish code for explain) never escapes as anything
but one of our documented refusals."""

from __future__ import annotations

import os

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import gpulab
from gpulab.placement.device_rules import CannotExplain
from gpulab.placement.selection import NoFreeGpu, Policy
from tests.junk import JUNK, assert_ours
from tests.seams import FakeClock

W8 = gpulab.SimulatedGpuReader("workshop-8")
GPUS = gpulab.devices(W8).gpus
NO_GPU = gpulab.SimulatedGpuReader(None)  # a machine described with no GPU at all


@pytest.fixture(autouse=True)
def _environment_restored():
    saved = dict(os.environ)
    yield
    os.environ.clear()
    os.environ.update(saved)


def _reserve(*args, tmp, **kw):
    return gpulab.reserve_gpus(*args, reservations=tmp, **kw)


WRONG = [
    # parse_visible_devices / visible_map
    (
        lambda t: gpulab.parse_visible_devices(2),
        TypeError,
        r"parse_visible_devices reads the variable's text, a str "
        r"such as '2'; got a int 2.*set_visible_devices\(\[2, 3\]\)",
    ),
    (lambda t: gpulab.parse_visible_devices([2, 3]), TypeError, r"a str such as '2,3'; got a list"),
    (
        lambda t: gpulab.visible_map(GPUS, "0"),
        TypeError,
        r"env='0': env is the whole environment of the process.*"
        r"env=\{'CUDA_VISIBLE_DEVICES': '0'\}",
    ),
    (
        lambda t: gpulab.visible_map(GPUS, {"CUDA_VISIBLE_DEVICES": 2}),
        TypeError,
        r"env\['CUDA_VISIBLE_DEVICES'\]=2 is a int: environment values are text",
    ),
    (
        lambda t: gpulab.visible_map("workshop-8"),
        TypeError,
        r"gpus takes the GPUs themselves, not a name. For the "
        r"described machine 'workshop-8' write gpus=gpulab\.devic",
    ),
    (lambda t: gpulab.visible_map(None), TypeError, r"gpus=NoneType None: gpus takes the GPUs as read by"),
    (
        lambda t: gpulab.visible_map(GPUS, {}).physical(8),
        IndexError,
        r"cuda:8 does not exist here: this process would "
        r"see 8 GPU\(s\).*numbers the visible GPUs 0..7",
    ),
    (lambda t: gpulab.visible_map(GPUS, {}).physical("1"), TypeError, r"cuda_index='1' is a str"),
    # set_visible_devices / patched_environ
    (
        lambda t: gpulab.set_visible_devices(2),
        TypeError,
        r"set_visible_devices\(2\) is ambiguous: for physical GPU 2 "
        r"alone write set_visible_devices\(\[2\]\).*reserve_gpus\(2\)",
    ),
    (
        lambda t: gpulab.set_visible_devices([0.5]),
        TypeError,
        r"0.5 in \[0.5\] is a float, not a GPU \(CUDA would "
        r"read '0.5' as GPU 0\)",
    ),
    (lambda t: gpulab.set_visible_devices([True]), TypeError, r"True in \[True\] is a bool, not a GPU"),
    (
        lambda t: gpulab.set_visible_devices(["2;3"]),
        ValueError,
        r"'2;3' in \['2;3'\] is not one GPU: '2;3' is read "
        r"as GPU 2.*separate them with commas: '2,3'",
    ),
    (
        lambda t: gpulab.set_visible_devices("0x1"),
        ValueError,
        r"hexadecimal is not understood: write the GPU's "
        r"number in decimal \(1 here\)",
    ),
    (lambda t: gpulab.set_visible_devices({2, 3}), TypeError, r"a set has no order, but the first GPU becomes cuda:0"),
    (lambda t: gpulab.set_visible_devices(b"0"), TypeError, r"Got a bytes b'0'"),
    (lambda t: gpulab.set_visible_devices([1, 1]), ValueError, r"GPU 1 is listed twice .* Give each GPU once"),
    (
        lambda t: gpulab.set_visible_devices([0], order="pci"),
        ValueError,
        r"CUDA_DEVICE_ORDER must be one of "
        r"PCI_BUS_ID, FASTEST_FIRST, not 'pci'",
    ),
    (
        lambda t: gpulab.patched_environ(CUDA_VISIBLE_DEVICES=2),
        TypeError,
        r"patched_environ\(CUDA_VISIBLE_DEVICES=2\): environment values are text.*CUDA_VISIBLE_DEVICES='2'",
    ),
    # explain
    (lambda t: gpulab.explain("", W8), ValueError, r"explain\(\) was given no statement to read.*e.g. explain\("),
    (lambda t: gpulab.explain("# only a comment", W8), ValueError, r"no statement to read"),
    (
        lambda t: gpulab.explain(None, W8),
        TypeError,
        r"explain\(\) reads PyTorch code given as text, e.g. "
        r"explain\(\"model.cuda\(1\)\"\); got a NoneType",
    ),
    (lambda t: gpulab.explain("x.cuda(1)", W8, env="2,3"), TypeError, r"env='2,3': env is the whole environment"),
    (
        lambda t: gpulab.explain("x.cuda(1)", 5),
        TypeError,
        r"machine=5 is a int, not a machine to read. Leave machine "
        r"out for this machine, or name a described one",
    ),
    (
        lambda t: gpulab.explain("x.cuda(1)", GPUS),
        TypeError,
        r"^machine= was given 8 GpuInfo record\(s\): GPUs already read, not a machine to read\. machine says which "
        r"machine: name it, e\.g\. machine=\"workshop-8\".*call them gpus=\.$",
    ),
    (
        lambda t: gpulab.explain("x.cuda(1)", gpulab.devices(W8)),
        TypeError,
        r"^machine= was given an Inventory \(what gpulab\.devices\(\) returns\): GPUs already read",
    ),
    (lambda t: gpulab.explain("x.cuda(1)", "workshop8"), ValueError, r"Did you mean 'workshop-8'\?"),
    (lambda t: gpulab.explain("x" + ".cuda()" * 3000, W8), ValueError, r"nested too deeply"),
    (
        lambda t: gpulab.explain("x.to(dev)", W8),
        CannotExplain,
        r"explain\(\) cannot see what 'dev' holds in "
        r"'x.to\(dev\)'.*Write the device itself, e.g. x.to",
    ),
    (lambda t: gpulab.explain("torch.cuda.set_device(rank)", W8), CannotExplain, r"cannot see what 'rank' holds"),
    (lambda t: gpulab.explain("import torch", W8), CannotExplain, r"it cannot follow 'import torch'"),
    (lambda t: gpulab.explain("with ctx:\n  x.cuda()", W8), CannotExplain, r"cannot follow 'with ctx:'"),
    # choose_gpus / Policy
    (
        lambda t: gpulab.choose_gpus("2", GPUS),
        TypeError,
        r"n='2' is a str; n \(how many GPUs you want\) takes a whole "
        r"number ≥ 1 \(e.g. choose_gpus\(2, gpulab.devices\(\)\)\)",
    ),
    (lambda t: gpulab.choose_gpus(1, 8), TypeError, r"gpus=int 8: gpus takes the GPUs as read by gpulab.devices"),
    (
        lambda t: gpulab.choose_gpus(1, GPUS, {"max_utilization_percent": 50}),
        TypeError,
        r"policy=\{'max_utilization_percent': 50\} is a dict; policy takes a Policy, e.g. ",
    ),
    (lambda t: gpulab.choose_gpus(1, GPUS, allowed=1), TypeError, r"allowed=1: allowed takes the physical GPU numbers"),
    (lambda t: gpulab.choose_gpus(1, GPUS, taken=["GPU-1"]), TypeError, r"taken maps each reserved GPU's UUID to who"),
    (lambda t: gpulab.choose_gpus(9, GPUS), NoFreeGpu, r"asked for 9 free GPU\(s\) but only 3 of 8 qualify"),
    (
        lambda t: Policy("0.5"),
        TypeError,
        r"Policy\(max_memory_used_fraction='0.5'\): max_memory_used_fraction is a "
        r"number",
    ),
    (lambda t: Policy(50), ValueError, r"between 0 and 1; got 50 \(0.1 means at most 10 % already used\)"),
    (lambda t: Policy(allow_processes="yes"), TypeError, r"allow_processes='yes': allow_processes takes True or False"),
    # reserve_gpus
    (lambda t: _reserve(0, W8, tmp=t), ValueError, r"n=0: n must be a whole number ≥ 1 \(e.g. reserve_gpus\(2\)"),
    (lambda t: _reserve("1", W8, tmp=t), TypeError, r"n='1' is a str; n takes a whole number ≥ 1"),
    (lambda t: _reserve(1, 5, tmp=t), TypeError, r"machine=5 is a int, not a machine to read"),
    (lambda t: _reserve(1, "workshop-9", tmp=t), ValueError, r"unknown simulated-GPU description 'workshop-9'"),
    (lambda t: _reserve(1, W8, "strict", tmp=t), TypeError, r"policy='strict' is a str; policy takes a Policy"),
    (lambda t: _reserve(1, W8, tmp=t, wait_s="10"), TypeError, r"wait_s='10' is a str; wait_s takes a non-negative "),
    (lambda t: _reserve(1, W8, tmp=t, wait_s=-1), ValueError, r"wait_s=-1: wait_s must be a non-negative number"),
    (
        lambda t: gpulab.reserve_gpus(1, W8, reservations=5),
        TypeError,
        r"reservations=int 5: reservations takes a directory "
        r"path",
    ),
    (
        lambda t: gpulab.reserve_gpus(1, W8, reservations=t / "f" / "sub"),
        NotADirectoryError,
        r"f is a file, not a directory. Point reservations= \(or GPULAB_RESERVATIONS_DIR\) at a directory",
    ),
    # GpuPicker
    (
        lambda t: gpulab.GpuPicker(W8, selected=2),
        TypeError,
        r"selected=2 is ambiguous: for physical GPU 2 write "
        r"selected=\[2\]; for 2 free GPU\(s\) write "
        r"selected=\"free:2\"",
    ),
    (lambda t: gpulab.GpuPicker(W8, selected=[0.5]), TypeError, r"selected holds float 0.5"),
    (lambda t: gpulab.GpuPicker(W8, selected="free:x"), ValueError, r"GPULAB_PICK_GPUS='free:x' is not understood"),
    (lambda t: gpulab.GpuPicker(W8, env="2,3"), TypeError, r"env='2,3': env is the whole environment"),
    (lambda t: gpulab.GpuPicker(5), TypeError, r"machine=5 is a int, not a machine to read"),
    (lambda t: gpulab.GpuPicker(W8, policy="x"), TypeError, r"policy='x' is a str; policy takes a Policy"),
    (lambda t: gpulab.GpuPicker(W8, this_kernel="yes"), TypeError, r"this_kernel='yes': this_kernel takes True"),
    (
        lambda t: gpulab.GpuPicker(W8, reservations=3),
        TypeError,
        r"reservations=int 3: reservations takes a "
        r"directory path",
    ),
    (
        lambda t: gpulab.GpuPicker(W8).select(2),
        TypeError,
        r"physical_indices=2: .* For GPU 2 alone write "
        r"physical_indices=\[2\]",
    ),
    (lambda t: gpulab.GpuPicker(W8).select([9]), ValueError, r"cannot select \[9\]: GPU 9 is not one this kernel"),
    (lambda t: gpulab.GpuPicker(W8).pick_free(0), ValueError, r"n=0: n must be a whole number ≥ 1"),
]


@pytest.mark.parametrize("call, kind, message", WRONG, ids=[m[:50] for _, _, m in WRONG])
def test_each_wrong_input_gets_what_was_wrong_and_what_to_type(call, kind, message, tmp_path):
    (tmp_path / "f").write_text("")
    with pytest.raises(kind, match=message):
        call(tmp_path)


def test_conveniences_a_learner_expects_are_accepted(tmp_path):
    assert gpulab.explain("x.cuda(1)", "workshop-8", {"CUDA_VISIBLE_DEVICES": "2,3"}).physical_indices == (3,)
    assert gpulab.explain("x.cuda(1)", W8, {}).physical_indices == (1,)
    with gpulab.reserve_gpus(1, "workshop-8", reservations=tmp_path) as r:
        assert r.physical_indices == (1,)
    assert len(gpulab.GpuPicker("workshop-8").gpus) == 8
    assert len(gpulab.visible_map(W8, {}).devices) == 8 and len(gpulab.visible_map(gpulab.devices(W8), {}).devices) == 8
    assert gpulab.set_visible_devices(["+3", " 1"]).entries == (3, 1)
    e = gpulab.explain(
        "dev = torch.device('cuda:1')\nids = [1, 0]\nx.to(dev)\nnn.DataParallel(m, device_ids=ids)",
        W8,
        {"CUDA_VISIBLE_DEVICES": "4,5"},
    )
    assert [s.cuda_indices for s in e.steps] == [(1,), (1,), (1, 0)] and e.physical_indices == (5, 4)
    assert gpulab.explain("x.to(torch.float16)", W8).steps[0].on_cpu


@pytest.mark.parametrize(
    "code, error, sentence",
    [
        ("nn.DataParallel(m, device_ids=[])", "IndexError: list index out of range", "device_ids=[] names no GPU"),
        (
            "torch.set_default_device()",
            "TypeError: set_default_device() missing 1 required positional argument",
            "needs the device",
        ),
    ],
)
def test_lines_that_raise_in_pytorch_are_reported_as_such(code, error, sentence):
    e = gpulab.explain(code, W8, {})
    assert e.error.startswith(error) and sentence in str(e) and e.physical_indices == ()


def test_every_output_of_a_described_machine_says_simulated(tmp_path):
    outputs = [
        gpulab.visible_map(GPUS, {}),
        gpulab.choose_gpus(1, GPUS),
        gpulab.explain("x.cuda()", W8, {}),
        gpulab.reserve_gpus(1, W8, reservations=tmp_path),
        gpulab.GpuPicker(W8, selected=[1]),
    ]
    for out in outputs:
        assert "SIMULATED" in str(out), type(out).__name__
        html = (
            out._repr_html_() if hasattr(out, "_repr_html_") else out.mapping_view.value + out.widget.children[0].value
        )
        assert "SIMULATED" in html, type(out).__name__
    assert str(outputs[2]).startswith(
        "Predicted by gpulab.explain on a SIMULATED machine (described GPUs, not this "
        "computer's): nothing ran on a GPU."
    )
    outputs[3].release()
    real = [gpulab.visible_map(gpulab.devices(), {}), gpulab.explain("x.cuda()", None, {})]
    assert not any("SIMULATED" in str(o) + o._repr_html_() for o in real)
    assert str(real[1]).startswith("Predicted by gpulab.explain for a machine with no GPU: nothing ran")


def test_visible_notes_odd_entries_default_order_and_grammar():
    m = gpulab.visible_map(gpulab.devices("colab-T4"), {"CUDA_VISIBLE_DEVICES": "0x1,3"})
    text = str(m)
    assert "CUDA_DEVICE_ORDER=FASTEST_FIRST (default)" in text and "'0x1' is read as GPU 0" in text
    assert "GPU 3 does not exist (there is only GPU 0)" in text and "there are 1" not in text
    assert "(default)" not in str(gpulab.visible_map(GPUS, {"CUDA_DEVICE_ORDER": "FASTEST_FIRST"}))
    assert "there are 8, GPU 0 to GPU 7" in str(gpulab.visible_map(GPUS, {"CUDA_VISIBLE_DEVICES": "9"}))
    huge = gpulab.parse_visible_devices("9" * 5000)
    assert "larger than any number CUDA holds" in huge.notes[0] and len(str(huge)) < 400


# -- random junk ------------------------------------------------------------------------------------------------------
@settings(max_examples=150, deadline=None)
@given(JUNK, JUNK, JUNK)
def test_junk_in_the_pure_helpers_is_refused_with_our_message(a, b, c):
    for call in (
        lambda: gpulab.parse_visible_devices(a),
        lambda: gpulab.visible_map(a, b),
        lambda: gpulab.visible_map(GPUS, a),
        lambda: gpulab.visible_map(GPUS, {}).physical(a),
        lambda: gpulab.set_visible_devices(a, order=b),
        lambda: gpulab.patched_environ(CUDA_VISIBLE_DEVICES=a),
        lambda: gpulab.choose_gpus(a, GPUS, taken=b, allowed=c),
        lambda: gpulab.choose_gpus(1, a, b),
        lambda: Policy(a, b, c),
        lambda: gpulab.explain(a, b, c),
        lambda: gpulab.explain("x.cuda(1)", a, b),
    ):
        try:
            call()
        except Exception as exc:
            assert_ours(exc)


@settings(max_examples=40, deadline=None)
@given(JUNK, JUNK, JUNK, JUNK)
def test_junk_in_the_picker_and_reservations_is_refused_with_our_message(tmp_path_factory, a, b, c, d):
    tmp = tmp_path_factory.mktemp("locks")
    clock = FakeClock()
    calls = (
        lambda: gpulab.GpuPicker(a, selected=b, env=c, this_kernel=False),
        lambda: gpulab.GpuPicker(W8, selected=a, policy=b, reservations=d, this_kernel=False),
        lambda: gpulab.GpuPicker(W8).select(a),
        lambda: gpulab.GpuPicker(W8).pick_free(a),
        lambda: gpulab.reserve_gpus(
            a, b, c, reservations=tmp, wait_s=d, clock=clock, sleep=lambda s: clock.advance(max(s, 10.0))
        ).release(),
    )
    for call in calls:
        try:
            call()
        except Exception as exc:
            assert_ours(exc)


_ARG = st.sampled_from(
    [
        "1",
        "-1",
        "0",
        "7",
        "None",
        "'cuda:1'",
        "'cpu'",
        "'cuda'",
        "'cuda:1,2'",
        "'meta'",
        "1.5",
        "'x'",
        "[]",
        "[0, 1]",
        "[1, 9]",
        "[1.5]",
        "[None]",
        "['cuda:0']",
        "dev",
        "torch.device('cuda', 1)",
        "torch.device('cuda')",
        "torch.device(d)",
        "torch.float16",
        "model",
        "(0, 1)",
        "{}",
        "'0'",
        "True",
        "x + 1",
        "-'a'",
        "[[0]]",
    ]
)
_CALL = st.builds(
    lambda f, args, kw: f"{f}({', '.join([*args, *(f'{k}={v}' for k, v in kw.items())])})",
    st.sampled_from(
        [
            "x.cuda",
            "x.to",
            "torch.cuda.set_device",
            "torch.set_default_device",
            "nn.DataParallel",
            "torch.ones",
            "torch.device",
            "torch.cuda.device",
            "torch.accelerator.set_device_index",
            "torch.cuda.FloatTensor",
            "model.half",
            "f",
            "torch.randn(2).cuda",
        ]
    ),
    st.lists(_ARG, max_size=3),
    st.dictionaries(
        st.sampled_from(["device", "device_ids", "output_device", "non_blocking", "dtype"]), _ARG, max_size=2
    ),
)
_LINE = st.one_of(
    _CALL,
    _CALL.map(lambda c: f"y = {c}"),
    _ARG.map(lambda a: f"dev = {a}"),
    st.tuples(_CALL, _CALL).map(lambda t: f"with {t[0]}:\n    {t[1]}"),
    st.sampled_from(["import torch", "for i in x: pass", "", "# note", "x.cuda(", "pass"]),
)


@settings(max_examples=1000, deadline=None)
@given(
    st.lists(_LINE, max_size=4).map("\n".join),
    st.sampled_from(["workshop-8", "colab-T4", NO_GPU]),
    st.sampled_from([{}, {"CUDA_VISIBLE_DEVICES": "2,3"}, {"CUDA_VISIBLE_DEVICES": ""}]),
)
@example("nn.DataParallel(model, device_ids=[])", "workshop-8", {})  # each once escaped as an IndexError
@example("torch.set_default_device()", "workshop-8", {})
def test_random_pytorch_like_code_is_explained_or_refused_with_our_message(code, machine, env):
    try:
        e = gpulab.explain(code, machine, env)
    except Exception as exc:
        assert_ours(exc)
        return
    assert str(e).startswith("Predicted by gpulab.explain") and "<table" in e._repr_html_()


def test_an_empty_device_ids_on_a_machine_without_gpus_says_what_a_gpu_machine_would_raise():
    e = gpulab.explain("nn.DataParallel(m, device_ids=[])", NO_GPU, {})
    assert e.steps[0].on_cpu and "silently wraps nothing" in str(e)
    assert "On a machine with a GPU this line raises IndexError: list index out of range" in str(e)
    assert "raises IndexError" not in str(gpulab.explain("nn.DataParallel(m)", NO_GPU, {}))


def test_no_free_gpu_on_a_described_machine_says_simulated(tmp_path):
    with pytest.raises(
        gpulab.NoFreeGpu,
        match=r"^SIMULATED machine \(described GPUs, not this computer's\): asked "
        r"for 4 free GPU\(s\) but only 3 of 8 qualify",
    ):
        gpulab.choose_gpus(4, GPUS)


def test_set_default_device_without_a_device_raises_on_any_machine():
    for machine in (NO_GPU, W8):  # torch's own signature refuses the call, GPU or not
        e = gpulab.explain("torch.set_default_device()", machine, {})
        assert e.error == "TypeError: set_default_device() missing 1 required positional argument: 'device'"
