"""The %%gpu cell magic, run in a real IPython shell."""

from __future__ import annotations

import os

import pytest


def test_gpu_magic_skips_with_the_reason_on_a_machine_without_gpus(shell, capsys):
    from gpulab.machine.cuda import too_few_gpus

    if too_few_gpus(2) is None:
        pytest.skip("this machine has 2 GPUs: the skip path cannot be shown here")
    shell.run_cell("%%gpu 2\nran = True")
    assert "Not run here: needs 2 GPUs, and " in capsys.readouterr().out
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


def test_the_kit_runs_a_gpu_cell_at_full_sizes_and_gives_the_cpu_cells_their_mode_back(shell, monkeypatch):
    # make test-gpu sets GPULAB_FULL_GPU_CELLS=1: a cell that runs (here: a shortfall of none, the seam the GPU
    # count comes through) reads GPULAB_FAST=0, and the next cell reads the mode the run chose
    from gpulab.notebook.magics import gpu_cell

    monkeypatch.setenv("GPULAB_FAST", "1")
    monkeypatch.setenv("GPULAB_FULL_GPU_CELLS", "1")
    gpu_cell("", "import gpulab\nsize = gpulab.full_or_fast(1000, 10)", shell, shortfall=lambda n: None)
    assert shell.user_ns["size"] == 1000 and os.environ["GPULAB_FAST"] == "1"
    monkeypatch.setenv("GPULAB_FULL_GPU_CELLS", "maybe")
    with pytest.raises(ValueError, match="GPULAB_FULL_GPU_CELLS='maybe' is not understood: use 1 or 0"):
        gpu_cell("", "x = 1", shell, shortfall=lambda n: None)


def test_a_skipped_cell_with_no_recording_says_so_in_one_line(shell, capsys, tmp_path, monkeypatch):
    from gpulab.notebook.magics import gpu_cell

    monkeypatch.setenv("GPULAB_RECORDINGS", str(tmp_path))
    gpu_cell("2", "ran = True", shell, shortfall=lambda n: f"needs {n} CUDA GPU(s), but none here")
    assert capsys.readouterr().out.splitlines() == [
        "Not run here: needs 2 GPUs, and none here. No recorded GPU output yet."
    ]
    assert "ran" not in shell.user_ns
