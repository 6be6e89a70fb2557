"""The %%gpu cell magic, run in a real IPython shell."""

from __future__ import annotations

import pytest


def test_gpu_magic_skips_with_the_reason_on_a_machine_without_gpus(shell, capsys):
    from gpulab.machine.cuda import too_few_gpus

    if too_few_gpus(2) is None:
        pytest.skip("this machine has 2 GPUs: the skip path cannot be shown here")
    shell.run_cell("%%gpu 2\nran = True")
    assert "Skipped on this machine: this cell needs 2 CUDA GPU(s)" in capsys.readouterr().out
    assert "ran" not in shell.user_ns


def test_gpu_magic_rejects_a_bad_count(shell):
    result = shell.run_cell("%%gpu two\nx = 1")
    assert isinstance(result.error_in_exec, ValueError)
    assert "%%gpu takes the number of GPUs" in str(result.error_in_exec)


@pytest.mark.gpu
def test_gpu_magic_runs_the_cell_where_a_gpu_exists(shell):
    shell.run_cell("%%gpu\nimport torch\nx = torch.ones(1, device='cuda')")
    assert shell.user_ns["x"].is_cuda


@pytest.mark.parametrize(
    "value, words",
    [
        ("", "CUDA_VISIBLE_DEVICES='' lets this process see no GPU"),
        ("-1", "CUDA_VISIBLE_DEVICES='-1' lets this process see no GPU"),
    ],
)
def test_a_gpu_cell_skipped_because_the_variable_hides_every_gpu_says_so(monkeypatch, value, words):
    # on a GPU server a learner who set CUDA_VISIBLE_DEVICES= must not read "no usable CUDA GPU on this machine"
    from gpulab.machine.cuda import too_few_gpus

    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", value)
    import torch

    if torch.version.cuda is None:
        pytest.skip("a CPU-only torch build is the reason on this machine")
    assert words in too_few_gpus(1)
