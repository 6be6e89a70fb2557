"""explain(): where each statement lands on a described machine, why, and the errors PyTorch really raises."""
from __future__ import annotations

import pytest
import torch

from gpulab.placement.explain import explain
from gpulab.machine.simulated import SimulatedGpuReader

W8 = SimulatedGpuReader("workshop-8")
SEED_ENV = {"CUDA_VISIBLE_DEVICES": "2,3,4,5"}


def test_seed_000_cuda_1_under_2345_runs_on_physical_gpu_3():
    e = explain("model.cuda(1)", W8, SEED_ENV)
    assert e.error is None and e.physical_indices == (3,)
    assert "cuda:1 is physical GPU 3" in str(e) and "entry 1 (from 0) of CUDA_VISIBLE_DEVICES='2,3,4,5'" in str(e)
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
    assert "current device, cuda:1" in e.steps[1].sentence


def test_seed_002_device_context_corrected():
    e = explain("""
        with torch.cuda.device(1):
            a = torch.cuda.FloatTensor(2, 3)
            b = torch.FloatTensor(2, 3).cuda()
            d = torch.randn(2, 3).cuda(0)
            o = torch.ones(2, 3)
        z = torch.randn(2).cuda()
    """, W8, {})
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
    assert e.physical_indices == (4, 5) and "must already be on cuda:2" in str(e)
    # seed 000 §5: reorder the visible list to choose where the model lives; device_ids default to all visible GPUs
    assert explain("nn.DataParallel(model)", W8, {"CUDA_VISIBLE_DEVICES": "2,1,3"}).physical_indices == (2, 1, 3)
    assert explain("nn.DataParallel(model, device_ids=[2, 5])", W8, SEED_ENV).error == "AssertionError: Invalid device id"
    quiet = explain("nn.DataParallel(model, device_ids=[2, 3])", [], {})
    assert quiet.error is None and quiet.steps[0].on_cpu and "silently" in str(quiet)


@pytest.mark.parametrize("code, env, error", [
    ("x.cuda(4)", SEED_ENV, "RuntimeError: CUDA error: invalid device ordinal"),
    ("x.cuda()", {"CUDA_VISIBLE_DEVICES": ""}, "RuntimeError: No CUDA GPUs are available"),
    ("x.cuda(-1)", {}, "RuntimeError: Device index must not be negative"),
    ("x.cuda('cpu')", {}, "RuntimeError: Invalid device, must be cuda device"),
    ("torch.cuda.set_device('cpu')", {}, "ValueError: Expected a cuda device, but got: cpu"),
    ("torch.cuda.set_device('cuda')", {}, "ValueError: Expected a torch.device with a specified index"),
])
def test_errors(code, env, error):
    e = explain(code, W8, env)
    assert e.error is not None and e.error.startswith(error) and e.physical_indices == ()


def test_execution_stops_at_the_first_error():
    e = explain("x.cuda(9)\ny.cuda(0)", W8, SEED_ENV)
    assert len(e.steps) == 1 and e.error


def test_no_gpu_machine_says_so():
    e = explain("model.cuda()", SimulatedGpuReader(None), {})
    assert e.error.startswith("RuntimeError: Found no NVIDIA driver") and "No GPU was found on this machine" in str(e)


def test_set_device_negative_is_a_no_op_and_bare_context_does_nothing():
    e = explain("torch.cuda.set_device(-1)\ntorch.cuda.device(1)\nx.cuda()", W8, {})
    assert e.physical_indices == (0,) and "no-op" in e.steps[0].sentence and "does nothing" in e.steps[1].sentence
    e = explain("with torch.cuda.device(None):\n    x.cuda()", W8, {})
    assert e.physical_indices == (0,) and "no-op" in e.steps[0].sentence


@pytest.mark.parametrize("code, match", [
    ("model.cuda(", r"explain\(\) needs Python statements.*does not parse"),
    ("for i in x: pass", r"explain\(\) reads device calls, one per line; it cannot follow"),
    ("model.half()", r"explain\(\) does not know model.half\(…\)"),
    ("with open('f'):\n  pass", r"explain\(\) does not know open"),
])
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
    assert e.error == f"RuntimeError: {str(real.value).splitlines()[0]}"
    assert "PyTorch refuses the argument" in str(e)


@pytest.mark.parametrize("code", ["torch.set_default_device('cuda')", "torch.device('cuda:1')",
                                  "with torch.device('cuda'):\n    x = torch.ones(2)"])
def test_naming_a_gpu_for_later_raises_nothing_even_without_one(code):
    exec(code.split("\n")[0] + ("\n    pass" if code.startswith("with") else ""), {"torch": torch})
    torch.set_default_device(None)  # for real, on this machine (with or without a GPU): PyTorch accepted it
    e = explain(code, [], {})
    assert e.steps[0].error is None, str(e)
    assert "the first tensor created there raises RuntimeError: Found no NVIDIA driver" in e.steps[0].sentence
    if code.startswith("with"):  # the factory inside the block is what raises
        assert e.steps[1].error.startswith("RuntimeError: Found no NVIDIA driver")
