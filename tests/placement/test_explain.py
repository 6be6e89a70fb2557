"""explain(): where each statement lands on a described machine, and the errors PyTorch really raises.

Assertions are about behaviour — the physical GPU (index and UUID), the error class, and the message wherever this
machine can make PyTorch raise it for real — not about explain()'s own sentences. Messages that only a GPU machine
can produce (an invalid ordinal, DataParallel's id check) are compared with PyTorch's on GPUs by
tests/placement/test_explain_on_gpus.py.
"""

from __future__ import annotations

import pytest
import torch

from gpulab.machine.simulated import SimulatedGpuReader
from gpulab.placement.device_rules import explain

W8 = SimulatedGpuReader("workshop-8")
SEED_ENV = {"CUDA_VISIBLE_DEVICES": "2,3,4,5"}


def _real_error(code: str) -> str:
    """What PyTorch raises for ``code`` on this machine, as explain() reports errors (class: first line)."""
    namespace = {"torch": torch, "nn": torch.nn, "x": torch.ones(2), "model": torch.nn.Linear(2, 2)}
    try:
        exec(code, namespace)
    except Exception as exc:  # noqa: BLE001 - any refusal is what is compared
        return f"{type(exc).__name__}: {str(exc).splitlines()[0]}"
    finally:
        torch.set_default_device(None)
    raise AssertionError(f"{code!r} raised nothing on this machine")


def test_seed_000_cuda_1_under_2345_runs_on_physical_gpu_3():
    e = explain("model.cuda(1)", W8, SEED_ENV)
    [gpu] = e.steps[0].physical
    assert e.error is None and e.physical_indices == (3,) and e.steps[0].cuda_indices == (1,)
    assert gpu.uuid == W8.info(3).uuid and gpu.cuda_index == 1
    assert "<table" in e._repr_html_()


@pytest.mark.parametrize("arg", ["'cuda:1,2'", "'cuda:2,1'"])
def test_seed_000_multi_gpu_device_strings_raise_pytorchs_own_error(arg):
    e = explain(f"model.cuda({arg})", W8, SEED_ENV)
    with pytest.raises(RuntimeError) as real:  # the message explain() reports is the one torch raises, here, for real
        torch.device(eval(arg))
    assert e.error == f"RuntimeError: {real.value}" and e.error.startswith("RuntimeError: Invalid device string")
    assert e.physical_indices == ()
    assert explain(f"torch.cuda.set_device({arg})", W8, SEED_ENV).error == e.error


def test_set_device_then_explicit_index_wins():
    e = explain("torch.cuda.set_device(1)\nmodel.cuda()\nloss.cuda(0)", W8, SEED_ENV)
    assert [s.physical[0].physical_index for s in e.steps] == [3, 3, 2]
    assert [s.cuda_indices for s in e.steps] == [(1,), (1,), (0,)]


def test_seed_002_device_context_corrected():
    e = explain(
        """
        with torch.cuda.device(1):
            a = torch.cuda.FloatTensor(2, 3)
            b = torch.FloatTensor(2, 3).cuda()
            d = torch.randn(2, 3).cuda(0)
            o = torch.ones(2, 3)
        z = torch.randn(2).cuda()
    """,
        W8,
        {},
    )
    where = [(s.cuda_indices, s.on_cpu) for s in e.steps]
    # block entry, a and b on cuda:1; d on cuda:0 (not 2, as the seed's check says); ones() on the CPU; after: cuda:0
    assert where == [((1,), False), ((1,), False), ((1,), False), ((0,), False), ((), True), ((0,), False)]


def test_torch_device_context_and_default_device_move_factories():
    e = explain("with torch.device('cuda:2'):\n    x = torch.ones(3)\ny = torch.ones(3)", W8, {})
    assert [s.cuda_indices for s in e.steps] == [(2,), (2,), ()] and e.steps[2].on_cpu
    e = explain("torch.set_default_device('cuda')\ntorch.cuda.set_device(4)\nx = torch.zeros(2)", W8, {})
    assert e.physical_indices == (4,)
    assert explain("torch.accelerator.set_device_index(3)\nm.cuda()", W8, SEED_ENV).physical_indices == (5,)


def test_to_moves_only_with_a_device():
    assert explain("x.to('cuda:3')", W8, SEED_ENV).physical_indices == (5,)
    assert explain("x.to(torch.device('cuda', 0))", W8, SEED_ENV).physical_indices == (2,)
    assert explain("x.to(torch.float16)", W8, SEED_ENV).steps[0].on_cpu


def test_dataparallel_maps_device_ids_and_checks_them():
    e = explain("model = nn.DataParallel(model, device_ids=[2, 3])", W8, SEED_ENV)
    assert e.physical_indices == (4, 5) and e.steps[0].cuda_indices == (2, 3)
    assert [d.uuid for d in e.steps[0].physical] == [W8.info(4).uuid, W8.info(5).uuid]
    # seed 000 §5: reorder the visible list to choose where the model lives; device_ids default to all visible GPUs
    assert explain("nn.DataParallel(model)", W8, {"CUDA_VISIBLE_DEVICES": "2,1,3"}).physical_indices == (2, 1, 3)
    bad = explain("nn.DataParallel(model, device_ids=[2, 5])", W8, SEED_ENV)
    assert bad.error.startswith("AssertionError:") and bad.physical_indices == ()
    # no GPU: PyTorch wraps nothing and raises nothing (run for real here), and explain() agrees
    real = torch.nn.DataParallel(torch.nn.Linear(2, 2), device_ids=[2, 3])
    quiet = explain("nn.DataParallel(model, device_ids=[2, 3])", SimulatedGpuReader(None), {})
    assert real.device_ids == [] and quiet.error is None and quiet.steps[0].on_cpu


@pytest.mark.parametrize(
    "code",
    [
        "x.cuda(-1)",
        "x.cuda('cpu')",
        "model.cuda(-1)",
        "torch.cuda.set_device('cpu')",
        "torch.cuda.set_device('cuda')",
        "x.to('gpu')",
        "torch.ones(2, device='cuda:x')",
    ],
)
def test_refusals_before_any_gpu_is_touched_are_pytorch_s_own(code):
    # PyTorch refuses these arguments before it looks for a GPU, so this machine raises the very same error
    e = explain(code, W8, SEED_ENV)
    assert e.error == _real_error(code) and e.physical_indices == ()


@pytest.mark.parametrize(
    "code, env, error_class",
    [
        ("x.cuda(4)", SEED_ENV, "AcceleratorError"),  # 4 visible GPUs: cuda:4 does not exist (torch >= 2.8's class)
        ("x.cuda()", {"CUDA_VISIBLE_DEVICES": ""}, "RuntimeError"),  # every GPU hidden
    ],
)
def test_errors_that_need_the_described_gpus(code, env, error_class):
    e = explain(code, W8, env)
    assert e.error.split(":")[0] == error_class and e.physical_indices == () and not e.steps[0].cuda_indices
    assert explain(code, W8, {"CUDA_VISIBLE_DEVICES": "0,1,2,3,4,5"}).physical_indices  # with GPUs enough: no error


def test_execution_stops_at_the_first_error():
    e = explain("x.cuda(9)\ny.cuda(0)", W8, SEED_ENV)
    assert len(e.steps) == 1 and e.error


@pytest.mark.skipif(torch.cuda.device_count() > 0, reason="compares with PyTorch on a machine without a GPU")
@pytest.mark.parametrize("code", ["model.cuda()", "x.cuda(1)", "torch.cuda.set_device(0)", "x.to('cuda')"])
def test_a_machine_without_gpus_raises_what_pytorch_raises_here(code):
    e = explain(code, SimulatedGpuReader(None), {})
    real = _real_error(code)  # this machine has no GPU: PyTorch's own message, for real
    assert e.error.split(".")[0] == real.split(".")[0] and e.physical_indices == ()


def test_set_device_negative_is_a_no_op_and_bare_context_does_nothing():
    e = explain("torch.cuda.set_device(-1)\ntorch.cuda.device(1)\nx.cuda()", W8, {})
    assert e.physical_indices == (0,) and [s.cuda_indices for s in e.steps[:2]] == [(), ()]
    assert not any(s.error for s in e.steps)
    e = explain("with torch.cuda.device(None):\n    x.cuda()", W8, {})
    assert e.physical_indices == (0,) and e.steps[0].cuda_indices == ()


@pytest.mark.parametrize(
    "code, match",
    [
        ("model.cuda(", r"explain\(\) needs Python statements.*does not parse"),
        ("for i in x: pass", r"explain\(\) reads device calls, one per line; it cannot follow"),
        ("model.half()", r"explain\(\) does not know model.half\(…\)"),
        ("with open('f'):\n  pass", r"explain\(\) does not know open"),
    ],
)
def test_unreadable_code_is_refused_with_what_it_can_read(code, match):
    with pytest.raises(ValueError, match=match):
        explain(code, W8, {})


def test_default_reader_honours_simulation(monkeypatch):
    monkeypatch.setenv("GPULAB_SIMULATE_GPUS", "kaggle-2xT4")
    assert explain("x.cuda(1)", env={}).physical_indices == (1,)


@pytest.mark.parametrize("code", ["model.to(torch.device('cuda:1,2'))", "torch.ones(2, device=torch.device('gpu'))"])
def test_a_bad_device_built_inside_the_call_is_reported_not_raised(code):
    e = explain(code, W8, SEED_ENV)  # the argument is built by torch.device too; its refusal is a step, like the rest
    with pytest.raises(RuntimeError) as real:
        eval(code.split("(", 1)[1].rsplit(")", 1)[0].split("=")[-1], {"torch": torch})
    assert e.error == f"RuntimeError: {str(real.value).splitlines()[0]}" and e.physical_indices == ()


@pytest.mark.skipif(torch.cuda.device_count() > 0, reason="compares with PyTorch on a machine without a GPU")
@pytest.mark.parametrize(
    "naming, first_tensor",
    [
        ("torch.set_default_device('cuda')", "x = torch.ones(2)"),
        ("dev = torch.device('cuda:1')", "x = torch.ones(2, device=torch.device('cuda:1'))"),
        ("with torch.device('cuda'):", "    x = torch.ones(2)"),
    ],
)
def test_naming_a_gpu_for_later_raises_nothing_even_without_one(naming, first_tensor):
    exec(naming + ("\n    pass" if naming.startswith("with") else ""), {"torch": torch})
    torch.set_default_device(None)  # for real, on this machine without a GPU: PyTorch accepted the name
    e = explain(f"{naming}\n{first_tensor}", SimulatedGpuReader(None), {})
    assert e.steps[0].error is None, str(e)
    # the first tensor made there is the step that raises, with the message this machine really gives
    assert e.steps[1].error.split(".")[0] == _real_error(f"{naming}\n{first_tensor}").split(".")[0]


# -- what a one-GPU machine raises, by torch release (seen on one H100 with torch 2.11: evidence/, 2026-11-26) ---------
T4 = SimulatedGpuReader("colab-T4")  # one GPU, as most learners have it
PAST_THE_ONE_GPU = [
    "y = x.cuda(1)",
    "model.cuda(1)",
    "y = x.to('cuda:1')",
    "torch.cuda.set_device(1)",
    "torch.accelerator.set_device_index(1)",
    "with torch.cuda.device(1):\n    y = x.cuda()",
    "torch.set_default_device('cuda:1')\ny = torch.ones(2)",
]


@pytest.mark.parametrize("code", PAST_THE_ONE_GPU)
@pytest.mark.parametrize(
    "version, error_class",
    [
        ("2.11.0+cu130", "AcceleratorError"),
        ("2.8.0", "AcceleratorError"),
        ("2.14.1", "AcceleratorError"),
        ("2.7.1+cu126", "RuntimeError"),
        ("2.5.1", "RuntimeError"),
    ],
)
def test_cuda_1_on_one_gpu_raises_the_class_of_the_torch_release(code, version, error_class):
    """torch 2.11 raised torch.AcceleratorError (a RuntimeError subclass, new in 2.8) for all of these on an H100."""
    e = explain(code, T4, {}, torch_version=version)
    assert e.error == f"{error_class}: CUDA error: invalid device ordinal" and e.physical_indices == ()


def test_without_a_version_the_class_is_the_installed_torch_s():
    expected = "AcceleratorError" if hasattr(torch, "AcceleratorError") else "RuntimeError"
    assert explain("x.cuda(1)", T4, {}).error == f"{expected}: CUDA error: invalid device ordinal"
    assert issubclass(torch.AcceleratorError, RuntimeError)  # torch 2.14 here has it, even without a driver


def test_dataparallel_checks_the_ids_itself_whatever_the_release():
    for version in ("2.7.1", "2.11.0"):
        bad = explain("nn.DataParallel(model, device_ids=[0, 1])", T4, {}, torch_version=version)
        assert bad.error == "AssertionError: Invalid device id"


@pytest.mark.parametrize(
    "code",
    [
        "y = x.cuda(0)",
        "model.cuda(0)",
        "y = x.to('cuda:0')",
        "torch.cuda.set_device(0)",
        "torch.accelerator.set_device_index(0)",
        "with torch.device('cuda:0'):\n    y = torch.zeros(2)",
    ],
)
@pytest.mark.parametrize("twice", ["0,0", "{uuid},{uuid}"])
def test_a_gpu_named_twice_gets_the_driver_s_error(code, twice):
    """The H100's driver (580) refused to count its GPUs under CUDA_VISIBLE_DEVICES='0,0': error 101, which torch
    reports as a RuntimeError whatever its release (make-test-gpu.log of the 2026-11-26 run)."""
    env = {"CUDA_VISIBLE_DEVICES": twice.format(uuid=T4.info(0, processes=False).uuid[:12])}
    for version in ("2.7.1", "2.11.0+cu130"):
        e = explain(code, T4, env, torch_version=version)
        assert e.error == (
            "RuntimeError: Unexpected error from cudaGetDeviceCount(). Did you run some cuda functions "
            "before calling NumCudaDevices() that might have already set an error? Error 101: invalid "
            "device ordinal"
        ), e
        assert e.physical_indices == ()
    wraps = explain("nn.DataParallel(model, device_ids=[0])", T4, env)  # device_count() is 0: it wraps nothing
    assert wraps.error is None and wraps.steps[0].on_cpu


def test_every_gpu_hidden_is_still_no_cuda_gpus():
    assert explain("x.cuda(0)", T4, {"CUDA_VISIBLE_DEVICES": ""}).error == "RuntimeError: No CUDA GPUs are available"
    hidden = explain("x.cuda(0)", T4, {"CUDA_VISIBLE_DEVICES": "-1,0"})
    assert hidden.error == "RuntimeError: No CUDA GPUs are available"


@pytest.mark.parametrize("version", ["nightly", "", "2"])
def test_a_torch_version_it_cannot_read_is_refused(version):
    with pytest.raises(
        ValueError,
        match=rf"torch_version={version!r} is not a torch release: give it as "
        r"torch.__version__ prints it",
    ):
        explain("x.cuda(1)", T4, {}, torch_version=version)
