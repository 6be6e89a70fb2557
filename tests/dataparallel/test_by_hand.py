"""DataParallel by hand: the five steps give the gradients of one full-batch pass; wrong input is refused with the
reason. Runs on CPU threads here,
on PyTorch's own primitives where GPUs exist (the multigpu tests)."""

from __future__ import annotations

import threading

import pytest
import torch

from gpulab.dataparallel.by_hand import data_parallel_step, resolve_devices, scatter_batch
from gpulab.workload import mlp
from gpulab.workload.models import cnn
from tests.dataparallel.gradients import compare_gradients, full_batch_gradients, gradients
from tests.seams import requires_gpus


def _batch(n: int, features: int = 16, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    return torch.randn(n, features, generator=g), torch.randint(0, 10, (n,), generator=g)


@pytest.mark.parametrize("batch, replicas", [(10, 4), (8, 2), (7, 3), (3, 4), (1, 2), (12, 1)])
def test_by_hand_gradients_equal_one_full_batch_pass(batch, replicas):
    model = mlp(16, 32)
    x, y = _batch(batch)
    reference = full_batch_gradients(model, x, y)
    step = data_parallel_step(model, x, y, ["cpu"] * replicas)
    result = compare_gradients(gradients(model), reference)
    assert result.allclose and result.relative_difference < 1e-5, result
    assert step.chunk_sizes == tuple(len(c) for c in x.chunk(replicas)) and sum(step.chunk_sizes) == batch
    assert len(step.devices) == len(step.chunk_sizes) == len(step.replica_grad_norms)  # 3 rows on 4: 3 replicas
    assert step.reduce_error < 1e-6 and not step.torch_primitives
    assert f"weighs {round(1 / batch, 6):.4g} in the total (1/{batch})" in str(step)


def test_the_articles_cnn_too_with_dropout_off():
    model = cnn((4, 8), 16).eval()  # dropout would draw other masks in each replica than in one pass
    g = torch.Generator().manual_seed(1)
    x, y = torch.rand(7, 1, 28, 28, generator=g), torch.randint(0, 10, (7,), generator=g)
    reference = full_batch_gradients(model, x, y)
    data_parallel_step(model, x, y, ["cpu", "cpu", "cpu"])
    assert compare_gradients(gradients(model), reference).allclose


def test_chunk_sizes_are_those_of_torchs_own_scatter():
    for batch in range(1, 20):
        for n in range(1, 6):
            x = torch.arange(batch)
            ours = [len(c) for c in scatter_batch(x, [torch.device("cpu")] * n)]
            # torch.cuda.comm.scatter still accepts -1 for "the CPU" in its forward: the sizes DataParallel uses
            theirs = [len(c) for c in torch.nn.parallel.comm.scatter(x, [-1] * n)]
            assert ours == theirs, (batch, n)
    assert [len(c) for c in scatter_batch(torch.arange(9), [torch.device("cpu")] * 4)] == [3, 3, 3]


def test_replica_0_shares_the_buffers_so_batchnorm_statistics_come_from_its_chunk_alone():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.BatchNorm1d(3), torch.nn.Linear(3, 2))
    alone = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.BatchNorm1d(3), torch.nn.Linear(3, 2))
    alone.load_state_dict(model.state_dict())
    x, y = torch.randn(8, 4), torch.randint(0, 2, (8,))
    data_parallel_step(model, x, y, ["cpu", "cpu"])
    alone(x[:4])  # what replica 0 saw
    assert torch.allclose(model[1].running_mean, alone[1].running_mean)
    assert model[1].num_batches_tracked.item() == 1


def test_tied_weights_stay_tied_in_the_replicas():
    class Tied(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.a = torch.nn.Linear(6, 6)
            self.b = self.a  # the same layer twice

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.b(torch.relu(self.a(x)))

    torch.manual_seed(0)
    model, (x, y) = Tied(), _batch(5, features=6)
    reference = full_batch_gradients(model, x, y % 6)
    data_parallel_step(model, x, y % 6, ["cpu", "cpu"])
    assert compare_gradients(gradients(model), reference).allclose


@pytest.mark.parametrize(
    "devices, match",
    [
        ([], r"devices is a list with one entry per replica, like \['cuda:0', 'cuda:1'\]"),
        ("cpu", r"devices is a list with one entry per replica, .*; got 'cpu'"),
        (["cpu", "gpu0"], r"holds something that is not a device name"),
        (["cpu", "meta"], r"must be all CUDA GPUs or all the CPU .* got cpu, meta"),
    ],
)
def test_device_lists_that_make_no_sense_are_refused(devices, match):
    with pytest.raises(ValueError, match=match):
        resolve_devices(devices)


def test_gpus_this_process_does_not_have_are_named(monkeypatch):
    import gpulab.machine.cuda as cuda

    monkeypatch.setattr(cuda, "cuda_gpu_count", lambda: 1)  # our own seam: how many GPUs torch reports
    with pytest.raises(
        ValueError,
        match=r"cuda:1 do\(es\) not exist: this process sees 1 CUDA GPU\(s\). .* "
        r"pass \['cpu'\] \* 2",
    ):
        resolve_devices(["cuda:0", "cuda:1"])
    with pytest.raises(ValueError, match=r"a GPU is listed twice in cuda:0, cuda:0: DataParallel keeps one replica"):
        resolve_devices(["cuda:0", "cuda:0"])


def test_a_module_not_on_the_first_device_gets_dataparallels_message_and_the_fix():
    model = mlp(16, 8).to("meta")
    x, y = _batch(4)
    with pytest.raises(
        RuntimeError,
        match=r"module must have its parameters and buffers on device cpu \(devices\[0\]\) "
        r"but found one of them on device: meta. Move it first with module.to\('cpu'\)",
    ):
        data_parallel_step(model, x, y, ["cpu", "cpu"])


@pytest.mark.parametrize(
    "inputs, targets, match",
    [
        (torch.zeros(0, 16), torch.zeros(0, dtype=torch.long), "inputs must be a batch"),
        (torch.tensor(1.0), torch.zeros(1, dtype=torch.long), "inputs must be a batch"),
        (
            torch.zeros(4, 16),
            torch.zeros(3, dtype=torch.long),
            r"one target per input .* got \(3,\) for inputs of "
            r"shape \(4, 16\)",
        ),
    ],
)
def test_batches_that_cannot_be_split_are_refused(inputs, targets, match):
    with pytest.raises(ValueError, match=match):
        data_parallel_step(mlp(16, 8), inputs, targets, ["cpu", "cpu"])


def test_a_failing_replica_is_named_and_no_thread_is_left_behind():
    class NeedsTwoRows(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lin = torch.nn.Linear(16, 10)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            if len(x) < 2:
                raise ValueError("a chunk of one row")
            return self.lin(x)

    x, y = _batch(7)
    with pytest.raises(
        RuntimeError,
        match=r"replica 3 on cpu failed on its chunk of 1 rows: ValueError: a chunk "
        r"of one row",
    ):
        data_parallel_step(NeedsTwoRows(), x, y, ["cpu"] * 4)
    assert not [t for t in threading.enumerate() if t.name.startswith("gpulab-replica")]


@pytest.mark.multigpu
@requires_gpus(2)
def test_on_two_gpus_torchs_primitives_give_the_full_batch_gradients_and_match_dataparallel():
    model = mlp(16, 32).to("cuda:0")
    x, y = _batch(10)
    reference = full_batch_gradients(model, x, y)
    step = data_parallel_step(model, x.to("cuda:0"), y.to("cuda:0"), ["cuda:0", "cuda:1"])
    assert step.torch_primitives and step.devices == ("cuda:0", "cuda:1") and step.reduce_error < 1e-5
    assert compare_gradients(gradients(model), reference).allclose
    model.zero_grad()
    torch.nn.functional.cross_entropy(torch.nn.DataParallel(model, [0, 1])(x), y.to("cuda:0")).backward()
    assert compare_gradients(gradients(model), reference).allclose


@pytest.mark.gpu
@requires_gpus(1)
def test_on_one_gpu_the_steps_run_on_torchs_primitives():
    model = mlp(16, 32).to("cuda:0")
    x, y = _batch(6)
    reference = full_batch_gradients(model, x, y)
    step = data_parallel_step(model, x, y, ["cuda:0"])
    assert step.torch_primitives and step.output_device == "cuda:0"
    assert compare_gradients(gradients(model), reference).allclose
