"""explain()'s predictions against what PyTorch really does (tests/placement/explain_evidence.py).

On GPUs (``make test-gpu``): every snippet of the corpus runs in fresh interpreters under several
CUDA_VISIBLE_DEVICES / CUDA_DEVICE_ORDER values, and the physical GPU of each statement (by UUID) or its error must be
the one explain() predicts from NVML's view of the same machine. Here: the corpus and the comparison are checked, and
the no-GPU predictions are run against PyTorch for real.
"""

from __future__ import annotations

import pytest

from gpulab.machine.cuda import cuda_gpu_count
from gpulab.machine.simulated import SimulatedGpuReader
from gpulab.placement.device_rules import explain
from tests.seams import requires_gpus

from .explain_evidence import CHAPTER_02, COUNTS_PROPERTY, KINDS, corpus, corpus_counts, disagreements, run, statements

NO_GPU = SimulatedGpuReader(None)  # a machine with no GPU, as explain() is asked about it


def _gpus(preset: str):
    """The preset's GPUs, as the corpus is built from them; explain() is asked about the preset itself."""
    reader = SimulatedGpuReader(preset)
    return [reader.info(i, processes=False) for i in range(reader.count())]


def _kinds(snippets) -> set[str]:
    codes = {s.code for s in snippets}
    return {kind for k in range(9) for kind, code, _ in statements(k) if code in codes}


# -- the corpus ---------------------------------------------------------------------------------------------------
def test_one_gpu_gets_thirty_snippets_of_every_kind_under_every_kind_of_environment():
    one = _gpus("colab-T4")
    snippets = [s for s in corpus(one) if s.needs <= 1]
    assert len(snippets) >= 30 and len(set(snippets)) == len(snippets)
    assert _kinds(snippets) == set(KINDS)
    envs = {s.env for s in snippets}
    values = {dict(e).get("CUDA_VISIBLE_DEVICES") for e in envs}
    assert {None, "", "0,0", "0", "0,-1,0", one[0].uuid[:12]} <= values  # unset, hidden, invalid, cut short, by UUID
    assert {dict(e).get("CUDA_DEVICE_ORDER") for e in envs} >= {"PCI_BUS_ID", "FASTEST_FIRST"}
    assert any(s.source == "chapter 02" for s in snippets)


def test_two_gpus_add_reordered_lists_and_dataparallel_over_both():
    two = _gpus("kaggle-2xT4")
    multi = [s for s in corpus(two) if s.needs >= 2]
    assert any("device_ids=[1, 0]" in s.code for s in multi)
    values = {dict(s.env).get("CUDA_VISIBLE_DEVICES") for s in corpus(two)}
    assert "1,0" in values and f"{two[1].uuid[:12]},{two[0].uuid[:12]}" in values


def test_a_server_gets_chapter_02_s_own_snippets_and_mixed_models_skip_fastest_first():
    assert set(CHAPTER_02) <= set(corpus(_gpus("workshop-8")))
    mixed = corpus(_gpus("two-gpus-mig"))  # an A100 and an RTX 3090: CUDA may order them fastest first
    assert all(dict(s.env).get("CUDA_DEVICE_ORDER") != "FASTEST_FIRST" for s in mixed)


@pytest.mark.parametrize("preset", ["colab-T4", "kaggle-2xT4", "workshop-8"])
def test_explain_reads_every_snippet_of_the_corpus(preset):
    for s in corpus(_gpus(preset)):
        assert explain(s.code, preset, s.environ).steps, str(s)


# -- the comparison -----------------------------------------------------------------------------------------------
def test_agreement_and_each_kind_of_disagreement_are_told_apart():
    gpus = _gpus("kaggle-2xT4")
    e = explain("torch.cuda.set_device(1)\ny = x.cuda()\nz = x.cuda(0)\nw = x.cuda(5)", "kaggle-2xT4", {})
    u0, u1 = gpus[0].uuid, gpus[1].uuid
    real = [
        {"state": True, "devices": [u1]},
        {"devices": [u1]},
        {"devices": [u0]},
        {"error": "AcceleratorError: CUDA error: invalid device ordinal"},
    ]
    assert disagreements(e, real) == []
    wrong_gpu = [real[0], {"devices": [u0]}, *real[2:]]
    assert disagreements(e, wrong_gpu) == [
        f"statement 2 `{e.steps[1].code}`: predicted ['{u1}'], PyTorch used ['{u0}']"
    ]
    assert (
        "predicted no error, PyTorch raised RuntimeError: boom"
        in disagreements(e, [{"error": "RuntimeError: boom"}])[0]
    )
    assert "PyTorch raised nothing" in disagreements(e, [*real[:3], {"devices": [u0]}])[0]
    assert "IndexError" in disagreements(e, [*real[:3], {"error": "IndexError: invalid device ordinal"}])[0]
    assert disagreements(e, real[:2])[-1] == "PyTorch ran 2 statement(s) where 4 were predicted"
    on_cpu = explain("with torch.cuda.device(1):\n    o = torch.ones(2)", "kaggle-2xT4", {})
    assert disagreements(on_cpu, [{"state": True, "devices": [u1]}, {"cpu": True}]) == []
    assert "predicted the CPU" in disagreements(on_cpu, [{"state": True, "devices": [u1]}, {"devices": [u1]}])[0]


def test_a_prediction_s_message_must_start_pytorch_s_first_line():
    nothing = explain("y = x.cuda(0)", NO_GPU, {})  # explain adds its own note after PyTorch's first sentence
    real = "RuntimeError: Found no NVIDIA driver on your system. Please check that you have an NVIDIA GPU and ..."
    assert disagreements(nothing, [{"error": real}]) == []
    assert disagreements(nothing, [{"error": "RuntimeError: No CUDA GPUs are available"}])


# What torch 2.11 did on one H100 (driver 580) where explain() disagreed before (make-test-gpu.log of the 2026-11-26
# run; evidence/2026-11-26-h100-80gb-hbm3.json): 45 snippets raised AcceleratorError, 9 under '0,0' the driver's 101.
H100_RAISED = {
    ("", "y = x.cuda(1)"): ["AcceleratorError: CUDA error: invalid device ordinal"],
    ("0", "torch.cuda.set_device(1)\ny = x.cuda()\nz = x.cuda(0)"): [
        "AcceleratorError: CUDA error: invalid device ordinal"
    ],
    ("", "torch.set_default_device('cuda:1')\ny = torch.ones(2)"): [
        None,
        "AcceleratorError: CUDA error: invalid device ordinal",
    ],
    ("0,0", "y = x.cuda(0)"): [
        "RuntimeError: Unexpected error from cudaGetDeviceCount(). Did you run some cuda "
        "functions before calling NumCudaDevices() that might have already set an error? Error "
        "101: invalid device ordinal"
    ],
    ("0,0", "with torch.device('cuda:0'):\n    y = torch.zeros(2)\nz = torch.zeros(2)"): [
        None,
        "RuntimeError: Unexpected error from cudaGetDeviceCount(). Did you run some cuda functions before "
        "calling NumCudaDevices() that might have already set an error? Error 101: invalid device ordinal",
    ],
}


@pytest.mark.parametrize("visible, code", list(H100_RAISED))
def test_what_torch_2_11_raised_on_one_h100_is_what_explain_predicts(visible, code):
    env = {"CUDA_VISIBLE_DEVICES": visible} if visible else {}
    records = [{"state": True, "devices": []} if e is None else {"error": e} for e in H100_RAISED[visible, code]]
    # one GPU: the messages do not depend on its model
    assert disagreements(explain(code, "colab-T4", env, torch_version="2.11.0+cu130"), records) == []


@pytest.mark.skipif(cuda_gpu_count() > 0, reason="this machine has a GPU: the GPU tests below run instead")
def test_without_a_gpu_every_prediction_matches_pytorch_here():
    """The pipeline for real, on the machine without a GPU: PyTorch raises, wraps nothing, or stays on the CPU."""
    snippets = [s for s in corpus([]) if dict(s.env).get("CUDA_VISIBLE_DEVICES") in (None, "")][:40]
    outcomes = run(snippets)
    problems = [f"{s}: {p}" for s in snippets for p in disagreements(explain(s.code, NO_GPU, s.environ), outcomes[s])]
    assert len(snippets) >= 20 and not problems, "\n".join(problems)


# -- on GPUs --------------------------------------------------------------------------------------------------------
def _this_machine():
    from gpulab.machine.inventory import devices

    gpus = list(devices(processes=False).gpus)
    if any(g.mig_devices for g in gpus):
        pytest.skip("a GPU is in MIG mode: the corpus does not describe MIG slices yet")
    return gpus


def _compare_with_pytorch(snippets, record_property) -> None:
    """Run the snippets, record the counts for make test-gpu's evidence (a JUnit property, ``corpus_counts``), and
    fail naming every snippet that disagrees with explain() asked about this machine."""
    outcomes = run(snippets)
    per_snippet = {s: disagreements(explain(s.code, None, s.environ), outcomes[s]) for s in snippets}
    disagreeing = [f"{s}: {'; '.join(found)}" for s, found in per_snippet.items() if found]
    record_property(COUNTS_PROPERTY, corpus_counts(len(snippets), disagreeing))
    assert not disagreeing, f"{len(disagreeing)} of {len(snippets)} snippets disagree:\n" + "\n".join(disagreeing)


@pytest.mark.gpu
@requires_gpus(1)
def test_explain_agrees_with_pytorch_on_this_machine_s_gpus(record_property):
    gpus = _this_machine()
    snippets = [s for s in corpus(gpus) if s.needs <= 1]
    assert len(snippets) >= 30
    _compare_with_pytorch(snippets, record_property)


@pytest.mark.multigpu
@requires_gpus(2)
def test_explain_agrees_with_pytorch_across_several_gpus(record_property):
    gpus = _this_machine()
    _compare_with_pytorch([s for s in corpus(gpus) if s.needs >= 2], record_property)
