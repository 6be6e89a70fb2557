"""The doctor on real processes: each finding fails in a Python that has the problem and passes in a clean one (one
fresh interpreter per state: a started OpenMP pool or CUDA attempt cannot be undone), and the pure verdicts on states
no CPU machine can reach (CUDA initialised, port 29500 held)."""

from __future__ import annotations

import json
import os
import sys

import pytest

from gpulab.checkup.doctor import Doctor, findings
from gpulab.checkup.kernel_state import KernelState
from gpulab.machine.cuda import CudaState
from gpulab.machine.cuda_evidence import DriverAnswer
from gpulab.machine.cuda_start import CodeLine, CudaStart
from tests import process_group

STAGES = """\
import json, os, sys, gpulab

def report(stage, **kw):
    findings = gpulab.doctor(**kw).findings
    print(stage, json.dumps([[c.ok, c.what, c.meaning, c.fix] for c in findings]))

import torch
x = torch.ones(3) + 1                              # one thread: OpenMP's pool stays unstarted
report("clean")
os.environ["CUDA_VISIBLE_DEVICES"] = "1"
report("visible-early")
try:
    torch.cuda.init()
except (RuntimeError, AssertionError):
    pass
os.environ["CUDA_VISIBLE_DEVICES"] = "2"
report("cuda")
torch.set_num_threads(2)
a = torch.ones(400, 400)
(a @ a).sum()
report("openmp")
import torch.distributed as dist
store = dist.TCPStore("127.0.0.1", 0, 1, True, wait_for_workers=False)
dist.init_process_group("gloo", store=store, rank=0, world_size=1)
report("group")
"""


def _stages(tmp_path, script: str = STAGES, **env: str) -> dict[str, list]:
    """Run the stages in one fresh Python (each leaves its problem behind; none can be undone) -> verdicts by stage."""
    path = tmp_path / "learner.py"
    path.write_text(script)
    base = {k: v for k, v in os.environ.items() if k not in ("CUDA_VISIBLE_DEVICES", "OMP_NUM_THREADS")}
    out = process_group.run(
        [sys.executable, str(path)], capture_output=True, text=True, timeout=180, env={**base, **env}, cwd=str(tmp_path)
    )
    assert out.returncode == 0, out.stderr
    return {line.split(" ", 1)[0]: json.loads(line.split(" ", 1)[1]) for line in out.stdout.splitlines()}


def _by_what(findings: list, start: str) -> list:
    found = [c for c in findings if c[1].startswith(start)]
    assert found, (start, [c[1] for c in findings])
    return found[0]


def test_each_finding_passes_in_a_clean_python_and_fails_once_its_problem_is_there(tmp_path):
    stages = _stages(tmp_path, CUDA_VISIBLE_DEVICES="0")
    assert len(stages["clean"]) == 9 and all(ok for ok, *_ in stages["clean"]), stages["clean"]
    assert _by_what(stages["visible-early"], "CUDA_VISIBLE_DEVICES changed before CUDA started")[0]

    cuda = _by_what(stages["cuda"], "CUDA asked for")
    assert not cuda[0] and "learner.py, line 13: `torch.cuda.init()`" in cuda[2] and "Restart the kernel" in cuda[3]
    visible = _by_what(stages["cuda"], "CUDA_VISIBLE_DEVICES changed after CUDA was asked")
    assert not visible[0] and "at kernel start '0', now '2'" in visible[2]
    assert _by_what(stages["cuda"], "OpenMP threads: pool not started")[0]

    for what in ("OpenMP threads: pool started", "start method", "accelerate notebook_launcher may hang"):
        assert not _by_what(stages["openmp"], what)[0], what
    # Lightning gives each of 2 forked ranks cores ÷ 2 threads: one thread per rank needs no pool, and does not hang
    lightning = _by_what(stages["openmp"], "Lightning ddp_notebook would")
    assert lightning[0] == (len(os.sched_getaffinity(0)) // 2 < 2), lightning
    assert "OMP_NUM_THREADS=1" in _by_what(stages["openmp"], "OpenMP")[3]

    group = _by_what(stages["group"], "a gloo process group is open")
    assert not group[0] and "destroy_process_group()" in group[3]
    ports = _by_what(stages["group"], "port(s)")
    assert not ports[0] and "address already in use" in ports[2]


@pytest.mark.parametrize("cores, hangs", [(1, False), (2, False), (3, False), (4, True), (8, True)])
def test_lightning_hangs_only_where_its_ranks_get_several_threads(cores, hangs, monkeypatch):
    # with OpenMP's pool started, a forked rank hangs at its first op on 2+ threads; Lightning gives each of 2 ranks
    # cores ÷ 2 (chapter 06 runs it on 2 cores: 1 thread per rank, and the fit finishes)
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    doctor = Doctor(findings(_state(extra_threads=1, usable_cores=cores)))
    found = [f for f in doctor.findings if f.what.startswith("Lightning ddp_notebook")][0]
    assert (found.ok, found.what) == (not hangs, f"Lightning ddp_notebook would {'hang' if hangs else 'start'}")
    assert f"{max(1, cores // 2)} thread" in found.meaning and f"{cores} usable core" in found.meaning


def test_a_reservation_that_cuda_visible_devices_does_not_use_fails_until_applied(tmp_path):
    stages = _stages(
        tmp_path,
        f"""\
import json, gpulab
def report(stage):
    found = gpulab.doctor(reservations={str(tmp_path)!r}).findings
    print(stage, json.dumps([[c.ok, c.what, c.meaning, c.fix] for c in found]))
r = gpulab.reserve_gpus(1, reservations={str(tmp_path)!r})
report("held")
r.apply()
report("applied")
""",
        GPULAB_SIMULATE_GPUS="workshop-8",
    )
    reservation = _by_what(stages["held"], "GPU ")
    assert not reservation[0] and "reserved by this notebook, but not used" in reservation[1]
    assert "apply()" in reservation[3]
    assert _by_what(stages["applied"], "GPU ")[0]


def _state(**changes) -> KernelState:
    line = CodeLine("/tmp/ipykernel_1/5.py", 3, "<module>", "x = torch.ones(2).cuda()", cell=7)
    base = dict(
        cuda=CudaState(True, False),
        visible_at_start=None,
        visible_now=None,
        start_method=None,
        fork_available=True,
        torch_threads=2,
        extra_threads=0,
        process_group=None,
        ports=(),
        launch_port=None,
    )
    if changes.pop("cuda_initialized", False):
        base["cuda"] = CudaState(
            True,
            True,
            DriverAnswer.answered("/lib/libcuda.so.1", 0, 1),
            CudaStart("torch.cuda._lazy_init", line, (line,)),
        )
    return KernelState(**{**base, **changes})


def test_with_cuda_initialised_both_fork_launchers_refuse_and_the_line_is_quoted():
    d = Doctor(findings(_state(cuda_initialized=True)))
    assert "cell [7], line 3: `x = torch.ones(2).cuda()`" in d.finding("CUDA started").meaning
    assert not d.finding("Lightning ddp_notebook would fail").ok
    assert "cell [7], line 3" in d.finding("accelerate notebook_launcher would refuse").meaning
    assert not d.finding("start method").ok
    assert "3 problem" not in str(d) and str(d).startswith("gpulab doctor: 4 problem(s)")
    assert "<b>CUDA started in this kernel</b>" in d._repr_html_()


LOADED = DriverAnswer.answered("/usr/lib/libcuda.so.580.159.04", 3)  # after `import torch` on a GPU machine


@pytest.mark.parametrize(
    "driver, ok, what, says",
    [
        (
            DriverAnswer.not_loaded(),
            True,
            "CUDA not started",
            "the CUDA driver (libcuda) is not loaded in this process",
        ),
        (
            LOADED,
            True,
            "CUDA not started",
            "loaded but not initialised (libcuda.so.580.159.04 answers CUDA_ERROR_NOT_INITIALIZED (3)",
        ),
        (
            DriverAnswer.answered("/usr/lib/libcuda.so.1", 0, 1),
            False,
            "CUDA started in this kernel",
            "The CUDA driver in this process says it has started",
        ),
        (
            DriverAnswer.unanswered("/usr/lib/libcuda.so.1", "OSError: gone"),
            None,
            "CUDA started in this kernel? cannot tell",
            "the driver gave no clear answer (libcuda.so.1 is loaded but could not be asked (OSError: gone))",
        ),
        (
            DriverAnswer.unlisted("darwin"),
            None,
            "CUDA started in this kernel? cannot tell",
            "it cannot ask the CUDA driver itself (not asked: gpulab finds the driver through /proc/self/maps, which "
            "macOS lacks)",
        ),
    ],
    ids=["not loaded", "loaded, not initialised", "initialised", "no clear answer", "off Linux"],
)
def test_the_doctor_says_what_the_driver_says_and_no_more(driver, ok, what, says):
    d = Doctor(findings(_state(cuda=CudaState(True, False, driver))))
    finding = d.findings[0]
    assert (finding.ok, finding.what) == (ok, what) and says in finding.meaning, finding
    assert d.finding("start method").ok is (ok is not False)  # CUDA does not survive a fork after cuInit
    assert d.finding("Lightning ddp_notebook would start").ok  # torch made no context: Lightning's own check passes
    head = str(d).splitlines()[0]
    if ok is None:
        assert head == "gpulab doctor: no problem in this kernel, 1 thing(s) it cannot tell"
        assert "  ? CUDA started in this kernel? cannot tell" in str(d) and "      to be sure: if a cell" in str(d)
        assert "<b>to be sure:</b>" in d._repr_html_()
    else:
        assert head == (
            "gpulab doctor: no problem in this kernel" if ok else "gpulab doctor: 2 problem(s) in this kernel"
        )  # started, and so a fork is not safe


def test_a_failed_call_recorded_with_the_driver_loaded_is_a_start():
    """is_available() that returned False on a machine whose driver is loaded went through cuInit; PyTorch keeps the
    answer. On a CPU-only build the same call reached no driver, and the driver's own answer stands."""
    line = CodeLine("/tmp/ipykernel_1/5.py", 1, "<module>", "torch.cuda.is_available()", cell=2)
    asked = CudaStart("torch.cuda.is_available()", line, (line,), "torch.cuda.is_available() returned False")
    d = Doctor(findings(_state(cuda=CudaState(True, False, LOADED, asked))))
    assert not d.findings[0].ok and d.findings[0].what == "CUDA started in this kernel"
    assert d.findings[0].meaning.startswith(
        "A CUDA call has already reached the CUDA driver in this process and failed"
    )
    assert "cell [2], line 1: `torch.cuda.is_available()`" in d.findings[0].meaning
    cpu_build = Doctor(findings(_state(cuda=CudaState(True, False, LOADED, asked, torch_has_cuda=False))))
    assert cpu_build.findings[0].what == "CUDA asked for in this kernel"
    assert CudaState(True, False, LOADED, asked, torch_has_cuda=False).variable_read is False


def test_a_changed_variable_is_judged_by_the_same_evidence():
    moved = dict(visible_at_start=None, visible_now="1")
    assert (
        Doctor(findings(_state(cuda=CudaState(True, False, LOADED), **moved))).finding("CUDA_VISIBLE_DEVICES").what
        == "CUDA_VISIBLE_DEVICES changed before CUDA started"
    )
    unsure = Doctor(findings(_state(cuda=CudaState(True, False, DriverAnswer.unlisted("win32")), **moved)))
    finding = unsure.finding("CUDA_VISIBLE_DEVICES")
    assert finding.ok is None
    assert finding.what == "CUDA_VISIBLE_DEVICES changed; whether CUDA had read it first cannot be told"
    read = Doctor(findings(_state(cuda=CudaState(True, True), **moved)))
    assert read.finding("CUDA_VISIBLE_DEVICES").what == "CUDA_VISIBLE_DEVICES changed after CUDA was asked"


def test_port_29500_held_makes_notebook_launcher_fail_and_accelerate_state_refuses():
    d = Doctor(findings(_state(ports=(29500,))))
    assert "use_port" in d.finding("accelerate notebook_launcher would fail").fix
    assert not Doctor(findings(_state(accelerator_made=True))).finding("accelerate notebook_launcher would refuse").ok
    assert not Doctor(findings(_state(fork_available=False))).finding("Lightning ddp_notebook would refuse").ok


def test_an_unknown_finding_name_lists_the_known_ones():
    import pytest

    with pytest.raises(KeyError, match="the findings are: CUDA not started"):
        Doctor(findings(_state())).finding("nonsense")
