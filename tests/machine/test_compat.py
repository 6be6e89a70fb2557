"""The one door to private torch and multiprocessing APIs, on the torch installed here (each supported torch runs it).

Each function is checked against the real object it reads: an elastic context with a real rank process, the fork
server, torch's own device parser. A torch release whose private attributes moved fails here first, by name.
"""

from __future__ import annotations

import multiprocessing.connection
import os

import pytest
import torch

from gpulab.machine import compat


def test_the_installed_torch_is_one_this_module_knows():
    release = tuple(int(part) for part in torch.__version__.split("+")[0].split(".")[:2])
    assert release in compat.KNOWN_TORCH, f"torch {torch.__version__}: read its private APIs and add it to KNOWN_TORCH"


def test_elastics_names_are_reached_through_here():
    from torch.distributed.elastic.multiprocessing import LogsSpecs, start_processes
    from torch.distributed.elastic.multiprocessing.errors import ChildFailedError

    assert compat.LogsSpecs is LogsSpecs and compat.start_processes is start_processes
    assert compat.ChildFailedError is ChildFailedError
    with pytest.raises(AttributeError, match="has no attribute 'no_such_name'"):
        compat.no_such_name  # noqa: B018


def test_a_real_elastic_context_can_be_waited_on_until_its_rank_returns(tmp_path):
    from torch.distributed.elastic.multiprocessing import DefaultLogsSpecs

    ctx = compat.start_processes(
        name="compat",
        entrypoint=os.getpid,
        args={0: ()},
        envs={0: {}},
        logs_specs=DefaultLogsSpecs(log_dir=str(tmp_path)),
        start_method="spawn",
    )
    try:
        waitables = compat.rank_waitables(ctx)
        assert waitables is not None and len(waitables) == 2  # the rank's sentinel and its return-value pipe
        assert compat.ranks_running(ctx) == 1
        ready = multiprocessing.connection.wait(waitables, timeout=120)
        assert ready, "neither the rank's exit nor its return value woke the wait"
        result = ctx.wait(120)
        assert result is not None and not result.is_failed() and result.return_values[0] > 0
        assert compat.ranks_running(ctx) == 0
        assert all(isinstance(p, str) for p in compat.rank_error_files(ctx))
        compat.release_rank_queues(ctx)  # the queues' and the event's semaphores go with them
        assert compat.rank_waitables(ctx) == [] and not ctx._worker_finished_event.is_set()
    finally:
        ctx.close()


def test_an_unknown_context_degrades_to_polling():
    assert compat.rank_waitables(object()) is None and compat.ranks_running(object()) is None
    assert compat.rank_error_files(object()) == []
    compat.release_rank_queues(object())  # nothing to release: nothing done, no error
    compat.release_rank_queues(None)


def test_torchs_own_device_parser_and_its_messages():
    assert compat.cuda_device_index(3) == 3 and compat.cuda_device_index(torch.device("cuda", 2)) == 2
    with pytest.raises(ValueError, match="Expected a cuda device"):
        compat.cuda_device_index(torch.device("cpu"))


def test_cudnn_version_is_read_without_starting_cuda():
    v = compat.cudnn_version_int()
    assert (v is not None) == torch.backends.cudnn.is_available()  # a CUDA build bundles cuDNN
    assert v is None or v > 0
    assert not torch.cuda.is_initialized()


def test_compiled_module_type_is_torch_compiles_wrapper():
    import torch._dynamo.eval_frame

    assert compat.compiled_module_type() is torch._dynamo.eval_frame.OptimizedModule


def test_the_fork_server_state_is_read_and_it_can_be_stopped():
    import subprocess
    import sys

    code = (
        "import multiprocessing as mp\nfrom gpulab.machine import compat\n"
        "assert compat.forkserver_pid() is None\n"
        "ctx = mp.get_context('forkserver'); ctx.set_forkserver_preload(['json'])\n"
        "import multiprocessing.forkserver as f; f.ensure_running()\n"
        "pid = compat.forkserver_pid(); assert pid and compat.forkserver_preload() == ('json',), pid\n"
        "compat.stop_forkserver(); compat.stop_resource_tracker()\n"
        "assert compat.forkserver_pid() is None\n"
        "import os\ntry:\n    os.kill(pid, 0)\nexcept ProcessLookupError:\n    print('stopped')\n"
    )
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=root,
        start_new_session=True,
        env={**os.environ, "PYTHONPATH": root},
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "stopped"


def test_the_class_of_a_cuda_error_follows_the_torch_release():
    """torch.AcceleratorError arrived in 2.8.0; torch 2.11 raised it for "invalid device ordinal" on an H100."""
    assert compat.ACCELERATOR_ERROR_SINCE == (2, 8)
    assert [compat.cuda_error_class(v) for v in ("2.7.1+cu126", "2.8.0", "2.11.0+cu130", "2.14.1", "3.0.0")] == [
        "RuntimeError",
        "AcceleratorError",
        "AcceleratorError",
        "AcceleratorError",
        "AcceleratorError",
    ]
    here = compat.cuda_error_class()
    assert here == ("AcceleratorError" if hasattr(torch, "AcceleratorError") else "RuntimeError")
    assert here == compat.cuda_error_class(torch.__version__)  # what the installed torch has agrees with its release
    with pytest.raises(ValueError, match="torch_version='nightly' is not a torch release"):
        compat.cuda_error_class("nightly")
