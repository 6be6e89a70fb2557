"""A kernel's memory cap is applied as CUDA starts in it and not before (``gpulab.machine.memory_cap``), and a kernel
that goes over reads its cap under PyTorch's out-of-memory error.

A CUDA start cannot be seen on this machine (no driver: ``torch.cuda._lazy_init`` fails in ``torch._C._cuda_init``,
before PyTorch runs the calls queued for CUDA's start). The tests of the start run in fresh interpreters with a
stand-in for the driver's part, put in after gpulab and torch are imported and the CUDA-free checks are done:

* ``torch._C._cuda_init``: on a GPU machine, cuInit and the primary context; here a function that returns;
* ``torch.cuda.device_count`` / ``get_device_properties``: one visible H100 with torch's ``total_memory`` of
  85017493504 bytes (``evidence/2026-11-26-h100-80gb-hbm3.json``);
* ``torch.cuda.set_per_process_memory_fraction``: on a GPU, caps PyTorch's allocator on that device (checked on a
  real card by ``test_three_kernels_share_a_gpu_and_one_going_over_stops_only_itself``); here it records its call.

Everything else is PyTorch's own ``_lazy_init``, running the queue as on a GPU machine, and gpulab's own hook.
The out-of-memory line is tested on real ``torch.OutOfMemoryError`` objects, made on the CPU.
"""

from __future__ import annotations

import os
import re
import sys
import textwrap

import pytest
import torch

from gpulab.machine import memory_cap
from tests import process_group
from tests.test_import_and_cuda import NO_CUDA_SCRIPT, _python_watching_cuda

H100_TOTAL = 85017493504
CAP = 26408 * 1024**2  # share 2 of 3 of an H100 (tests/core/test_shares.py)

STAND_IN = f"""
from types import SimpleNamespace
applied = []
torch._C._cuda_init = lambda: None
torch.cuda.device_count = lambda: 1
torch.cuda.get_device_properties = lambda index: SimpleNamespace(
    name="NVIDIA H100 80GB HBM3", major=9, minor=0, total_memory={H100_TOTAL}
)
torch.cuda.set_per_process_memory_fraction = lambda fraction, index: applied.append((round(fraction, 6), index))
"""


def _run(code: str, **env: str) -> list[str]:
    base = {k: v for k, v in os.environ.items() if k not in ("GPULAB_MEMORY_CAP", "PYTORCH_NVML_BASED_CUDA_CHECK")}
    out = process_group.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=180, env={**base, **env}
    )
    assert out.returncode == 0, out.stderr
    return out.stdout.strip().splitlines()


def _queued_by_gpulab() -> str:
    return "sum(c[0].__module__ == 'gpulab.machine.memory_cap' for c in torch.cuda._queued_calls)"


@pytest.mark.parametrize("first", ["gpulab", "torch"])
def test_the_cap_waits_for_cuda_start_then_caps_each_visible_gpu_once(first):
    second = "torch" if first == "gpulab" else "gpulab"
    lines = _run(
        f"""
        import sys; sys.path.insert(0, {os.path.dirname(__file__) + "/.."!r})
        import {first}, {second}
        import cuda_tripwire; cuda_tripwire.install()
        from gpulab.machine.memory_cap import applied_caps
        print("queued:", {_queued_by_gpulab()}, "applied:", applied_caps(), "started:", torch.cuda.is_initialized())
        {STAND_IN.strip().replace(chr(10), chr(10) + " " * 8)}
        torch.cuda._lazy_init()   # what the first CUDA tensor, .cuda() or set_device calls
        torch.cuda._lazy_init()
        print("applied:", applied, applied_caps(), "started:", torch.cuda.is_initialized())
        """,
        GPULAB_MEMORY_CAP=str(CAP),
    )
    assert lines[0] == "queued: 1 applied: {} started: False"
    assert lines[1] == f"applied: [({round(CAP / H100_TOTAL, 6)}, 0)] {{0: {CAP}}} started: True"


def test_a_fraction_caps_each_gpu_at_that_part_of_it():
    lines = _run(
        f"""
        import gpulab, torch
        {STAND_IN.strip().replace(chr(10), chr(10) + " " * 8)}
        torch.cuda._lazy_init()
        from gpulab.machine.memory_cap import applied_caps
        print(applied, applied_caps())
        """,
        GPULAB_MEMORY_CAP="0.25",
    )
    assert lines == [f"[(0.25, 0)] {{0: {H100_TOTAL // 4}}}"]


def test_without_the_variable_nothing_is_queued():
    assert _run(f"import gpulab, torch\nprint({_queued_by_gpulab()})") == ["0"]


def test_with_a_cap_set_looking_at_gpus_still_never_starts_cuda():
    assert _python_watching_cuda(NO_CUDA_SCRIPT, GPULAB_MEMORY_CAP="0.33", GPULAB_SIMULATE_GPUS="workshop-8") == (
        "CUDA starts: []"
    )


def test_a_value_it_cannot_read_refuses_every_cuda_start_with_the_reason():
    lines = _run(
        f"""
        import gpulab, torch
        {STAND_IN.strip().replace(chr(10), chr(10) + " " * 8)}
        for attempt in range(2):
            try:
                torch.cuda._lazy_init()
            except Exception as exc:
                print(type(exc).__name__, "|", str(exc).splitlines()[0])
        print(applied, torch.cuda.is_initialized())
        """,
        GPULAB_MEMORY_CAP="26 GB",
    )
    refusal = (
        "DeferredCudaCallError | CUDA call failed lazily at initialization with error: CUDA was not started in this "
        "kernel: GPULAB_MEMORY_CAP='26 GB' cannot be read: it is a number of bytes (27858518016), a size (26GiB, "
        "800MiB) or a fraction of the GPU's memory (0.33). Whoever started this kernel set it: fix it there (the "
        "kernelspec or the Hub's settings), then restart the kernel."
    )
    assert lines == [refusal, refusal, "[] False"]


OOM = (
    "CUDA out of memory. Tried to allocate 30.00 GiB. GPU {} has a total capacity of 79.18 GiB of which 52.10 GiB is "
    "free. Including non-PyTorch memory, this process has 26.20 GiB memory in use. Of the allocated memory 25.10 GiB "
    "is allocated by PyTorch, and 512.00 MiB is reserved by PyTorch but unallocated."
)


def test_an_out_of_memory_error_gets_one_line_with_the_cap_and_what_is_held():
    exc = torch.OutOfMemoryError(OOM.format(1))
    held = {1: (25 * 1024**3, 25 * 1024**3 + 512 * 1024**2)}
    assert memory_cap.add_cap_note(exc, caps={0: CAP, 1: CAP}, held=held.__getitem__)
    assert not memory_cap.add_cap_note(exc, caps={0: CAP, 1: CAP}, held=held.__getitem__)  # once
    assert str(exc) == OOM.format(1) and len(exc.__notes__) == 1
    assert exc.__notes__[0].startswith(
        "gpulab: this kernel shares its GPU and may hold at most 25.8 GiB on cuda:1 (GPULAB_MEMORY_CAP); it holds "
        "25.0 GiB in tensors and 512.0 MiB more in PyTorch's cache. Free tensors"
    )


def test_when_what_is_held_cannot_be_read_the_line_says_why_and_the_error_stands():
    exc = torch.OutOfMemoryError(OOM.format(0))

    def broken(index: int) -> tuple[int, int]:
        raise RuntimeError("CUDA error: an illegal memory access was encountered\nmore")

    assert memory_cap.add_cap_note(exc, caps={0: CAP}, held=broken)
    assert (
        "what it holds could not be read (RuntimeError: CUDA error: an illegal memory access was encountered)"
        in (exc.__notes__[0])
    )


def test_other_errors_and_kernels_without_a_cap_are_left_as_they_are():
    other = RuntimeError("CUDA error: invalid device ordinal")
    assert not memory_cap.add_cap_note(other, caps={0: CAP}, held=lambda i: (0, 0))
    assert not memory_cap.add_cap_note(torch.OutOfMemoryError(OOM.format(0)), caps={}, held=lambda i: (0, 0))
    assert not hasattr(other, "__notes__") and memory_cap.applied_caps() == {}


@pytest.mark.parametrize("load_ext", [False, True])
def test_in_ipython_the_error_shows_the_line_with_or_without_gpulabs_tracebacks(load_ext, monkeypatch, capsys):
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    try:
        monkeypatch.setattr(memory_cap, "_applied", {0: CAP})
        memory_cap._note_out_of_memory_in_ipython()  # what applying the cap at CUDA start does last
        assert shell.custom_exceptions == (torch.OutOfMemoryError,)
        if load_ext:
            shell.run_line_magic("load_ext", "gpulab")  # short tracebacks replace the handler and add the line too
        result = shell.run_cell(f"import torch\nraise torch.OutOfMemoryError({OOM.format(0)!r})")
        assert isinstance(result.error_in_exec, torch.OutOfMemoryError)
        out = re.sub(r"\x1b\[[0-9;]*m", "", capsys.readouterr().out)
        assert "OutOfMemoryError: CUDA out of memory." in out
        assert "gpulab: this kernel shares its GPU and may hold at most 25.8 GiB on cuda:0" in out
        assert "it holds 0 B in tensors." in out  # CUDA never started here: torch reads nothing held
    finally:
        InteractiveShell.clear_instance()


GPU_KERNEL = """
import sys
import gpulab, torch
from gpulab.machine.memory_cap import add_cap_note, applied_caps

GiB = 2**30
mine = torch.ones(256 * 2**20, dtype=torch.uint8, device="cuda")  # CUDA starts here, and the cap with it
cap = applied_caps()[0]
print("ready", cap, flush=True)
if sys.stdin.readline().strip() == "run away":
    held = []
    try:
        while True:  # a runaway: 1 GiB more each time, until something refuses
            held.append(torch.empty(GiB, dtype=torch.uint8, device="cuda"))
    except torch.OutOfMemoryError as exc:
        add_cap_note(exc)
        print("refused", len(held), torch.cuda.memory_reserved(0), "|", exc.__notes__[0], flush=True)
    sys.stdin.readline()  # keeps all it holds while the others work
else:
    big = torch.empty(cap - 2 * GiB, dtype=torch.uint8, device="cuda")  # most of its own share
    a = torch.randn(2048, 2048, device="cuda")
    total = (a @ a).sum()
    torch.cuda.synchronize()
    print("worked", big.numel(), bool(torch.isfinite(total)), flush=True)
"""


@pytest.mark.gpu
@pytest.mark.timeout(300)
def test_three_kernels_share_a_gpu_and_one_going_over_stops_only_itself(tmp_path):
    """Three processes hold a third of the first GPU each (``core.shares``); one allocates without end and is refused
    at its cap with the line that says so, while it keeps what it holds; the other two then take most of their own
    share and compute. Without the cap the runaway would have taken the whole card and the others would fail."""
    import subprocess

    from gpulab.core.shares import share_cap_bytes
    from gpulab.machine.inventory import devices

    gpu = devices(processes=False).gpus[0]
    usable = gpu.memory_total_bytes - gpu.memory_used_bytes  # the driver's own part shows as used (480 MiB, H100)
    cap = share_cap_bytes(usable, 3)
    script = tmp_path / "kernel.py"
    script.write_text(GPU_KERNEL)
    env = {**os.environ, "GPULAB_MEMORY_CAP": str(cap), "CUDA_VISIBLE_DEVICES": gpu.uuid}
    kernels = [
        subprocess.Popen(
            [sys.executable, str(script)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
            start_new_session=True,
        )
        for _ in range(3)
    ]
    try:
        ready = [k.stdout.readline().split() for k in kernels]
        assert all(r[:1] == ["ready"] for r in ready), ready
        runaway, others = kernels[0], kernels[1:]
        runaway.stdin.write("run away\n")
        runaway.stdin.flush()
        refused = runaway.stdout.readline()
        words = refused.split()
        assert words[0] == "refused", refused
        held_gib, reserved = int(words[1]), int(words[2])
        assert reserved <= int(ready[0][1]) and held_gib >= (cap - 256 * 2**20) // 2**30 - 1, refused
        assert "| gpulab: this kernel shares its GPU and may hold at most" in refused
        for k in others:
            k.stdin.write("work\n")
            k.stdin.flush()
        results = [k.stdout.readline().split() for k in others]
        assert all(r[:1] == ["worked"] and r[2] == "True" for r in results), results
    finally:
        for k in kernels:
            process_group.kill_group(k)


@pytest.mark.timeout(300)
def test_a_kernel_started_with_a_cap_starts_cuda_free_and_shows_the_line_without_gpulab_imported_by_the_learner():
    """The kernelspec way (README, "A memory cap for a kernel that shares a GPU"): the variable in the kernel's
    environment and ``--IPKernelApp.exec_lines=import gpulab`` on its command line; the learner's cells never import
    gpulab. The kernel starts with nothing of CUDA; at CUDA's start (the stand-in above) the cap is applied and an
    out-of-memory error shows the cap's line under IPython's own traceback."""
    from jupyter_client.manager import start_new_kernel

    env = {k: v for k, v in os.environ.items() if k != "PYTORCH_NVML_BASED_CUDA_CHECK"}
    km, kc = start_new_kernel(
        kernel_name="python3",
        extra_arguments=["--IPKernelApp.exec_lines=import gpulab"],
        env={**env, "GPULAB_MEMORY_CAP": str(CAP)},
    )
    outputs: list[dict] = []

    def run(code: str) -> list[dict]:
        outputs.clear()
        kc.execute_interactive(
            textwrap.dedent(code), timeout=120, output_hook=lambda m: outputs.append(m["content"]), store_history=False
        )
        return list(outputs)

    try:
        started = run(f"import torch\nprint(torch.cuda.is_initialized(), {_queued_by_gpulab()})")
        assert "".join(o.get("text", "") for o in started).split() == ["False", "1"]
        # and the allocator's answers, which on a GPU come from the started CUDA
        held = "torch.cuda.memory_allocated = lambda index=None: 25 * 2**30\n"
        held += "torch.cuda.memory_reserved = lambda index=None: 26 * 2**30\n"
        run(STAND_IN + held + "torch.cuda._lazy_init()")
        failed = run(f"raise torch.OutOfMemoryError({OOM.format(0)!r})")
        text = "\n".join("\n".join(o.get("traceback", [])) + o.get("text", "") for o in failed)
        shown = re.sub(r"\x1b\[[0-9;]*m", "", text)
        assert "OutOfMemoryError: CUDA out of memory." in shown
        assert "gpulab: this kernel shares its GPU and may hold at most 25.8 GiB on cuda:0" in shown
        assert "it holds 25.0 GiB in tensors and 1.0 GiB more in PyTorch's cache" in shown
        assert "handler failed" not in shown
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
