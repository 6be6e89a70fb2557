"""make test-gpu: the GPU tests and every chapter's GPU cells, run by the Python that already holds torch, as it is.

    GPU_PYTHON=/usr/bin/python3 make test-gpu        # runs: $GPU_PYTHON tools/gpu_run.py

1. What the run lacks (the notebook stack, nbval, ipywidgets) goes into .gpu-deps/ in this checkout, from wheelhouse/
   with no index when that folder exists (tools/gpukit/deps.py); torch and CUDA are never installed or upgraded.
2. pytest runs the test files that hold gpu/multigpu tests, with GPULAB_ONLY_GPU=1 (only their GPU tests, and the
   chapters that have GPU cells, whose CPU cells run everywhere), plus the evidence writer's own tests.
3. Where a GPU ran them, the figures the chapters quote are measured and evidence/<date>-<gpu>.json is written with
   its Markdown summary. Where there is none, it says so and exits 0 once the CPU-side checks passed.
"""
from __future__ import annotations

import datetime
import os
import platform
import re
import subprocess
import sys
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
        out[test_id] = "failed" if "failure" in kinds else "error" if "error" in kinds else \
            "skipped" if "skipped" in kinds else "passed"
    return out


def _machine() -> dict:
    import torch

    gpus = [{"name": torch.cuda.get_device_name(i), "memory_bytes": torch.cuda.get_device_properties(i).total_memory}
            for i in range(torch.cuda.device_count())]
    smi = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"], capture_output=True,
                         text=True, timeout=60).stdout.split()
    return {"gpus": gpus, "driver": smi[0] if smi else "unknown", "cuda": torch.version.cuda or "none",
            "torch": torch.__version__, "python": platform.python_version()}


def measure(machine: dict) -> dict:
    from gpukit import figures as f

    n = len(machine["gpus"])
    figs = f.guarded(lambda: f.transfers("cuda:0"))
    if "not_measured" in figs:
        figs = {k: figs for k in ("h2d_pageable_gbps", "h2d_pinned_gbps", "d2h_pageable_gbps", "d2h_pinned_gbps")}
    figs["non_blocking_overlap"] = f.guarded(lambda: f.non_blocking_overlap("cuda:0"))
    figs["matmul_tflops"] = f.guarded(lambda: f.matmul_tflops("cuda:0", gpu_name=machine["gpus"][0]["name"]))
    figs["cuda_context_bytes"] = f.guarded(lambda: f.cuda_context_bytes("cuda:0"))
    figs["dataparallel_samples_per_s"] = f.guarded(lambda: f.dataparallel_samples_per_s([f"cuda:{i}" for i in range(n)]))
    figs["ddp_samples_per_s"] = f.guarded(lambda: f.ddp_samples_per_s("cuda" if n >= 2 else "cpu"))
    figs["nccl_allreduce_busbw_gbps"] = f.guarded(lambda: f.nccl_allreduce_busbw_gbps(n))
    return figs


def explain_corpus(junit_xml: Path) -> dict:
    """explain() against CUDA, in snippets: the counts each corpus test of tests/placement/test_explain_on_gpus.py
    recorded in the JUnit XML (property ``explain_corpus``: snippets run, one line per snippet that disagreed), added
    up; a corpus test that failed before it could count is named in ``uncounted``."""
    import json

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


def main() -> int:
    try:
        import torch
    except ImportError:
        print(f"{sys.executable} has no torch: point GPU_PYTHON at the Python that holds this machine's torch build "
              "(make test-gpu GPU_PYTHON=/path/to/python).")
        return 2
    from gpukit.deps import add_missing

    wheelhouse = ROOT / "wheelhouse" if (ROOT / "wheelhouse").is_dir() else None
    target = ROOT / ".gpu-deps"
    try:
        added = add_missing(sys.executable, target, wheelhouse)
    except RuntimeError as exc:
        print(f"make test-gpu: {exc}")
        return 2
    print(f"GPU run: {sys.executable} (Python {platform.python_version()}, torch {torch.__version__}); "
          f"added to {target.name}/: {', '.join(sorted(added)) or 'nothing (already there)'}"
          f"{' from wheelhouse/ (no index)' if wheelhouse and added else ''}")
    count = torch.cuda.device_count() if torch.cuda.is_available() else 0
    env = {**os.environ, "GPULAB_ONLY_GPU": "1", "GPULAB_RECORD_EVIDENCE": "1",  # chapter 05 keeps its GPU run
           "PYTHONPATH": os.pathsep.join(filter(None, [str(target), str(ROOT), os.environ.get("PYTHONPATH")]))}
    junit = ROOT / ".gpu-deps" / "junit.xml"
    files = [str(p.relative_to(ROOT)) for p in gpu_test_files()]
    cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", f"--junitxml={junit}", *files, "notebooks",
           "tests/evidence"]
    done = subprocess.run(cmd, cwd=ROOT, env=env)
    tests = outcomes(junit) if junit.exists() else {}
    if count == 0:
        print(f"No CUDA GPU here (torch {torch.__version__}, torch.cuda.is_available() is False): the CPU-side checks "
              f"ran, the GPU tests skipped with their reason, and no evidence file was written.")
        return done.returncode
    from gpukit import evidence

    machine = _machine()
    record = {"schema": evidence.SCHEMA_VERSION, "date": datetime.date.today().isoformat(), "machine": machine,
              "tests": {t: o for t, o in tests.items() if not t.startswith("tests.evidence")},
              "explain_corpus": explain_corpus(junit), "figures": measure(machine), "pytest_exit": done.returncode}
    path, summary = evidence.write(record, ROOT / "evidence")
    print(summary.read_text())
    print(f"evidence written: {path.relative_to(ROOT)} and {summary.relative_to(ROOT)}")
    return done.returncode


if __name__ == "__main__":
    sys.exit(main())
