"""The %%ranks cell magic in a real IPython shell, running real ranks."""

from __future__ import annotations

import pytest


def test_a_cell_runs_in_each_rank_with_the_notebook_variables_it_reads(shell, capsys, no_process_left):
    shell.run_cell("import torch, torch.distributed as dist\nweights = torch.arange(3.)\nunused = object()")
    result = shell.run_cell(
        "%%ranks 2\nt = weights * (rank + 1)\ndist.all_reduce(t)\nprint(rank, world_size, t)\nt.sum().item()"
    )
    assert result.error_in_exec is None and result.result == 9.0
    out = capsys.readouterr().out
    assert "[rank 0] 0 2 tensor([0., 3., 6.])" in out and "[rank 1] 1 2 tensor([0., 3., 6.])" in out
    assert "t" not in shell.user_ns  # the cell's variables stay in the ranks


def test_all_returns_every_ranks_last_value_and_options_are_read(shell, no_process_left):
    result = shell.run_cell(
        "%%ranks 3 --all --threads 1 --timeout 30\nimport torch\n(local_rank, torch.get_num_threads())"
    )
    assert result.result == [(0, 1), (1, 1), (2, 1)]


def test_the_backend_is_asked_for_on_the_first_line_as_launch_takes_it(shell, monkeypatch, no_process_left):
    import gpulab.machine.cuda

    monkeypatch.setattr(gpulab.machine.cuda, "cuda_gpu_count", lambda: 2)  # our seam: what NVML would say
    code = "import torch.distributed as dist\ndist.get_backend()"
    assert shell.run_cell(f"%%ranks 2 --backend gloo\n{code}").result == "gloo"  # CPU tensors: gloo on any machine
    refused = shell.run_cell("%%ranks 2 --backend carrier-pigeon\nx = 1").error_in_exec
    assert isinstance(refused, ValueError) and "backend='carrier-pigeon' is not available" in str(refused)


def test_an_error_in_a_rank_shows_the_cells_line(shell, no_process_left):
    result = shell.run_cell("%%ranks 2\nx = 1\nif rank == 1:\n    raise KeyError('only in rank one')\n")
    text = str(result.error_in_exec)
    assert text.startswith("rank 1 of 2 raised KeyError: 'only in rank one'")
    assert "line 4, in <module>" in text and "raise KeyError('only in rank one')" in text


@pytest.mark.parametrize(
    "line, words",
    [
        ("two", "invalid int value: 'two'"),
        ("0", "could not read '0'"),
        ("2 --bogus", "could not read '2 --bogus'"),
        ("", "could not read ''"),
    ],
)
def test_a_bad_first_line_is_explained(shell, line, words):
    result = shell.run_cell(f"%%ranks {line}\nx = 1")
    assert isinstance(result.error_in_exec, ValueError) and words in str(result.error_in_exec)
    assert "use it as `%%ranks 2`" in str(result.error_in_exec)


def test_a_variable_that_cannot_be_copied_is_named_unless_the_cell_makes_its_own(shell, no_process_left):
    shell.run_cell("import threading\nlock = threading.Lock()")
    result = shell.run_cell("%%ranks 2\nprint(lock)")
    assert isinstance(result.error_in_exec, TypeError)
    assert "cannot copy the notebook variable 'lock' (lock)" in str(result.error_in_exec)
    result = shell.run_cell("%%ranks 2\nimport threading\nlock = threading.Lock()\nlock.locked()")
    assert result.error_in_exec is None and result.result is False


def test_a_syntax_error_is_reported_in_the_notebook_before_any_rank_starts(shell, no_process_left):
    result = shell.run_cell("%%ranks 2\nx = = 1")
    assert isinstance(result.error_in_exec, SyntaxError)
