"""make test-gpu: the GPU tests and every chapter's GPU cells, run by the Python that already holds torch, as it is.

    GPU_PYTHON=/usr/bin/python3 make test-gpu        # runs: $GPU_PYTHON tools/gpu_run.py

1. What the run lacks (the notebook stack, nbval, ipywidgets) goes into .gpu-deps/ in this checkout, from wheelhouse/
   with no index when that folder exists (tools/gpukit/deps.py); torch and CUDA are never installed or upgraded.
   gpulab's own entry points (its kernel provisioner) are registered there as metadata only (tools/gpukit/distinfo.py),
   and a check in the run's own environment makes sure that Python finds them and imports gpulab from this checkout
   (tools/gpukit/preflight.py). The chapters run fast unless GPULAB_FAST=0 says full; the record says which.
2. pytest runs the test files that hold gpu/multigpu tests, with GPULAB_ONLY_GPU=1 (only their GPU tests, and the
   chapters that have GPU cells, whose CPU cells run everywhere). The kit's own tests (tests/evidence) run in make test
   and make test-kit, not here: GPULAB_ONLY_GPU keeps only GPU tests.
   The chapters' GPU cells run at the full sizes a learner's run uses (GPULAB_FULL_GPU_CELLS=1: %%gpu sets
   GPULAB_FAST=0 while such a cell runs); the CPU cells around them keep the chosen mode.
3. Where a GPU ran them, the figures the chapters quote are measured and evidence/<date>-<gpu>.json is written with
   its Markdown summary. Where there is none, it says so and exits 0 once the CPU-side checks passed.
4. The GPU edition: the same pytest pass keeps every chapter as it executed (tests/cell_recorder.py), and where a GPU
   ran them they become the bundle evidence/<date>-<gpu>/ with its manifest (tools/gpukit/bundle.py), checked for
   anything private, plus evidence/<date>-<gpu>.tar.gz: the one file to send or carry home. The summary says how long
   each part took (the whole run is meant to fit 8 minutes on one GPU).
"""

from __future__ import annotations

import datetime
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tools"), str(ROOT)]
GPU_TEST = re.compile(r"pytest\.mark\.(?:gpu|multigpu)\b|requires_gpus\(")


def gpu_test_files(tests: Path = ROOT / "tests") -> list[Path]:
    """The test files that hold a gpu/multigpu test (other files may import what this machine need not have)."""
    return sorted(p for p in tests.rglob("test_*.py") if GPU_TEST.search(p.read_text()))


def outcomes(junit_xml: Path) -> dict[str, str]:
    """Test id -> passed/failed/skipped/error, from pytest's JUnit XML."""
    out = {}
    for case in ET.parse(junit_xml).iter("testcase"):
        test_id = f"{case.get('classname')}::{case.get('name')}"
        kinds = {child.tag for child in case}
        out[test_id] = (
            "failed"
            if "failure" in kinds
            else "error"
            if "error" in kinds
            else "skipped"
            if "skipped" in kinds
            else "passed"
        )
    return out


def _machine() -> dict:
    import torch

    gpus = [
        {"name": torch.cuda.get_device_name(i), "memory_bytes": torch.cuda.get_device_properties(i).total_memory}
        for i in range(torch.cuda.device_count())
    ]
    smi = subprocess.run(
        ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
        capture_output=True,
        text=True,
        timeout=60,
    ).stdout.split()
    return {
        "gpus": gpus,
        "driver": smi[0] if smi else "unknown",
        "cuda": torch.version.cuda or "none",
        "torch": torch.__version__,
        "python": platform.python_version(),
    }


def measure(machine_facts: dict) -> dict:
    from gpukit import figures as f

    n = len(machine_facts["gpus"])
    figs = f.guarded(lambda: f.transfers("cuda:0"))
    if "not_measured" in figs:
        figs = {k: figs for k in ("h2d_pageable_gbps", "h2d_pinned_gbps", "d2h_pageable_gbps", "d2h_pinned_gbps")}
    figs["non_blocking_overlap"] = f.guarded(lambda: f.non_blocking_overlap("cuda:0"))
    figs["matmul_tflops"] = f.guarded(lambda: f.matmul_tflops("cuda:0", gpu_name=machine_facts["gpus"][0]["name"]))
    figs["cuda_context_bytes"] = f.guarded(lambda: f.cuda_context_bytes("cuda:0"))
    figs["dataparallel_samples_per_s"] = f.guarded(
        lambda: f.dataparallel_samples_per_s([f"cuda:{i}" for i in range(n)])
    )
    figs["ddp_samples_per_s"] = f.guarded(lambda: f.ddp_samples_per_s("auto"))  # where the launcher puts 2 ranks
    figs["nccl_allreduce_busbw_gbps"] = f.guarded(lambda: f.nccl_allreduce_busbw_gbps(n))
    return figs


def explain_corpus(junit_xml: Path) -> dict:
    """explain() against CUDA, in snippets: the counts each corpus test of tests/placement/test_explain_on_gpus.py
    recorded in the JUnit XML (property ``explain_corpus``: snippets run, one line per snippet that disagreed), added
    up; a corpus test that failed before it could count is named in ``uncounted``."""
    out: dict = {"snippets": 0, "disagreements": [], "uncounted": []}
    for case in ET.parse(junit_xml).iter("testcase") if junit_xml.exists() else ():
        if not (case.get("classname") or "").endswith("test_explain_on_gpus"):
            continue
        props = {p.get("name"): p.get("value") for p in case.iter("property")}
        if "explain_corpus" in props:
            counts = json.loads(props["explain_corpus"])
            out["snippets"] += counts["snippets"]
            out["disagreements"] += counts["disagreements"]
        elif {child.tag for child in case} & {"failure", "error"}:
            out["uncounted"].append(f"{case.get('classname')}::{case.get('name')}")
    return out


def chapter_mode() -> str:
    """'fast' or 'full': the sizes the chapters run at. Unset GPULAB_FAST means fast, as under make test (conftest.py
    sets it there); GPULAB_FAST=0 runs the full sizes. Set here, so that the record states what the kernels read."""
    from gpulab.core.settings import fast_mode

    os.environ.setdefault("GPULAB_FAST", "1")
    return "fast" if fast_mode() else "full"


def kit_env(root: Path, target: Path, wheelhouse: Path | None, python: str = sys.executable) -> tuple[dict, dict]:
    """The install step and the environment the tests run in: what ``python`` lacks goes into ``target`` (returned,
    name -> version), gpulab's metadata is registered there, and ``target`` then the checkout lead PYTHONPATH."""
    from gpukit import distinfo
    from gpukit.deps import add_missing

    added = add_missing(python, target, wheelhouse)
    distinfo.register(root, target)
    env = {
        **os.environ,
        "GPULAB_ONLY_GPU": "1",
        "GPULAB_RECORD_EVIDENCE": "1",  # chapter 05 keeps its GPU run
        "GPULAB_FULL_GPU_CELLS": "1",  # the GPU cells at a learner's full sizes, whatever the CPU cells run at
        "GPULAB_RECORD_CHAPTERS": str(target / "executed"),  # tests/cell_recorder.py keeps each chapter as it ran
        "PYTHONPATH": os.pathsep.join(filter(None, [str(target), str(root), os.environ.get("PYTHONPATH")])),
    }
    return added, env


def preflight(root: Path, env: dict, python: str = sys.executable) -> list[str]:
    """What is wrong with the run's environment, seen by a fresh ``python`` in it (tools/gpukit/preflight.py)."""
    done = subprocess.run(
        [python, str(root / "tools" / "gpukit" / "preflight.py"), str(root)],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    if done.returncode not in (0, 1):
        return [f"the check of the run's environment itself failed:\n{(done.stdout + done.stderr).strip()[-2000:]}"]
    return done.stdout.splitlines() if done.returncode else []


def record_of(
    machine_facts: dict,
    mode: str,
    tests: dict[str, str],
    figures: dict,
    pytest_exit: int,
    *,
    corpus: dict | None = None,
    timings: dict[str, float] | None = None,
    bundle: str | None = None,
) -> dict:
    """The evidence record of this run (schema 3), its paths rewritten as the log shows them: the checkout as
    ``<repo>``, site-packages as ``.../site-packages`` (a figure's note may hold a traceback). ``corpus``: what
    ``explain_corpus`` read from the run's JUnit XML (none counted when not given); ``timings``: seconds each part
    took; ``bundle``: the GPU edition's folder in evidence/, where one was recorded."""
    from gpukit import evidence

    record = {
        "schema": evidence.SCHEMA_VERSION,
        "date": datetime.date.today().isoformat(),
        "machine": machine_facts,
        "mode": mode,
        "tests": {t: o for t, o in tests.items() if not t.startswith("tests.evidence")},
        "explain_corpus": corpus or {"snippets": 0, "disagreements": [], "uncounted": []},
        "figures": figures,
        "pytest_exit": pytest_exit,
        "timings_s": {k: round(v, 1) for k, v in (timings or {}).items()},
        "bundle": bundle,
    }
    return evidence.redact(record, ROOT)


def described_machine(preset: str) -> dict:
    """A machine's facts from a described one (``GPULAB_SIMULATE_GPUS``), for a bundle recorded without GPUs: the
    GPUs, driver and CUDA the description gives, with this Python's torch. Such a bundle says it is SIMULATED."""
    import torch

    from gpulab.machine.simulated import SimulatedGpuReader

    reader = SimulatedGpuReader(preset)
    gpus = [reader.info(i) for i in range(reader.count())]
    return {
        "gpus": [{"name": g.name, "memory_bytes": g.memory_total_bytes} for g in gpus],
        "driver": reader.driver_version(),
        "cuda": str(reader.cuda_driver_version()),
        "torch": torch.__version__,
        "python": platform.python_version(),
    }


def record_bundle(
    executed: Path, machine_facts: dict, mode: str, *, out: Path = ROOT / "evidence", simulated: bool = False
) -> Path:
    """The GPU edition's bundle from the chapters this run executed (``executed``), in ``out``: its folder."""
    from gpukit import bundle

    return bundle.write(
        executed,
        out,
        machine_facts,
        date=datetime.date.today().isoformat(),
        mode=mode,
        gpu_cells_mode="full",
        repo=ROOT,
        simulated=simulated,
    )


def _shown(path: Path) -> Path:
    return path.relative_to(ROOT) if path.is_relative_to(ROOT) else path


def what_to_send(archive: Path, problems: list[str]) -> str:
    """The run's last words: the one file to send (or carry home), or what in it is private."""
    if problems:
        return "The bundle names something private; do not send it before this is fixed:\n" + "\n".join(
            f"- {p}" for p in problems
        )
    return (
        f"Checked for home folders, user and host names and tokens: none found. To share this run, send "
        f"{_shown(archive)} (it holds the evidence file, its "
        f"summary, chapter 05's monitor run and every chapter as this GPU ran it); a maintainer unpacks it in a "
        f"checkout with `tar -xzf {archive.name}`."
    )


def simulated_bundle(preset: str, target: Path = ROOT / ".gpu-deps") -> int:
    """``gpu_run.py --simulated-bundle PRESET``: the bundle step of a run on a machine without GPUs, from the chapters
    the last run executed (``.gpu-deps/executed/``), with a described machine's facts (``PRESET``, as
    ``GPULAB_SIMULATE_GPUS`` names them), into ``.gpu-deps/simulated-evidence/`` (never ``evidence/``), labelled
    SIMULATED; then the privacy check and the archive, as after a GPU run. ``make test-kit`` runs it after
    ``make test-gpu``, so that the kit's own environment writes a bundle before a GPU machine does."""
    from gpukit import bundle

    sys.path.insert(0, str(target))
    try:
        folder = record_bundle(
            target / "executed", described_machine(preset), chapter_mode(), out=target / "simulated-evidence",
            simulated=True,
        )  # fmt: skip
    except (bundle.BundleError, ValueError) as exc:
        print(f"gpu_run.py --simulated-bundle: {exc}")
        return 1
    print(bundle.summary(folder) + " SIMULATED: a check of the kit, never evidence; nothing to send.")
    found = bundle.problems(folder)
    archive = bundle.archive(folder)
    print(f"privacy: {'; '.join(found) or 'nothing private found'}; archive: {_shown(archive)}")
    return 1 if found else 0


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--simulated-bundle"] and len(argv) == 2:
        return simulated_bundle(argv[1])
    if argv:
        print(f"gpu_run.py takes no arguments, or --simulated-bundle PRESET; got {' '.join(argv)!r}")
        return 2
    try:
        import torch
    except ImportError:
        print(
            f"{sys.executable} has no torch: point GPU_PYTHON at the Python that holds this machine's torch build "
            "(make test-gpu GPU_PYTHON=/path/to/python)."
        )
        return 2
    from gpukit.distinfo import MetadataError

    wheelhouse = ROOT / "wheelhouse" if (ROOT / "wheelhouse").is_dir() else None
    target = ROOT / ".gpu-deps"
    timings: dict[str, float] = {}
    started = time.perf_counter()
    try:
        mode = chapter_mode()
        added, env = kit_env(ROOT, target, wheelhouse)
    except (RuntimeError, MetadataError, ValueError) as exc:
        print(f"make test-gpu: {exc}")
        return 2
    print(
        f"GPU run: {sys.executable} (Python {platform.python_version()}, torch {torch.__version__}); "
        f"added to {target.name}/: {', '.join(sorted(added)) or 'nothing (already there)'}"
        f"{' from wheelhouse/ (no index)' if wheelhouse and added else ''}; gpulab's entry points registered "
        f"there (metadata only); chapters in {mode} mode (GPULAB_FAST={os.environ['GPULAB_FAST']}), GPU cells at "
        f"full sizes"
    )
    problems = preflight(ROOT, env)
    if problems:
        print(
            "make test-gpu: the run's environment is not right, so nothing ran:\n"
            + "\n".join(f"- {p}" for p in problems)
        )
        return 2
    sys.path.insert(0, str(target))  # the bundle is written here, with nbformat from .gpu-deps/ where it came from
    timings["install and checks"] = time.perf_counter() - started
    count = torch.cuda.device_count() if torch.cuda.is_available() else 0
    junit = target / "junit.xml"
    executed = Path(env["GPULAB_RECORD_CHAPTERS"])
    shutil.rmtree(executed, ignore_errors=True)
    files = [str(p.relative_to(ROOT)) for p in gpu_test_files()]
    cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", f"--junitxml={junit}", *files, "notebooks"]
    t0 = time.perf_counter()
    done = subprocess.run(cmd, cwd=ROOT, env=env)
    timings["GPU tests and chapters (recorded as they ran)"] = time.perf_counter() - t0
    tests = outcomes(junit) if junit.exists() else {}
    if count == 0:
        print(
            f"No CUDA GPU here (torch {torch.__version__}, torch.cuda.is_available() is False): the CPU-side checks "
            f"ran, the GPU tests skipped with their reason, and no evidence file or bundle was written."
        )
        return done.returncode
    from gpukit import bundle, evidence

    machine = _machine()
    t0 = time.perf_counter()
    figures = measure(machine)
    timings["figures"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    folder = None
    try:
        folder = record_bundle(executed, machine, mode)
    except bundle.BundleError as exc:
        print(f"make test-gpu: the GPU edition was not recorded: {exc}")
    timings["bundle"] = time.perf_counter() - t0
    timings["whole run"] = time.perf_counter() - started
    record = record_of(
        machine,
        mode,
        tests,
        figures,
        done.returncode,
        corpus=explain_corpus(junit),
        timings=timings,
        bundle=folder.name if folder else None,
    )
    try:
        path, summary = evidence.write(record, ROOT / "evidence")
    except evidence.EvidenceError as exc:  # the measurements stay, outside evidence/, for a second look
        kept = target / "evidence-not-written.json"
        kept.write_text(json.dumps(record, indent=2, sort_keys=True) + "\n")
        print(f"make test-gpu: {exc}\nThe record is kept in {kept.relative_to(ROOT)} (not committed).")
        return 1
    print(summary.read_text())
    print(f"evidence written: {path.relative_to(ROOT)} and {summary.relative_to(ROOT)}")
    if folder is None:
        return done.returncode or 1
    print(bundle.summary(folder))
    sent = [path, summary, ROOT / "evidence" / "ch05-monitor-gpu.json"]
    found = bundle.problems(folder) + [
        f"{f.name}: {p}" for f in sent if f.is_file() for p in evidence.privacy_problems(f.read_text())
    ]
    print(what_to_send(bundle.archive(folder, sent), found))
    return done.returncode or (1 if found else 0)


if __name__ == "__main__":
    sys.exit(main())
