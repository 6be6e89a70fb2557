"""A newcomer's first commands work as the README types them, and a wrong Python gets a sentence, not a traceback.

In the course's folder any Python finds ``./gpulab``; one without the course's packages (a fresh terminal's python3)
must say which Python to use (``make env``, ``.venv/bin/python``). The Python here without them is the venv's own
with ``-S``: no site-packages, as a bare system Python has.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from gpulab.core.dependencies import missing_dependency, missing_dependency_message
from tests.process_group import run

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def test_a_python_without_the_packages_is_told_which_python_to_use():
    done = run([sys.executable, "-S", "-m", "gpulab", "env"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    assert "one of the packages gpulab needs" in done.stderr
    assert "`make env`" in done.stderr and "`.venv/bin/python -m gpulab env`" in done.stderr


def test_importing_gpulab_there_raises_the_same_sentence():
    code = "import gpulab\ntry:\n    gpulab.devices\nexcept ModuleNotFoundError as e:\n    print(e)"
    done = run([sys.executable, "-S", "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert re.search(
        r"this Python \(.*\) has no '[\w-]+' \(import \w+\), one of the packages gpulab needs", done.stdout
    )
    assert "make lab" in done.stdout and "-m pip install -e" in done.stdout


def test_only_a_missing_dependency_is_explained():
    assert missing_dependency(ModuleNotFoundError("No module named 'psutil'", name="psutil")) == "psutil"
    assert missing_dependency(ModuleNotFoundError("x", name="torch.cuda")) == "torch"
    # a module of gpulab itself, or a package it does not need, is a bug to see whole
    assert missing_dependency(ModuleNotFoundError("x", name="gpulab.nowhere")) is None
    assert missing_dependency(ImportError("cannot import name")) is None
    text = missing_dependency_message("sklearn", "/usr/bin/python3", Path("/nowhere"), "devices")
    assert "'scikit-learn'" in text and "once `make install` has made .venv" in text
    assert "make env" not in text  # that target runs env, not devices
    assert "`.venv/bin/python -m gpulab devices`" in text


@pytest.mark.skipif(shutil.which("make") is None, reason="no make on this machine")
@pytest.mark.skipif(not (ROOT / ".venv" / "bin" / "python").exists(), reason="no .venv: make install makes it")
def test_make_env_prints_the_report_through_the_venv():
    # -o: take the venv as installed (this test must not reinstall it); the recipe runs as a learner's make env does
    done = run(
        ["make", "-o", ".venv/.installed", "env"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=180,
        env={"PATH": "/usr/bin:/bin", "HOME": str(Path.home()), "GPULAB_SIMULATE_GPUS": "workshop-8"},
    )
    assert done.returncode == 0, done.stderr
    assert ".venv/bin/python -m gpulab env" in done.stdout
    assert "✔" in done.stdout or "✘" in done.stdout  # the checklist


def test_the_readme_runs_gpulab_through_the_venv_and_names_make_env():
    bare = [m.group(0) for m in re.finditer(r"(?<![/\w])python3? -m gpulab", README)]
    assert bare == [], "a fresh terminal's python lacks the packages: write .venv/bin/python -m gpulab"
    assert "make env" in README


def test_a_readme_command_is_typed_without_the_shells_prompt():
    blocks = re.findall(r"```bash\n(.*?)```", README, re.S)
    assert blocks
    assert not [line for b in blocks for line in b.splitlines() if line.lstrip().startswith("$ ")]


def test_the_learner_copy_is_outside_gits_view():
    done = subprocess.run(
        ["git", "check-ignore", "-q", "mywork/00_setup.ipynb"], cwd=ROOT, capture_output=True, timeout=30
    )
    if done.returncode == 128:
        pytest.skip("not a git checkout")
    assert done.returncode == 0, "mywork/ must be in .gitignore"
