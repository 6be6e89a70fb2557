"""What importing gpulab costs, that it imports on systems without POSIX locks, and that looking never starts CUDA.

Each check runs in a fresh interpreter: what a module import or a CUDA start leaves behind cannot be undone in this one.
"""

from __future__ import annotations

import os
import sys
import textwrap

import pytest

import gpulab
from tests import process_group

from .cuda_tripwire import PRELUDE, REPORT


def _python(code: str, **env: str) -> str:
    # Importing Lightning sets PYTORCH_NVML_BASED_CUDA_CHECK=1 in os.environ (lightning/fabric/__init__.py), which
    # makes torch.cuda.is_available() ask NVML instead of starting the driver; once any test in this process has
    # imported it, children would inherit that. The children here start from torch's own default.
    base = {k: v for k, v in os.environ.items() if k != "PYTORCH_NVML_BASED_CUDA_CHECK"}
    out = process_group.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=180, env={**base, **env}
    )
    assert out.returncode == 0, out.stderr
    return out.stdout.strip().splitlines()[-1]


def _python_watching_cuda(code: str, **env: str) -> str:
    """Run ``code`` in a fresh interpreter with tests/cuda_tripwire.py installed; its last line lists CUDA starts."""
    return _python(PRELUDE + textwrap.dedent(code) + REPORT, **env)


def test_import_gpulab_loads_no_heavy_module_and_starts_nothing():
    assert (
        _python("""
        import sys, gpulab
        from gpulab.machine.nvml import default_reader
        heavy = [m for m in ("torch", "ipywidgets", "IPython", "matplotlib", "pynvml", "lightning") if m in sys.modules]
        print(heavy, default_reader()._started)
    """)
        == "[] False"
    )


def test_import_gpulab_loads_only_the_package_and_its_watch_for_torch_cuda():
    """What ``import gpulab`` costs is what it loads (``benchmarks/bench_import.py`` times it, ≤ 10 ms): beyond what
    the interpreter had, the package, the watch that waits for ``torch.cuda`` (``machine.cuda_watch``), which
    imports nothing, and ``core.lazy``, which gives ``machine`` its names on first use (standard library only, no
    ``typing``); the recorder of the first CUDA start, its dataclasses and ``traceback`` load with torch."""
    assert (
        _python("""
        import sys
        before = set(sys.modules)
        import gpulab
        print(sorted(set(sys.modules) - before - {"__future__"}))
    """)
        == "['gpulab', 'gpulab.core', 'gpulab.core.lazy', 'gpulab.machine', 'gpulab.machine.cuda_watch']"
    )


def test_every_public_name_resolves_and_unknown_names_say_so():
    for name in gpulab.__all__:
        assert getattr(gpulab, name) is not None, name
    assert set(gpulab.__all__) <= set(dir(gpulab))
    with pytest.raises(AttributeError, match="module 'gpulab' has no attribute 'pick'"):
        gpulab.pick  # noqa: B018  (renamed full_or_fast)


# One interpreter does everything that discovers, describes, selects or watches GPUs, then asks whether CUDA started.
NO_CUDA_SCRIPT = """
    import tempfile, time, torch, gpulab
    from gpulab.placement.selection import Policy
    from gpulab.monitoring.sampler import Sampler
    inv = gpulab.devices()
    r = gpulab.environment_report(); str(r); r._repr_html_()
    str(gpulab.visible_map(inv.gpus))
    gpulab.explain("torch.cuda.set_device(1)\\nmodel.cuda()", env={"CUDA_VISIBLE_DEVICES": "1,0"})
    picker = gpulab.GpuPicker(reservations=tempfile.mkdtemp()); str(picker)
    if inv.gpus:
        gpulab.choose_gpus(1, inv.gpus, Policy(1.0, 100, True))
        gpulab.reserve_gpus(1, policy=Policy(1.0, 100, True), reservations=tempfile.mkdtemp()).release()
    s = Sampler(interval_s=0.05); s.start(); time.sleep(0.3); s.stop()
    with gpulab.monitor(show=False) as mon:
        mon.step(samples=1)
    state = gpulab.cuda_state()
    assert s.history.appended > 0 and not torch.cuda.is_initialized() and not state.driver.loaded
"""


@pytest.mark.parametrize("simulate", ["", "workshop-8"])
def test_discovering_describing_selecting_and_watching_never_start_cuda(simulate):
    # is_initialized() and the driver's mapping alone stay False without a GPU; the tripwire also catches the calls
    assert _python_watching_cuda(NO_CUDA_SCRIPT, GPULAB_SIMULATE_GPUS=simulate) == "CUDA starts: []"


STARTING_CALLS = [
    "torch.cuda.is_available()",
    "torch.ones(1, device='cuda')",
    "torch.cuda.current_device()",
    "torch.cuda.mem_get_info(0)",
    "torch.cuda.set_device(0)",
]


def test_the_tripwire_catches_every_way_to_start_cuda_even_without_a_gpu():
    """The check above can fail here: each call that starts CUDA on a GPU machine trips the wire, raising or not."""
    calls = "".join(f"try:\n    {c}\nexcept (RuntimeError, AssertionError):\n    pass\n" for c in STARTING_CALLS)
    out = _python_watching_cuda("import torch, gpulab\ngpulab.devices(); gpulab.cuda_state()\n" + calls)
    starts = eval(out.removeprefix("CUDA starts: "))
    assert len(starts) == len(STARTING_CALLS) and all(s.split(" from ")[1].startswith("<string>") for s in starts), out
    assert starts[0].startswith("the CUDA driver (cudaGetDeviceCount)") and "CUDA context" in starts[1]


def test_without_posix_locks_gpulab_imports_and_its_cpu_path_runs():
    """Windows has neither fcntl nor pwd: blocked here, the package and the pure parts must still work."""
    assert (
        _python("""
        import sys
        sys.modules["fcntl"] = None; sys.modules["pwd"] = None   # import fcntl now raises ImportError
        import gpulab
        from gpulab.machine.simulated import SimulatedGpuReader
        reader = SimulatedGpuReader("workshop-8")
        gpus = [reader.info(i) for i in range(reader.count())]
        gpulab.parse_visible_devices("2,3"); str(gpulab.visible_map(gpus, {"CUDA_VISIBLE_DEVICES": "2,3"}))
        gpulab.choose_gpus(1, gpus); str(gpulab.explain("x.cuda(1)", reader, {"CUDA_VISIBLE_DEVICES": "2,3"}))
        str(gpulab.environment_report(reader)); str(gpulab.GpuPicker(reader, selected="free:1"))
        try:
            gpulab.reserve_gpus(1, reader)
        except OSError as exc:
            print("refused:", str(exc).split(".")[0])
    """)
        == "refused: GPU reservations use POSIX file locks (flock), which this system (Windows) does not have"
    )
