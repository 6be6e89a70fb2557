"""gpulab.launch with real processes and real gloo process groups: results, environment, output, re-runs."""

from __future__ import annotations

import os
import threading

import pytest
import torch

from gpulab.ranks.launcher import choose_backend, default_threads_per_rank, last_launch, launch

from .processes import leftover_processes

TORCHRUN_VARS = [
    "RANK",
    "LOCAL_RANK",
    "WORLD_SIZE",
    "LOCAL_WORLD_SIZE",
    "MASTER_ADDR",
    "MASTER_PORT",
    "GROUP_RANK",
    "TORCHELASTIC_USE_AGENT_STORE",
    "TORCHELASTIC_RUN_ID",
    "OMP_NUM_THREADS",
]


def summed_ranks(scale):
    import torch.distributed as dist

    t = torch.tensor([float(dist.get_rank() + 1)])
    dist.all_reduce(t)
    return t.item() * scale


def test_rank_zeros_result_comes_back_and_all_ranks_with_all_ranks(no_process_left):
    assert launch(summed_ranks, 2, args=(10,)) == 30.0
    assert launch(summed_ranks, 3, kwargs={"scale": 1}, all_ranks=True) == [6.0, 6.0, 6.0]


def test_each_rank_sees_the_variables_torchrun_sets(no_process_left):
    def env():
        import torch.distributed as dist

        return {k: os.environ.get(k) for k in TORCHRUN_VARS} | {"backend": dist.get_backend()}

    seen = launch(env, 2, all_ranks=True, threads_per_rank=1)
    assert [s["RANK"] for s in seen] == ["0", "1"] and [s["LOCAL_RANK"] for s in seen] == ["0", "1"]
    for s in seen:
        assert (s["WORLD_SIZE"], s["LOCAL_WORLD_SIZE"], s["GROUP_RANK"], s["OMP_NUM_THREADS"]) == ("2", "2", "0", "1")
        assert s["MASTER_ADDR"] == "127.0.0.1" and s["MASTER_PORT"].isdigit()
        assert s["TORCHELASTIC_USE_AGENT_STORE"] == "True" and s["backend"] == "gloo"
    assert seen[0]["TORCHELASTIC_RUN_ID"] == seen[1]["TORCHELASTIC_RUN_ID"]


def test_functions_and_classes_defined_here_travel_by_value_both_ways(no_process_left):
    offset = 5

    class Point:  # a class that exists only in this test, like one defined in a notebook cell
        def __init__(self, x):
            self.x = x

    def make():
        return Point(int(os.environ["RANK"]) + offset)

    points = launch(make, 2, all_ranks=True)
    assert [p.x for p in points] == [5, 6]


def test_output_of_every_rank_reaches_this_process_labelled(capsys, no_process_left):
    def talk():
        import sys

        rank = os.environ["RANK"]
        print(f"hello from {rank}")
        print(f"warning from {rank}", file=sys.stderr)
        print("no newline at the end", end="")

    launch(talk, 2)
    out, err = capsys.readouterr()
    assert sorted(line for line in out.splitlines() if "hello" in line) == [
        "[rank 0] hello from 0",
        "[rank 1] hello from 1",
    ]
    assert "[rank 1] no newline at the end" in out.splitlines()
    assert sorted(err.splitlines()) == ["[rank 0] warning from 0", "[rank 1] warning from 1"]


def test_twenty_reruns_in_a_row_each_on_a_port_the_system_picked_leave_no_process(no_process_left):
    # The system picks each run's port (bind to port 0): any free one, so a port a finished run let go may come back
    # (under pytest-xdist, 19 distinct ports in 20 runs were seen once); what must hold is that no rerun finds its
    # port still taken.
    for _ in range(20):
        assert launch(summed_ranks, 2, args=(1,)) == 3.0
        assert 1024 <= last_launch().master_port <= 65535
        assert leftover_processes() == []
    assert "2 ranks (gloo" in str(last_launch()) and "<code>" in last_launch()._repr_html_()


def test_the_notebooks_current_environment_reaches_the_ranks(monkeypatch, no_process_left):
    launch(summed_ranks, 2, args=(1,))  # the fork server is running now, with the environment of its start
    monkeypatch.setenv("GPULAB_TEST_SET_LATER", "yes")
    monkeypatch.delenv("HOME", raising=False)
    seen = launch(lambda: (os.environ.get("GPULAB_TEST_SET_LATER"), os.environ.get("HOME")), 2)
    assert seen == ("yes", None)


def test_threads_per_rank_is_honoured_and_defaults_to_omp_num_threads(monkeypatch, no_process_left):
    assert launch(torch.get_num_threads, 2, threads_per_rank=2, all_ranks=True) == [2, 2]
    monkeypatch.setenv("OMP_NUM_THREADS", "3")
    assert default_threads_per_rank(2) == 3
    monkeypatch.delenv("OMP_NUM_THREADS")
    assert default_threads_per_rank(64) == 1
    monkeypatch.setenv("OMP_NUM_THREADS", "many")
    with pytest.raises(ValueError, match="OMP_NUM_THREADS='many' is not a whole number"):
        default_threads_per_rank(2)


def test_a_torchrun_style_body_runs_when_the_launcher_leaves_the_process_group_to_it(no_process_left):
    def script_body():
        import torch.distributed as dist

        dist.init_process_group("gloo")  # what a torchrun script does, from the variables torchrun sets
        t = torch.ones(1)
        dist.all_reduce(t)
        dist.destroy_process_group()
        return t.item()

    assert launch(script_body, 2, init_process_group=False) == 2.0
    assert last_launch().backend is None


def test_launching_from_a_thread_works_and_keeps_the_main_threads_signal_handlers(no_process_left):
    import signal

    before = signal.getsignal(signal.SIGINT)
    got = []
    t = threading.Thread(target=lambda: got.append(launch(summed_ranks, 2, args=(1,))))
    t.start()
    t.join(120)
    assert got == [3.0]
    launch(summed_ranks, 2, args=(1,))
    assert signal.getsignal(signal.SIGINT) is before  # elastic's start() replaced it; the launcher put it back


def test_auto_backend_is_gloo_without_a_gpu_per_rank():  # on this machine, whatever it has
    from gpulab.machine.cuda import cuda_gpu_count

    assert choose_backend("auto", cuda_gpu_count() + 1) == "gloo"
    assert choose_backend("gloo", 2) == "gloo"


@pytest.mark.parametrize(
    "call, error, words",
    [
        (lambda: launch(torch.get_num_threads(), 2), TypeError, "Pass the function itself, without calling it"),
        (
            lambda: launch(summed_ranks, 0),
            ValueError,
            r"world_size=0: world_size \(how many processes \(ranks\) to "
            r"start\) must be a whole number ≥ 1 \(e.g. launch\(train, "
            r"world_size=2\)\)",
        ),
        (
            lambda: launch(summed_ranks, "2"),
            TypeError,
            "world_size='2' is a str; world_size .* takes a whole number ≥ 1",
        ),
        (lambda: launch(summed_ranks, 2, args=5), TypeError, "note the comma for one argument"),
        (lambda: launch(summed_ranks, 2, kwargs=[1]), TypeError, "kwargs is a dict"),
        (
            lambda: launch(summed_ranks, 2, timeout_s=0),
            ValueError,
            r"timeout_s=0: timeout_s must be a positive number of "
            r"seconds, .* \(how long a collective waits",
        ),
        (lambda: launch(summed_ranks, 2, timeout_s="1m"), TypeError, "timeout_s='1m' is a str"),
        (
            lambda: launch(summed_ranks, 2, threads_per_rank=0),
            ValueError,
            r"threads_per_rank=0: threads_per_rank \(or None for cores ÷ ranks\) must be a whole number ≥ 1",
        ),
        (lambda: launch(summed_ranks, 2, threads_per_rank=1.5), TypeError, "threads_per_rank=1.5 is a float"),
        (lambda: launch(summed_ranks, 2, backend="carrier-pigeon"), ValueError, "is not available in this PyTorch"),
        (lambda: launch(summed_ranks, 2, args=(threading.Lock(),)), TypeError, "cannot be copied into the ranks"),
    ],
)
def test_wrong_calls_are_refused_before_any_process_starts(call, error, words, no_process_left):
    with pytest.raises(error, match=words):
        call()


def test_nccl_without_a_gpu_per_rank_is_refused_with_the_count(monkeypatch, no_process_left):
    from gpulab.machine.cuda import cuda_gpu_count

    with pytest.raises(ValueError, match=r"backend='nccl' cannot work here: "):
        launch(summed_ranks, cuda_gpu_count() + 1, backend="nccl")
    _pretend_gpus(monkeypatch, 1)  # the H100's case: 2 ranks asked for NCCL on one GPU
    why = (
        r"2 ranks but only 1 GPU\(s\), so rank 1 would have none"
        if torch.distributed.is_nccl_available()
        else r"this PyTorch has no NCCL"
    )
    with pytest.raises(ValueError, match=why + r".* Use backend='gloo'"):
        launch(summed_ranks, 2, backend="nccl")


def _pretend_gpus(monkeypatch, count: int) -> None:
    """Our own seam: the GPU count the launcher's decision reads (NVML on a GPU machine). The ranks themselves run
    for real on this CPU, so only plans that keep them on the CPU can run here."""
    import gpulab.machine.cuda

    monkeypatch.setattr(gpulab.machine.cuda, "cuda_gpu_count", lambda: count)


@pytest.mark.parametrize(
    "gpus, world_size, backend, devices",
    [
        (0, 2, "gloo", ("cpu", "cpu")),
        (1, 1, "nccl", ("cuda:0",)),
        (1, 2, "gloo", ("cpu", "cpu")),
        (2, 2, "nccl", ("cuda:0", "cuda:1")),
        (8, 2, "nccl", ("cuda:0", "cuda:1")),
    ],
)
def test_the_launchers_plan_reads_the_gpu_count_and_never_gives_a_rank_a_gpu_past_it(
    monkeypatch, gpus, world_size, backend, devices
):
    from gpulab.ranks.launcher import plan_ranks

    _pretend_gpus(monkeypatch, gpus)
    plan = plan_ranks("auto", world_size)
    nccl = torch.distributed.is_nccl_available()
    assert (plan.backend, plan.devices) == ((backend, devices) if nccl else ("gloo", ("cpu",) * world_size))
    assert plan_ranks("gloo", world_size).devices == ("cpu",) * world_size


def test_two_ranks_where_one_gpu_is_seen_run_on_gloo_on_the_cpu_and_the_launch_says_why(monkeypatch, no_process_left):
    def where():
        import torch.distributed as dist

        return dist.get_backend(), torch.cuda.is_initialized()

    _pretend_gpus(monkeypatch, 1)
    assert launch(where, 2, all_ranks=True) == [("gloo", False), ("gloo", False)]  # no rank touched CUDA
    stats = last_launch()
    assert stats.backend == "gloo" and "2 ranks but only 1 GPU(s), so rank 1 would have none" in stats.why
    assert str(stats).endswith(stats.why)


def test_a_function_that_calls_sys_exit_has_no_result_and_says_so(no_process_left):
    import sys

    with pytest.raises(RuntimeError, match=r"rank\(s\) \[0, 1\] ended with sys.exit\(\)"):
        launch(lambda: sys.exit(0), 2)
