"""The report names the classroom's classic failures, each with its cause and fix: tried on described machines (JSON
read by SimulatedGpuReader) with described torch facts (the report's ``torch=`` seam)."""

from __future__ import annotations

import json

import nbformat
import pytest

from gpulab.checkup import report as report_module
from gpulab.checkup.build_findings import wheel_index_url
from gpulab.checkup.chapters import chapters
from gpulab.checkup.diagnosis import diagnose, headline
from gpulab.checkup.facts import Facts
from gpulab.checkup.report import environment_report
from gpulab.machine.host import shared_memory_bytes
from gpulab.machine.simulated import SimulatedGpuReader, simulated_gpu
from gpulab.machine.software import TorchFacts
from tests.placement.other_kernel import held_elsewhere

MiB = 2**20


def described_torch(**changes) -> TorchFacts:
    facts = dict(
        version="2.5.1+cu124",
        built_with_cuda="12.4",
        cudnn="9.1.0",
        cuda_available=True,
        cuda_device_count=0,
        cuda_initialized=False,
        gloo=True,
        nccl="2.21.5",
        mps=False,
    )
    return TorchFacts(**{**facts, **changes})


def described_machine(tmp_path, gpus, *, driver="550.90.07", cuda="12.4", name="lab.json") -> SimulatedGpuReader:
    path = tmp_path / name
    path.write_text(json.dumps({"driver_version": driver, "cuda_driver_version": cuda, "gpus": gpus}))
    return SimulatedGpuReader(str(path))


def a100s(n: int, **kw) -> list[dict]:
    return [simulated_gpu(i, "NVIDIA A100-SXM4-40GB", 40960, **kw) for i in range(n)]


@pytest.fixture(autouse=True)
def _quiet_surroundings(monkeypatch, tmp_path):
    """No CUDA_VISIBLE_DEVICES, a private reservations directory, and a roomy /dev/shm unless a test says otherwise."""
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    monkeypatch.delenv("CUDA_DEVICE_ORDER", raising=False)
    monkeypatch.setenv("GPULAB_RESERVATIONS_DIR", str(tmp_path / "reservations"))
    monkeypatch.setattr(report_module, "shared_memory_bytes", lambda: 8 * 2**30)


def row(report, what: str):
    found = [c for c in report.findings if c.what == what]
    assert found, f"no checklist row {what!r}: {[c.what for c in report.findings]}"
    return found[0]


def test_a_torch_built_for_a_newer_cuda_than_the_driver_is_named_with_the_wheel_to_install(tmp_path):
    r = environment_report(
        described_machine(tmp_path, a100s(8)), torch=described_torch(version="2.9.0+cu130", built_with_cuda="13.0")
    )
    assert r.usable_gpus == 0
    assert r.summary.startswith("On this described machine (SIMULATED), this PyTorch would use none of the 8 GPU(s)")
    assert "No GPU found" not in r.summary
    assert "built with CUDA 13.0" in r.summary and "supports CUDA up to 12.4" in r.summary
    finding = row(r, "torch's CUDA fits the driver")
    assert not finding.ok and finding.blocks_gpus
    assert "pip install torch --index-url https://download.pytorch.org/whl/cu124" in finding.fix
    assert "≥ 580.65.06" in finding.fix  # or the driver a CUDA 13 build needs
    assert "✘ torch's CUDA fits the driver" in str(r) and "fix: install a torch built for CUDA 12" in str(r)
    assert "fix:" in r._repr_html_()


@pytest.mark.parametrize(
    "driver_cuda, index",
    [("12.2", "cu121"), ("12.4", "cu124"), ("12.9", "cu129"), ("11.8", "cu118"), ("13.1", "cu130"), ("11.4", "cu118")],
)
def test_the_suggested_wheel_is_the_newest_build_the_driver_runs(driver_cuda, index):
    major, minor = map(int, driver_cuda.split("."))
    assert wheel_index_url((major, minor)).endswith(f"/{index}")


def test_a_newer_minor_cuda_build_runs_through_minor_version_compatibility(tmp_path):
    r = environment_report(
        described_machine(tmp_path, a100s(2)), torch=described_torch(version="2.7.0+cu128", built_with_cuda="12.8")
    )
    finding = row(r, "torch's CUDA fits the driver")
    assert finding.ok and "minor-version compatibility" in finding.meaning
    assert r.usable_gpus == 2
    assert r.summary.startswith("On this described machine (SIMULATED), this PyTorch would use 2 CUDA GPUs")


def test_a_cpu_only_torch_on_a_gpu_machine_says_which_build_to_install(tmp_path):
    r = environment_report(
        described_machine(tmp_path, a100s(2), cuda="12.2"),
        torch=described_torch(version="2.5.1+cpu", built_with_cuda=None, nccl=None),
    )
    finding = row(r, "PyTorch built with CUDA")
    assert not finding.ok and finding.blocks_gpus and "CPU-only build" in finding.meaning
    assert "https://download.pytorch.org/whl/cu121" in finding.fix
    assert "CPU-only build" in r.summary and r.usable_gpus == 0
    assert "No GPU found" not in r.summary


def test_a_cpu_only_torch_on_a_machine_without_gpus_is_fine(tmp_path):
    r = environment_report(
        SimulatedGpuReader(None, error="no NVIDIA driver library (libnvidia-ml.so) was found: x"),
        torch=described_torch(version="2.5.1+cpu", built_with_cuda=None, nccl=None),
    )
    assert row(r, "PyTorch built with CUDA").ok
    assert r.summary.startswith("No GPU found (no NVIDIA driver library (libnvidia-ml.so) was found)")


@pytest.mark.parametrize(
    "value, words", [("", "hides every GPU"), ("-1", "hides every GPU"), ("8", "GPU 8 does not exist")]
)
def test_cuda_visible_devices_hiding_every_gpu_is_the_named_cause(tmp_path, monkeypatch, value, words):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", value)
    r = environment_report(described_machine(tmp_path, a100s(8)), torch=described_torch())
    finding = row(r, "CUDA_VISIBLE_DEVICES")
    assert not finding.ok and finding.blocks_gpus and words in finding.meaning
    assert "0–7 here" in finding.fix and "python -m gpulab visible" in finding.fix
    assert f"CUDA_VISIBLE_DEVICES={value!r}" in r.summary and r.usable_gpus == 0


def test_cuda_visible_devices_naming_some_gpus_counts_them(tmp_path, monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "5,1")
    r = environment_report(described_machine(tmp_path, a100s(8)), torch=described_torch())
    assert row(r, "CUDA_VISIBLE_DEVICES").meaning == "'5,1': cuda:0 = GPU 5, cuda:1 = GPU 1"
    assert r.usable_gpus == 2


def test_every_gpu_busy_or_reserved_is_said_with_who_and_what_to_do(tmp_path):
    gpus = [
        simulated_gpu(0, "Tesla T4", 15360, used_mib=14000, util=100, processes=((4242, 13500, "python"),)),
        simulated_gpu(1, "Tesla T4", 15360, used_mib=3),
    ]
    machine = described_machine(tmp_path, gpus)
    # the one free GPU, held by another student's kernel (a process of its own: this one's reservation would be its own
    # GPU)
    with held_elsewhere(1, str(tmp_path / "lab.json"), tmp_path / "reservations") as (pid, _):
        r = environment_report(machine, torch=described_torch())
        finding = row(r, "a free GPU to work on")
        assert not finding.ok and not finding.blocks_gpus
        assert f"GPU 1 reserved by pid {pid}" in finding.meaning and "GPU 0 " in finding.meaning
        assert "reserve_gpus(1, wait_s=600)" in finding.fix and "python -m gpulab watch" in finding.fix
        assert r.summary.endswith("Right now every GPU is busy or reserved: see the checklist.")
    again = environment_report(machine, torch=described_torch())
    assert (
        row(again, "a free GPU to work on").ok and "1 free now (GPU 1)" in row(again, "a free GPU to work on").meaning
    )


def test_a_mig_gpu_without_slices_is_named_and_explains_zero_gpus(tmp_path):
    empty = simulated_gpu(0, "NVIDIA A100 80GB PCIe", 81920)
    empty["mig_enabled"] = True  # MIG mode on, no instance created yet
    r = environment_report(described_machine(tmp_path, [empty]), torch=described_torch())
    finding = row(r, "GPU 0 MIG slices")
    assert not finding.ok and finding.blocks_gpus and "no MIG instance" in finding.meaning
    assert "nvidia-smi mig -i 0 -cgi" in finding.fix and "nvidia-smi -i 0 -mig 0" in finding.fix
    assert r.usable_gpus == 0 and "MIG mode with no MIG instance" in r.summary


def test_a_mig_gpu_with_slices_next_to_a_whole_gpu(tmp_path):
    r = environment_report(SimulatedGpuReader("two-gpus-mig"), torch=described_torch())
    assert row(r, "GPU 0 MIG slices").ok and "2 slice(s)" in row(r, "GPU 0 MIG slices").meaning
    assert r.usable_gpus == 2  # the RTX 3090 and one MIG slice (CUDA enumerates a single slice per process)


def test_nccl_missing_matters_only_with_two_or_more_gpus(tmp_path):
    two = environment_report(described_machine(tmp_path, a100s(2)), torch=described_torch(nccl=None))
    finding = row(two, "NCCL backend (DDP across GPUs)")
    assert not finding.ok and "no NCCL" in finding.meaning and "WSL2" in finding.fix
    one = environment_report(described_machine(tmp_path, a100s(1), name="one.json"), torch=described_torch(nccl=None))
    assert row(one, "NCCL backend (DDP across GPUs)").ok


def test_a_small_dev_shm_is_named_with_the_dataloader_error_and_the_fix(tmp_path, monkeypatch):
    monkeypatch.setattr(report_module, "shared_memory_bytes", lambda: 64 * MiB)
    r = environment_report(described_machine(tmp_path, a100s(1)), torch=described_torch())
    finding = row(r, "shared memory for DataLoader workers")
    assert not finding.ok and "/dev/shm is 64.0 MiB" in finding.meaning
    assert "insufficient shared memory (shm)" in finding.meaning
    assert "--shm-size=2g" in finding.fix and "num_workers=0" in finding.fix


def test_shared_memory_is_read_from_the_filesystem(tmp_path):
    assert shared_memory_bytes(tmp_path) > 0
    assert shared_memory_bytes(tmp_path / "missing") is None


def test_on_a_real_machine_device_count_is_not_trusted_when_the_driver_is_too_old(tmp_path):
    """torch.cuda.device_count() asks NVML, so it counts 8 GPUs that CUDA itself will refuse: the report must not."""

    class ThisMachine(SimulatedGpuReader):
        simulated = False

    path = tmp_path / "real.json"
    path.write_text(json.dumps({"driver_version": "550.90.07", "cuda_driver_version": "12.4", "gpus": a100s(8)}))
    r = environment_report(
        ThisMachine(str(path)),
        torch=described_torch(version="2.9.0+cu130", built_with_cuda="13.0", cuda_device_count=8),
    )
    assert r.usable_gpus == 0
    assert r.summary.startswith("PyTorch will use none of the 8 GPU(s) NVML lists. Cause: torch 2.9.0+cu130")
    unknown = environment_report(ThisMachine(str(path)), torch=described_torch(cuda_device_count=0))
    assert (
        unknown.summary.startswith("PyTorch sees none of the 8 GPU(s) NVML lists, for a reason this report cannot tell")
        and "torch.cuda.init()" in unknown.summary
    )
    fine = environment_report(ThisMachine(str(path)), torch=described_torch(cuda_device_count=8))
    assert fine.usable_gpus == 8 and fine.summary.startswith("8 CUDA GPUs are usable")


def test_the_headline_names_a_cause_wherever_nvml_lists_gpus(tmp_path):
    torch = described_torch()
    for gpus in (a100s(1), a100s(8)):
        facts = Facts(
            torch,
            tuple(
                SimulatedGpuReader({"driver_version": "550", "cuda_driver_version": "12.4", "gpus": gpus}).info(i)
                for i in range(len(gpus))
            ),
            "550",
            "12.4",
            None,
            simulated=True,
            env={"CUDA_VISIBLE_DEVICES": ""},
        )
        findings, usable = diagnose(facts)
        text = headline(facts, findings, usable)
        assert "No GPU found" not in text and "CUDA_VISIBLE_DEVICES=''" in text


def test_chapters_are_read_from_the_notebooks_themselves(tmp_path):
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_markdown_cell("# 07 · What if?\n\nText."),
        nbformat.v4.new_code_cell("import lightning as L"),
        nbformat.v4.new_code_cell("%%gpu\nx = 1", metadata={"tags": ["gpu"]}),
        nbformat.v4.new_code_cell("%%gpu 2\ny = 2", metadata={"tags": ["multigpu"]}),
    ]
    nbformat.write(nb, tmp_path / "07_what_if.ipynb")
    (tmp_path / "notes.ipynb").write_text("{}")  # not a chapter: no NN_ prefix
    (found,) = chapters(tmp_path)
    assert (found.name, found.title, found.gpu_cells, found.multigpu_cells, found.uses_lightning) == (
        "07_what_if",
        "07 · What if?",
        1,
        1,
        True,
    )
    assert found.plan(0) == "1 GPU cell(s) skip, saying why; 1 multi-GPU cell(s) skip, saying why"
    assert found.plan(2) == "1 GPU cell(s) run; 1 multi-GPU cell(s) run"
    here = chapters()
    assert here and here[0].name == "00_setup" and all(c.name[:2].isdigit() for c in here)


def test_the_report_lists_the_chapters_that_exist_and_what_they_will_do(tmp_path, monkeypatch):
    r = environment_report(described_machine(tmp_path, a100s(2)), torch=described_torch())
    names = [c.name for c in r.chapters]
    assert names == [c.name for c in chapters()]
    text = str(r)
    assert "Chapters here, and what they will do:" in text and "00_setup" in text
    monkeypatch.setattr(report_module, "chapters", lambda: ())
    assert "(none found)" in str(environment_report(described_machine(tmp_path, a100s(2)), torch=described_torch()))


@pytest.mark.parametrize(
    "version, ok, says",
    [
        ("7.7.1", True, "interactive"),
        ("8.1.5", True, "interactive"),
        ("7.6.5", False, "7.6.5 is too old"),
        (None, False, "not installed"),
    ],
)
def test_ipywidgets_7_7_and_8_both_pass_the_widgets_finding(version, ok, says):
    """Colab holds 7.7.1, Kaggle 8.1.5: both are supported (make test-compat runs the picker and monitor on 7.7.1)."""
    facts = Facts(described_torch(), (), "N/A", "N/A", "no driver", packages={"ipywidgets": version})
    findings, _ = diagnose(facts)
    [finding] = [c for c in findings if c.what == "ipywidgets ≥ 7.7"]
    assert finding.ok is ok and says in finding.meaning and "7.7.1" in finding.fix


@pytest.mark.parametrize("nccl", ["2.21.5", None], ids=["nccl", "no nccl"])
@pytest.mark.parametrize("n", [0, 1, 2, 8])
def test_what_the_report_says_follows_the_gpu_count(tmp_path, n, nccl):
    """Each decision the report makes from the count, for 0, 1, 2 and 8 described GPUs, with NCCL or without."""
    r = environment_report(described_machine(tmp_path, a100s(n)), torch=described_torch(nccl=nccl))
    assert r.usable_gpus == n
    assert row(r, "at least one CUDA GPU usable by PyTorch").ok is (n >= 1)
    assert row(r, "two or more CUDA GPUs").ok is (n >= 2)
    assert ("worker processes run on the CPU with gloo" in row(r, "two or more CUDA GPUs").meaning) is (n < 2)
    assert row(r, "NCCL backend (DDP across GPUs)").ok is (nccl is not None or n < 2)
    free = [c for c in r.findings if c.what == "a free GPU to work on"]
    assert (free[0].ok and free[0].meaning.startswith(f"{n} free now")) if n else not free
    expected = {
        0: "No GPU found (NVML lists no GPU). CPU fallback mode",
        1: "On this described machine (SIMULATED), this PyTorch would use 1 CUDA GPU: GPU cells would run; "
        "multi-GPU cells would skip.",
        2: "On this described machine (SIMULATED), this PyTorch would use 2 CUDA GPUs: every chapter would "
        "run its GPU and multi-GPU cells.",
        8: "On this described machine (SIMULATED), this PyTorch would use 8 CUDA GPUs: every chapter would "
        "run its GPU and multi-GPU cells.",
    }[n]
    assert r.summary.startswith(expected), r.summary
    text = str(r)
    assert r.chapters and any(c.multigpu_cells for c in r.chapters)
    for c in r.chapters:  # which cells run, chapter by chapter, as the report's table says
        plan = c.plan(r.usable_gpus)
        assert plan in text
        if c.gpu_cells:
            assert f"{c.gpu_cells} GPU cell(s) {'run' if n >= 1 else 'skip, saying why'}" in plan
        if c.multigpu_cells:
            assert f"{c.multigpu_cells} multi-GPU cell(s) {'run' if n >= 2 else 'skip, saying why'}" in plan
    assert row(r, "CUDA not yet started in this kernel").ok  # the count does not touch this process's CUDA
