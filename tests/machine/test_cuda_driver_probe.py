"""The CUDA-start guard answers from evidence that CUDA read ``CUDA_VISIBLE_DEVICES``, not from a loaded libcuda.

What the real driver does (the H100 run of 2026-11-26, ``gpu-runs/2026-11-26-h100/diag.txt``; ``evidence/`` holds
that run): ``import torch`` maps ``libcuda.so.580.159.04`` into the process (line B: mapped, and
``torch.cuda.is_initialized()`` False) without initialising CUDA, and ``CUDA_VISIBLE_DEVICES=''`` set after that
import still hides the GPU from the first CUDA tensor ("No CUDA GPUs are available", line D). The guard of that
commit refused anyway (lines H and I). NVIDIA's driver API reference (Initialization) says that before ``cuInit`` every
driver call returns ``CUDA_ERROR_NOT_INITIALIZED`` (3); after it, ``cuDeviceGetCount`` returns ``CUDA_SUCCESS`` (0)
and the count. This machine has no driver, so each test compiles a stand-in ``libcuda.so.1`` with ``cc`` that
answers exactly so (3 before its ``cuInit``, 0 and one GPU after), loads it with ctypes into a fresh interpreter (its
own process group), and reads what ``cuda_state()``, the setter, and the environment report say there.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests import process_group

STUB_C = r"""
static int started = 0, inits = 0;
int cuInit(unsigned int flags) { (void)flags; started = 1; inits++; return 0; }
int cuDeviceGetCount(int *count) {
#ifdef ANSWER
    return ANSWER;  /* a driver whose answer is neither 0 nor 3 */
#endif
    if (!started) return 3;  /* CUDA_ERROR_NOT_INITIALIZED, as the driver API reference says */
    *count = 1;
    return 0;
}
int stub_cuinit_calls(void) { return inits; }
"""

# Runs the steps named on its command line in order: "torch" imports torch; "ask" calls torch.cuda.is_available()
# (recorded by gpulab as the first CUDA call; here it fails, there is no driver); "load:<path>" maps a library with
# ctypes, as torch's import maps libcuda on a GPU machine; "init" calls that library's cuInit; "see:<name>" prints
# what every part of the guard says at that moment, as one JSON line.
SCRIPT = r"""
import ctypes, json, os, sys, warnings
import gpulab
from gpulab.machine.cuda import cuda_state
from gpulab.placement.setter import CudaAlreadyStarted, set_visible_devices
from gpulab.checkup.report import environment_report
from gpulab.machine.software import TorchFacts

# described torch facts: the report must not import torch itself where the steps have not
TORCH = TorchFacts("2.11.0+cu130", "13.0", "9.19.0", True, 1, False, True, "2.28.9", False)

lib = None
for step in sys.argv[1:]:
    if step == "torch":
        import torch
    elif step == "ask":
        print("is_available:", torch.cuda.is_available(), file=sys.stderr)
    elif step.startswith("load:"):
        lib = ctypes.CDLL(step[5:])
    elif step == "init":
        lib.cuInit(0)
    elif step.startswith("see:"):
        state = cuda_state()
        os.environ.pop("CUDA_VISIBLE_DEVICES", None)
        with warnings.catch_warnings(record=True) as said:
            warnings.simplefilter("always")
            try:
                set_visible_devices([1])
                setter = "set " + os.environ["CUDA_VISIBLE_DEVICES"]
            except CudaAlreadyStarted as exc:
                setter = "refused: " + str(exc)
        report = environment_report("colab-T4", torch=TORCH)
        row = next(c for c in report.findings if c.what.startswith("CUDA not yet started"))
        print(json.dumps(dict(
            see=step[4:], torch="torch" in sys.modules, read=state.variable_read, state=str(state), setter=setter,
            warned=[str(w.message) for w in said if w.category.__name__ == "CudaStartUnverified"],
            report=[row.mark, row.what, row.meaning], driver_row=report.cuda.driver.summary,
            cuinit_calls=lib.stub_cuinit_calls() if lib is not None and hasattr(lib, "stub_cuinit_calls") else None,
        )), flush=True)
"""


@pytest.fixture(scope="module")
def stubs(tmp_path_factory) -> dict[str, Path]:
    """``libcuda.so.1`` stand-ins: ``driver`` answers as the real driver does, ``unclear`` answers 34
    (CUDA_ERROR_STUB_LIBRARY, what the CUDA toolkit's link-time stub says), ``mute`` has no cuDeviceGetCount."""
    if shutil.which("cc") is None:
        pytest.skip(
            "needs a C compiler (cc) to build the stand-in libcuda.so.1; without one the driver's answers "
            "cannot be tried here"
        )
    root = tmp_path_factory.mktemp("libcuda")
    src = root / "stub.c"
    src.write_text(STUB_C)
    out = {}
    for name, flags in (("driver", []), ("unclear", ["-DANSWER=34"])):
        (root / name).mkdir()
        out[name] = root / name / "libcuda.so.1"
        subprocess.run(["cc", "-shared", "-fPIC", *flags, "-o", str(out[name]), str(src)], check=True, timeout=60)
    (root / "mute").mkdir()
    out["mute"] = root / "mute" / "libcuda.so.1"
    subprocess.run(
        ["cc", "-shared", "-fPIC", "-o", str(out["mute"]), "-x", "c", "-"],
        input=b"int cuInit(unsigned f) { (void)f; return 0; }\n",
        check=True,
        timeout=60,
    )
    return out


def _run(*steps: str, env: dict[str, str] | None = None) -> dict[str, dict]:
    clean = {k: v for k, v in os.environ.items() if k not in ("CUDA_VISIBLE_DEVICES", "GPULAB_SIMULATE_GPUS")}
    out = process_group.run(
        [sys.executable, "-c", SCRIPT, *steps],
        capture_output=True,
        text=True,
        timeout=300,
        env={**clean, **(env or {})},
    )
    assert out.returncode == 0, out.stderr
    return {(d := json.loads(line))["see"]: d for line in out.stdout.splitlines()}


@pytest.mark.parametrize("torch_first", [False, True], ids=["torch not imported", "torch imported"])
def test_a_loaded_driver_that_was_not_initialised_lets_the_variable_be_set(stubs, torch_first):
    """The H100's case: libcuda mapped, cuInit never called. Before this guard asked the driver, the setter refused
    here (diag.txt, line H) and the report said "✘ CUDA not yet started" (cli.txt)."""
    steps = (["torch"] if torch_first else []) + [
        "see:nothing",
        f"load:{stubs['driver']}",
        "see:loaded",
        "init",
        "see:initialised",
    ]
    seen = _run(*steps)
    assert all(s["torch"] is torch_first for s in seen.values())
    loaded = seen["loaded"]
    assert loaded["setter"] == "set 1" and loaded["read"] is False, loaded["setter"]  # no false refusal

    nothing = seen["nothing"]
    assert nothing["read"] is False and nothing["setter"] == "set 1" and not nothing["warned"]
    assert nothing["state"].startswith("CUDA has not started in this process")
    assert ("(torch is not even imported)" in nothing["state"]) is not torch_first
    assert nothing["report"] == [
        "✔",
        "CUDA not yet started in this kernel",
        "the CUDA driver (libcuda) is not loaded "
        "in this process: CUDA_VISIBLE_DEVICES can still be changed and workers forked",
    ]
    assert nothing["driver_row"] == "not loaded"

    assert not loaded["warned"]
    assert loaded["state"] == (
        "CUDA has not started in this process: its driver (libcuda) is loaded, as importing torch does on a GPU "
        "machine, but not initialised (libcuda.so.1 answers CUDA_ERROR_NOT_INITIALIZED (3) to cuDeviceGetCount): "
        "CUDA_VISIBLE_DEVICES can still be changed, and the first CUDA call will read it."
    )
    assert loaded["report"][0] == "✔" and loaded["report"][2].startswith(
        "the CUDA driver (libcuda) is loaded but not initialised (libcuda.so.1 answers CUDA_ERROR_NOT_INITIALIZED"
    )
    assert loaded["driver_row"].startswith("loaded, not initialised (")
    assert loaded["cuinit_calls"] == 0  # asking the driver started nothing

    done = seen["initialised"]
    assert done["read"] is True and done["cuinit_calls"] == 1
    assert done["state"].startswith(
        "The CUDA driver in this process says it has started (libcuda.so.1 answers "
        "CUDA_SUCCESS (0) to cuDeviceGetCount (1 GPU(s)))"
    )
    assert (
        done["setter"].startswith(
            "refused: not setting CUDA_VISIBLE_DEVICES='1': The CUDA driver in this process says it has started"
        )
        and "Restart the kernel and run this cell first" in done["setter"]
    )
    assert done["report"][:2] == ["✘", "CUDA not yet started in this kernel"]


def test_a_failed_first_call_counts_as_read_only_where_a_driver_is_loaded(stubs):
    """is_available() fails here (no driver): nothing read the variable, and the setter sets it. With a CUDA build of
    torch and the driver loaded, the same recorded call went through cuInit, and PyTorch keeps its answer."""
    seen = _run("torch", "ask", "see:no driver", f"load:{stubs['driver']}", "see:driver loaded")
    alone = seen["no driver"]
    assert alone["read"] is False and alone["setter"] == "set 1"
    assert (
        "CUDA was first asked for by <string>" in alone["state"]
        and "(through torch.cuda.is_available())" in alone["state"]
    )
    import torch

    loaded = seen["driver loaded"]
    if torch.version.cuda is None:  # a CPU build never reaches a driver: the driver's own 3 stands
        assert loaded["read"] is False and loaded["setter"] == "set 1"
        return
    assert loaded["read"] is True and loaded["state"].startswith(
        "A CUDA call has already reached the CUDA driver in this process and failed"
    )
    assert loaded["setter"].startswith("refused: not setting CUDA_VISIBLE_DEVICES='1': A CUDA call has already")
    assert loaded["report"][0] == "✘"


@pytest.mark.parametrize("which", ["unclear", "mute"])
def test_a_driver_without_a_clear_answer_is_said_and_not_refused(stubs, which):
    """Neither 0 nor 3 (or no cuDeviceGetCount at all): gpulab cannot tell. The setter sets and warns, the report
    marks it "?" with how to be sure; nothing claims more than that."""
    seen = _run("torch", f"load:{stubs[which]}", "see:it")["it"]
    assert seen["read"] is None and seen["setter"] == "set 1"
    said = {
        "unclear": "libcuda.so.1 answers CUDA_ERROR_STUB_LIBRARY (34) to cuDeviceGetCount",
        "mute": "libcuda.so.1 is loaded but could not be asked (AttributeError: ",
    }[which]
    assert seen["state"].startswith(
        "gpulab cannot tell whether CUDA has read CUDA_VISIBLE_DEVICES in this process: "
        "torch.cuda.is_initialized() is False and gpulab saw no CUDA call since it was "
        f"imported, but the driver gave no clear answer ({said}"
    )
    assert len(seen["warned"]) == 1 and seen["warned"][0].startswith(
        "set CUDA_VISIBLE_DEVICES='1', but could not verify that CUDA had not read it already: gpulab cannot tell"
    )
    assert "restart the kernel and run this cell first" in seen["warned"][0]
    assert seen["report"][:2] == ["?", "CUDA not yet started in this kernel: cannot tell"]


def test_asking_never_loads_a_driver(stubs):
    """The probe opens only a libcuda already mapped (RTLD_NOLOAD): with a libcuda.so.1 on the library path and none
    loaded, cuda_state() leaves the process without one."""
    check = (
        "import ctypes, gpulab; from gpulab.machine.cuda_evidence import mapped_drivers\n"
        "s = gpulab.cuda_state()\n"
        "print(s.driver.loaded, mapped_drivers(open('/proc/self/maps').read()))\n"
        "ctypes.CDLL('libcuda.so.1'); print(len(mapped_drivers(open('/proc/self/maps').read())))\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "CUDA_VISIBLE_DEVICES"}
    env["LD_LIBRARY_PATH"] = f"{stubs['driver'].parent}:{env.get('LD_LIBRARY_PATH', '')}"
    out = process_group.run([sys.executable, "-c", check], capture_output=True, text=True, timeout=120, env=env)
    assert out.stdout.splitlines() == ["False ()", "1"], out.stderr  # the path finds it: only the probe did not


REAL_DRIVER = r"""
import os, sys, gpulab, torch
state = gpulab.cuda_state()  # after import torch: the driver is loaded (diag.txt, line B), not initialised
gpulab.set_visible_devices("")
print(state.driver.loaded, state.driver.initialised, state.variable_read, torch.cuda.is_available())
after = gpulab.cuda_state()  # is_available() ran cuInit, which read the empty variable
print(after.driver.loaded, after.variable_read, "refused" if after.variable_read else "")
"""


@pytest.mark.gpu
def test_the_real_driver_answers_as_the_stand_in_does():
    """On a GPU machine, the checks above against the real libcuda: not initialised after import torch, so the
    empty variable set then hides the GPU from is_available(); started after that call."""
    env = {k: v for k, v in os.environ.items() if k != "CUDA_VISIBLE_DEVICES"}
    out = process_group.run([sys.executable, "-c", REAL_DRIVER], capture_output=True, text=True, timeout=300, env=env)
    assert out.stdout.splitlines() == ["True False False False", "True True refused"], out.stdout + out.stderr
