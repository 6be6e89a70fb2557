"""Each checker's feedback for typical wrong answers names the missing idea (never the answer), answers of the wrong
kind are refused with what to give instead, and unknown exercise names are refused with the names that exist."""

from __future__ import annotations

import sys

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from torch.utils.data import DistributedSampler

import gpulab
from gpulab.exercises.check import exercise_names, find_exercise
from gpulab.exercises.feedback import Feedback
from gpulab.workload import load_digits
from tests import process_group
from tests.junk import JUNK

from .test_ch06_module import NoLossReturned, NoOptimiser
from .test_ch07_accumulate import every_micro_batch_syncs, never_syncs


def weighted_loss_criterion_left_behind(model, criterion, x, y, device):
    model.to(device)
    return criterion(model(x.to(device)), y.to(device))


def weighted_loss_unassigned_to(model, criterion, x, y, device):
    model.to(device)
    criterion.to(device)
    x.to(device)  # the moved copy is thrown away
    return criterion(model(x), y)


def weighted_loss_fixed_cuda(model, criterion, x, y, device):
    model.cuda()
    criterion.cuda()
    return criterion(model(x.cuda()), y.cuda())


def weighted_loss_item(model, criterion, x, y, device):
    return criterion(model.to(device)(x.to(device)), y.to(device)).item()


def load_direct(model, state_dict):
    model.load_state_dict(state_dict)
    return model


def load_replace_everywhere(model, state_dict):
    model.load_state_dict({k.replace("module.", ""): v for k, v in state_dict.items()})
    return model


def load_not_strict(model, state_dict):
    model.load_state_dict(state_dict, strict=False)


def rank_items_everything(dataset, rank, world_size, epoch):
    return list(range(len(dataset)))


def rank_items_no_set_epoch(dataset, rank, world_size, epoch):
    return list(DistributedSampler(dataset, num_replicas=world_size, rank=rank, seed=0))


def rank_items_no_process_group(dataset, rank, world_size, epoch):
    return list(DistributedSampler(dataset))


def rank_items_by_hand_unshuffled(dataset, rank, world_size, epoch):
    return list(range(len(dataset)))[rank::world_size]


def peak_with_nan(records):
    return max(r["process_rss_bytes"] for r in records) / 2**20


def peak_in_bytes(records):
    return float(np.nanmax([r["process_rss_bytes"] for r in records]))


def peak_mean(records):
    return float(np.nanmean([r["process_rss_bytes"] for r in records])) / 2**20


def predict_unassigned_to(model, x, device):
    model.to(device)
    x.to(device)  # the moved copy is thrown away
    return model(x)


def predict_not_moved(model, x, device):
    return model(x)


def times_faster_by(divide):
    """A times_faster that times both steps with Timer and combines the medians with ``divide(a's, b's)``."""

    def times_faster(a, b):
        from torch.utils import benchmark

        ta = benchmark.Timer("f()", globals={"f": a}).blocked_autorange(min_run_time=0.05).median
        tb = benchmark.Timer("f()", globals={"f": b}).blocked_autorange(min_run_time=0.05).median
        return divide(ta, tb)

    return times_faster


def times_faster_once(a, b):
    import time

    t0 = time.perf_counter()
    a()
    ta = time.perf_counter() - t0
    t0 = time.perf_counter()
    b()
    return (time.perf_counter() - t0) / ta


def top_by(key: str):
    """A top_allocator that profiles the step as asked and returns the operation with the largest ``key``."""

    def top_allocator(step):
        from torch.profiler import ProfilerActivity, profile

        with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
            step()
        return max(prof.key_averages(), key=lambda e: getattr(e, key)).key

    return top_allocator


def monitored(wrap: bool, mark: bool, samples_one: bool = False):
    data = load_digits()
    with gpulab.monitor("test", show=False) as mon:
        for epoch in (1, 2):
            if mark:
                mon.mark(f"epoch {epoch}")
            for _ in (
                mon.wrap(data.loader(batch_size=256), samples=1 if samples_one else None)
                if wrap
                else data.loader(batch_size=256)
            ):
                pass
    return mon


# exercise, wrong answer, words the feedback must contain (the idea and where it is taught), words it must not
def _smi_rows(csv_text):
    return [line.split(", ") for line in csv_text.strip().splitlines()[1:]]


def smi_memory_only(csv_text):  # no tie-break on utilisation
    return min(_smi_rows(csv_text), key=lambda r: int(r[1].split()[0]))[0]


def smi_row_position(csv_text):  # the row's place instead of the index column
    rows = _smi_rows(csv_text)
    return str(min(range(len(rows)), key=lambda k: (int(rows[k][1].split()[0]), int(rows[k][2].split()[0]))))


def smi_with_units(csv_text):  # int("4 MiB") fails
    return min(_smi_rows(csv_text), key=lambda r: int(r[1]))[0]


def smi_most_used(csv_text):
    return max(_smi_rows(csv_text), key=lambda r: (int(r[1].split()[0]), int(r[2].split()[0])))[0]


def _evaluate_summing_tensors(model, loader):  # chapter 05's leak: every batch's graph lives in the sum
    total_loss = 0.0
    for xb, yb in loader:
        total_loss += torch.nn.functional.cross_entropy(model(xb), yb)
    return total_loss / len(loader)


def _evaluate_keeping_a_list(model, loader):  # numbers returned, but the loss tensors kept in a list
    losses = [torch.nn.functional.cross_entropy(model(xb), yb) for xb, yb in loader]
    _evaluate_keeping_a_list.kept = losses
    return sum(loss.item() for loss in losses) / len(losses)


def _evaluate_the_last_batch(model, loader):
    with torch.no_grad():
        for xb, yb in loader:
            loss = torch.nn.functional.cross_entropy(model(xb), yb).item()
    return loss


WRONG = [
    ("ch00-ex1", "1,6", ["wrong order", "order you write them"], ["6,1"]),
    ("ch00-ex1", "6,1,3", ["also see physical GPU(s) 3"], ["6,1"]),
    ("ch00-ex1", "6", ["cuda:0 would be physical GPU 6", "physical GPU 1 is missing"], ["6,1"]),
    ("ch00-ex1", "cuda:6,1", ["no GPU at all", "does not start with a number"], ["6,1"]),
    ("ch00-ex2", {"a", "b", "c"}, ["b) import torch does not start CUDA", "uninitialised"], []),
    ("ch00-ex2", {"a", "c", "d"}, ["d) gpulab.devices() does not start CUDA", "NVML", "The environment report"], []),
    ("ch00-ex2", {"c"}, ["left out", "device count"], []),
    ("ch00-ex2", {"a", "c", "e"}, ["only reports", "When CUDA starts"], []),
    ("ch00-ex3", predict_unassigned_to, ["keep what it returns", "on meta"], []),
    ("ch00-ex3", predict_not_moved, ["came back on cpu", "move the model and the batch"], []),
    ("ch01-ex4", times_faster_by(lambda ta, tb: ta / tb), ["a's time ÷ b's time", "b's time ÷ a's time"], []),
    ("ch01-ex4", times_faster_by(lambda ta, tb: tb - ta), ["difference of times in seconds"], []),
    ("ch01-ex4", times_faster_once, ["one call is one sample", "blocked_autorange"], []),
    ("ch05-ex3", top_by("self_cpu_time_total"), ["took the most time", "self_cpu_memory_usage"], []),
    ("ch05-ex3", top_by("cpu_memory_usage"), ["largest total", "includes what the operations it called"], []),
    ("ch05-ex3", lambda step: "mm", ["with its namespace: 'aten::mm'"], []),
    ("ch05-ex4", _evaluate_summing_tensors, ["carries the autograd graph", "loss.item()"], []),
    ("ch05-ex4", _evaluate_keeping_a_list, ["carries no graph, but", "a list of tensors?"], []),
    ("ch05-ex4", _evaluate_the_last_batch, ["not the mean loss over the batches"], []),
    ("ch01-ex1", weighted_loss_criterion_left_behind, ["class weights", "buffer", "section 3"], []),
    ("ch01-ex1", weighted_loss_unassigned_to, ["returns a new tensor", "section 2"], []),
    ("ch01-ex1", weighted_loss_fixed_cuda, ["reached for CUDA", "device parameter"], []),
    ("ch01-ex2", {"b", "c"}, ["left out", "same tensor when there is nothing to change"], []),
    ("ch01-ex2", {"a", "b", "c", "f"}, ["a) torch.tensor(arr) copies"], []),
    ("ch01-ex2", {"b", "c", "e", "f"}, ["another dtype", "copy"], []),
    ("ch01-ex3", (6400 * 12800 + 6400) * 4, ["float32"], ["163,852,800"]),
    ("ch01-ex3", 6400 * 12800 * 2, ["the bias is a parameter too"], ["163,852,800"]),
    ("ch01-ex3", 6400 * 12800 + 6400, ["how many numbers"], ["163,852,800"]),
    ("ch01-ex3", 156.26, ["in bytes"], []),
    ("ch02-ex1", {"cuda:0": 2, "cuda:1": 7}, ["order of the list"], []),
    ("ch02-ex1", {"cuda:0": 0, "cuda:1": 1}, ["not physical GPU k"], []),
    (
        "ch02-ex2",
        {"0,7,-1,1": 1, "4,6,4": None, "3,,5": None, "GPU-6544817b,3": None},
        ["'0,7,-1,1'", "stops at the first entry"],
        [],
    ),
    (
        "ch02-ex2",
        {"0,7,-1,1": 7, "4,6,4": 6, "3,,5": None, "GPU-6544817b,3": None},
        ["'4,6,4'", "named twice"],
        [],
    ),
    (
        "ch02-ex2",
        {"0,7,-1,1": 7, "4,6,4": None, "3,,5": None, "GPU-6544817b,3": 3},
        ["UUIDs must go on with UUIDs"],
        [],
    ),
    ("ch02-ex3", smi_memory_only, ["less busy one"], []),
    ("ch02-ex3", smi_row_position, ["index column, not its row's place"], []),
    ("ch02-ex3", smi_with_units, ["raised ValueError", "without their units"], []),
    ("ch02-ex3", smi_most_used, ["least memory used is the freest"], []),
    ("ch03-ex1", load_direct, ["attribute name", "module. prefix"], []),
    ("ch03-ex1", load_replace_everywhere, ["only where it starts a key"], []),
    ("ch03-ex1", load_not_strict, ["nothing was loaded", "strict=False"], []),
    ("ch03-ex2", {30: [8, 8, 7, 7], 9: [3, 3, 3]}, ["Tensor.chunk"], ["[8, 8, 8, 6]"]),
    ("ch03-ex2", {30: [8, 8, 8, 6], 9: [3, 3, 3, 0]}, ["no chunk at all"], ["[3, 3, 3]"]),
    ("ch03-ex2", {30: [30] * 4, 9: [3, 3, 3]}, ["add up to 120"], []),
    ("ch04-ex1", rank_items_everything, ["every rank reads every item", "section 4"], []),
    ("ch04-ex1", rank_items_no_set_epoch, ["same order in epoch 0 and epoch 1", "set_epoch"], []),
    ("ch04-ex1", rank_items_no_process_group, ["no process group", "pass them"], []),
    ("ch04-ex1", rank_items_by_hand_unshuffled, ["index order", "shuffle"], []),
    ("ch04-ex2", [3, 7], ["same number of items", "padding"], ["[3, 7, 0]"]),
    ("ch04-ex2", [3, 7, 10], ["every world-size-th item"], ["[3, 7, 0]"]),
    ("ch05-ex2", peak_with_nan, ["NaN", "leave those readings out"], []),
    ("ch05-ex2", peak_in_bytes, ["in bytes", "MiB"], []),
    ("ch05-ex2", peak_mean, ["mean"], []),
    ("ch06-ex1", {"gpus": [1, 3], "strategy": "ddp", "precision": "16-mixed"}, ["gpus= is no longer"], ["'gpu'"]),
    ("ch06-ex1", {"accelerator": "ddp", "devices": [1, 3], "precision": "16-mixed"}, ["kind of device"], []),
    (
        "ch06-ex1",
        {"accelerator": "gpu", "devices": 2, "strategy": "ddp", "precision": "16-mixed"},
        ["a list names them"],
        [],
    ),
    (
        "ch06-ex1",
        'Trainer(accelerator="gpu", devices=[1, 3], strategy="ddp", precision=16)',
        ["historical"],
        ["16-mixed"],
    ),
    ("ch06-ex2", {"accelerator": "gpu", "devices": 2, "strategy": "dp"}, ["removed in Lightning 2.0"], []),
    ("ch06-ex2", {"accelerator": "gpu", "devices": 2, "strategy": "ddp"}, ["refuses strategy='ddp'"], ["ddp_notebook"]),
    ("ch06-ex3", {"precision": "32-true"}, ["meant the CPU", "accelerator='auto'"], []),
    ("ch06-ex3", {"accelerator": "cpu", "precision": "16-mixed"}, ["never mixed precision"], []),
    # fitted by a CPU Trainer
    ("ch06-ex4", NoLossReturned, ["Lightning calls backward() on what it returns"], ["cross_entropy"]),
    ("ch06-ex4", NoOptimiser, ["train with no optimiser"], ["Adam"]),
    ("ch07-ex1", 30, ["2 ranks still lose", "all-reduce"], ["65"]),
    ("ch07-ex1", 82, ["Interpolating the speed-ups linearly overshoots"], ["65"]),
    ("ch07-ex1", 128, ["between two printed points"], ["65"]),
    ("ch07-ex1", 32, ["between two printed points"], ["65"]),
    ("ch07-ex1", 512, ["already shows 2 ranks paying at batch 128", "between batch 32 and 128"], ["65"]),
    ("ch07-ex1", 8, ["2 ranks still lose"], ["65"]),
    ("ch07-ex1", float("inf"), ["never pay", "paying from batch 128 (1.30×)"], ["65"]),
    ("ch07-ex1", 10**400, ["never pay"], ["65"]),  # too large for a float: taken as infinity, not an OverflowError
    ("ch07-ex1", -5, ["a positive number of samples"], ["65"]),
    # run in 2 gloo ranks: the all-reduces counted by a communication hook
    ("ch07-ex2", every_micro_batch_syncs, ["once per micro-batch"], ["nullcontext"]),
    ("ch07-ex2", never_syncs, ["the gradients never left the rank"], ["nullcontext"]),
]


@pytest.mark.parametrize("name, answer, said, unsaid", WRONG, ids=[f"{w[0]}-{i}" for i, w in enumerate(WRONG)])
def test_a_typical_wrong_answer_gets_the_feedback_meant_for_it(name, answer, said, unsaid):
    feedback = gpulab.check(name, answer)
    assert feedback.verdict == "not yet" and not feedback.passed
    text = str(feedback)
    for words in said:
        assert words in text, text
    for words in unsaid:
        assert words not in text, f"gives the answer away: {text}"
    assert "read again:" in text


def test_every_exercise_has_at_least_two_typical_wrong_answers_tested():
    counts = {name: sum(w[0] == name for w in WRONG) for name in exercise_names()}
    # ch04-ex3 and ch08-ex1 run scripts under torchrun: their wrong scripts are tested in test_ddp_script.py and
    # test_resume_script.py
    assert {n: c for n, c in counts.items() if c < 2 and n not in ("ch05-ex1", "ch04-ex3", "ch08-ex1")} == {}


def test_indices_as_a_tensor_are_read_as_indices():
    def rank_items(dataset, rank, world_size, epoch):
        return torch.randperm(len(dataset), generator=torch.Generator().manual_seed(epoch))[rank::world_size]

    assert gpulab.check("ch04-ex1", rank_items).passed


@pytest.mark.parametrize(
    "wrap, mark, samples_one, said",
    [
        (False, True, False, "saw no step"),
        (True, False, False, "marks are missing"),
        (True, True, True, "not 1"),
    ],
)
def test_the_monitor_exercise_reads_what_the_loop_reported(wrap, mark, samples_one, said):
    feedback = gpulab.check("ch05-ex1", monitored(wrap, mark, samples_one))
    assert not feedback.passed and said in feedback.message, str(feedback)
    assert gpulab.check("ch05-ex1", monitored(True, True)).passed
    assert gpulab.check("ch05-ex1", monitored(True, True).summary()).passed


def test_the_monitor_exercise_left_as_given_is_not_answered_yet_not_wrong():
    # the chapter's skeleton loop reports nothing and marks nothing: after Run All it reads grey, as every untouched
    # exercise does, not as a wrong answer
    feedback = gpulab.check("ch05-ex1", monitored(False, False))
    assert feedback.verdict == "not answered yet" and "tells it nothing" in feedback.message, str(feedback)


# exercise, an answer of the wrong kind, what the message asks for instead
WRONG_TYPES = [
    ("ch00-ex1", 61, "write it as a string"),
    ("ch00-ex2", 3, "set of strings"),
    ("ch00-ex2", {"z"}, "lettered a, b, c, d, e, f"),
    ("ch05-ex3", lambda step: 3, "return the operation's name"),
    ("ch01-ex4", lambda a, b: "faster", "return a number"),
    ("ch00-ex3", lambda model, x, device: [1.0], "return the model's output, a tensor"),
    ("ch01-ex1", "weighted_loss", "should be a function"),
    ("ch01-ex1", weighted_loss_item, "return the loss tensor itself"),
    ("ch01-ex3", "163852800", "a number of bytes"),
    ("ch02-ex1", [7, 2], "give a dict"),
    ("ch02-ex1", {"cuda:0": "7", "cuda:1": 2}, "a physical GPU number (an int) or None"),
    ("ch02-ex2", {"0,7,-1,1": 7}, "answer for each of the 4 values"),
    ("ch03-ex2", [8, 8, 8, 6], "the keys 30 and 9"),
    ("ch04-ex1", lambda *a: 5, "list of item indices"),
    ("ch04-ex2", "3,7,0", "list of whole numbers"),
    ("ch05-ex1", "mon", "pass the monitor itself"),
    ("ch05-ex2", lambda records: "300", "return a number"),
    ("ch06-ex1", 5, "as a dict"),
    ("ch06-ex1", "Trainer(", "could not be read"),
    ("ch07-ex1", "65", "as a number"),
    ("ch07-ex1", float("nan"), "that is NaN"),
    ("ch07-ex1", [65], "as a number"),
    ("ch07-ex1", np.array([65.0]), "as a number"),
]


@pytest.mark.parametrize("name, answer, asked", WRONG_TYPES, ids=[f"{w[0]}-{i}" for i, w in enumerate(WRONG_TYPES)])
def test_an_answer_of_the_wrong_kind_is_refused_with_what_to_give(name, answer, asked):
    feedback = gpulab.check(name, answer)
    assert feedback.verdict == "wrong type" and asked in feedback.message, str(feedback)


@pytest.mark.gpu
def test_on_a_gpu_a_function_that_always_uses_cuda_is_told_to_use_its_device_parameter():
    feedback = gpulab.check("ch01-ex1", weighted_loss_fixed_cuda)  # runs there, so the check looks where things went
    assert not feedback.passed and "reached for CUDA" in feedback.message and "ended up on cuda" in feedback.message


@pytest.mark.parametrize("answer", [..., {"cuda:0": ..., "cuda:1": 2}])
def test_the_skeleton_is_not_answered_yet_and_does_not_raise(answer):
    feedback = gpulab.check("ch02-ex1", answer)
    assert feedback.verdict == "not answered yet" and "Replace the ..." in feedback.message


def test_a_function_whose_body_is_still_dots_is_not_answered_yet():
    def weighted_loss(model, criterion, x, y, device): ...

    assert gpulab.check("ch01-ex1", weighted_loss).verdict == "not answered yet"


@pytest.mark.parametrize(
    "name, match",
    [
        ("ch09-ex1", r"no exercise is called 'ch09-ex1'.*ch00-ex1, ch00-ex2, ch00-ex3"),
        ("ch01-ex9", r"Did you mean 'ch01-ex4' or 'ch01-ex3'\?"),
        ("ch01 ex1", r"Did you mean 'ch01-ex1'"),
        ("", r"no exercise is called ''"),
    ],
)
def test_an_unknown_exercise_is_refused_with_the_names_that_exist(name, match):
    with pytest.raises(ValueError, match=match):
        gpulab.check(name, 1)


def test_an_exercise_name_that_is_not_text_is_refused():
    with pytest.raises(TypeError, match=r"exercise=1 is a int; exercise takes text.*\"ch01-ex1\""):
        gpulab.check(1, "6,1")


def test_the_list_of_exercises_matches_the_chapter_modules():
    for name in exercise_names():
        assert find_exercise(name).name == name


def test_feedback_renders_as_text_and_html_without_the_section_once_passed():
    wrong = gpulab.check("ch00-ex1", "1,6")
    assert isinstance(wrong, Feedback) and str(wrong).startswith("✘ ch00-ex1 · ") and "read again" in str(wrong)
    assert "read again: “Two numberings" in wrong._repr_html_()
    assert "a &lt;b&gt; c" in Feedback("ch00-ex1", "t", "not yet", "a <b> c", "s")._repr_html_()
    right = gpulab.check("ch00-ex1", "6,1")
    assert right.passed and str(right).startswith("✔ ") and "read again" not in str(right)
    assert repr(right) == str(right)


def test_checking_answers_leaves_cuda_alone_and_import_gpulab_light():
    code = (
        "import sys, gpulab; assert 'torch' not in sys.modules; "
        "print(gpulab.check('ch02-ex1', {'cuda:0': 7, 'cuda:1': 2}).passed)"
    )
    out = process_group.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.stdout.strip() == "True", out.stderr
    assert not torch.cuda.is_initialized()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    answer=st.one_of(
        JUNK,
        st.dictionaries(
            st.sampled_from(
                ["accelerator", "devices", "strategy", "precision", "cuda:0", "cuda:1", "0,7,-1,1", "gpus"]
            ),
            JUNK,
            max_size=5,
        ),
    ),
    name=st.sampled_from(exercise_names()),
)
def test_whatever_is_given_as_an_answer_is_answered_with_feedback_and_never_raises(name, answer):
    feedback = gpulab.check(name, answer)
    assert isinstance(feedback, Feedback) and feedback.message and feedback.exercise == name


@pytest.mark.parametrize("answer", [65, 64.9, np.float64(65.0), np.array(65.0), torch.tensor(65.0), 52, 81])
def test_the_crossover_computed_with_numpy_or_torch_counts_as_a_number(answer):
    # a learner who fits the printed sweep with NumPy or torch ends with a 0-d array or tensor, not a float
    assert gpulab.check("ch07-ex1", answer).passed


def _skeleton_load(model, state_dict):
    # the saved keys start with "module."; the model's do not
    ...


def _strict_false_load(model, state_dict):
    model.load_state_dict(state_dict, strict=False)


def test_an_untouched_function_skeleton_is_not_answered_yet_and_strict_false_is_named():
    untouched = gpulab.check("ch03-ex1", _skeleton_load)
    assert untouched.verdict == "not answered yet" and "still the skeleton" in str(untouched), str(untouched)
    quiet = gpulab.check("ch03-ex1", _strict_false_load)
    assert quiet.verdict == "not yet" and "strict=False" in str(quiet), str(quiet)
