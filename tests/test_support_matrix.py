"""The support matrix the README and pyproject state (Python 3.10-3.13, torch 2.11 to the newest, ipywidgets 7.7 and 8,
JupyterLab an extra), and the files that test it: constraints-lowest.txt pins every lower bound, make test-compat
installs it, .ci/run runs it. Only Python 3.11 runs here, so 3.10 is checked statically with vermin."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.version import Version

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10: the dev extra installs tomli there
    tomllib = pytest.importorskip("tomli")

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def _vermin(*paths: str) -> subprocess.CompletedProcess[str]:
    vermin = Path(sys.executable).parent / "vermin"  # the dev extra's console script (no `python -m vermin`)
    return subprocess.run(
        [str(vermin), "-t=3.10-", "--no-tips", "--violations", *paths],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )


def test_the_package_and_the_gpu_kit_use_nothing_newer_than_python_3_10():
    """The GPU kit runs with the GPU machine's own Python (3.10 on many HPC clusters), so it is checked too."""
    done = _vermin("gpulab", "tools/gpu_run.py", "tools/gpukit", "tools/install_changes.py")
    assert done.returncode == 0, f"this uses Python newer than 3.10 (requires-python >= 3.10):\n{done.stdout}"


def test_the_static_check_finds_a_python_3_11_module(tmp_path):
    """The check above can fail: the same command flags a module that imports tomllib (new in 3.11)."""
    (tmp_path / "new.py").write_text("import tomllib\n")
    done = _vermin(str(tmp_path))
    assert done.returncode != 0 and "tomllib" in done.stdout


def _lower_bounds() -> dict[str, str]:
    """Every direct requirement's lower bound: dependencies and every extra but `lab`, `hub`, `kubernetes` and `site`
    (not in the compat leg)."""
    reqs = list(PYPROJECT["dependencies"])
    extras = PYPROJECT["optional-dependencies"]
    reqs += [r for name, extra in extras.items() if name not in ("lab", "hub", "kubernetes", "site") for r in extra]
    out = {}
    for text in reqs:
        req = Requirement(text)
        if req.marker is not None:
            continue  # tomli on Python < 3.11: not installed on 3.11
        [low] = [s.version for s in req.specifier if s.operator == ">="]
        out[req.name.lower()] = low
    return out


def _pins(name: str) -> dict[str, str]:
    out = {}
    for line in (ROOT / name).read_text().splitlines():
        line = line.split("#")[0].strip()
        if "==" in line:
            pkg, version = line.split("==")
            out[pkg.strip().lower()] = version.strip()
    return out


def test_constraints_lowest_pins_every_direct_dependency_at_its_lower_bound():
    bounds, pins = _lower_bounds(), _pins("constraints-lowest.txt")
    assert set(pins) == set(bounds), (
        f"pinned but not a dependency: {set(pins) - set(bounds)}; a dependency left unpinned: {set(bounds) - set(pins)}"
    )
    differ = {n: (bounds[n], pins[n]) for n in bounds if Version(bounds[n]) != Version(pins[n])}
    assert not differ, f"pyproject's bound and the version make test-compat installs differ: {differ}"


def test_the_matrix_is_stated_in_pyproject():
    assert PYPROJECT["requires-python"] == ">=3.10"
    minors = {
        c.rsplit(".", 1)[1] for c in PYPROJECT["classifiers"] if c.startswith("Programming Language :: Python :: 3.")
    }
    assert minors == {"10", "11", "12", "13"}
    deps = {Requirement(r).name: Requirement(r) for r in PYPROJECT["dependencies"]}
    assert "jupyterlab" not in deps, "JupyterLab is an extra: Colab, Kaggle and VS Code bring their own front end"
    assert [Requirement(r).name for r in PYPROJECT["optional-dependencies"]["lab"]] == ["jupyterlab"]
    assert deps["ipywidgets"].specifier.contains("7.7.1") and deps["ipywidgets"].specifier.contains("8.1.5")
    assert deps["torch"].specifier.contains("2.11.0") and not deps["torch"].specifier.contains("2.10.0")
    assert "lightning" not in deps


def test_the_readme_states_the_matrix_and_how_each_part_is_checked():
    page = (ROOT / "docs" / "platforms.md").read_text()  # the README links it from its own "Where it runs"
    section = page.split("## Where it runs", 1)[1].split("\n## Kaggle", 1)[0]  # the matrix, and Colab under it
    for fact in ("3.10", "3.13", "vermin", "2.11", "7.7", "make test-compat", "[lab]", "Runtime → Change runtime type"):
        assert fact in section, f"docs/platforms.md's 'Where it runs' does not say {fact!r}"
    assert "docs/platforms.md" in (ROOT / "README.md").read_text()


def test_make_installs_the_lab_extra_and_ci_runs_the_compat_leg_after_make_test():
    makefile = (ROOT / "Makefile").read_text()
    assert re.search(r"-e '\.\[[a-z,]*\blab\b[a-z,]*\]'", makefile), "make install must install the lab extra"
    assert re.search(r"^test-compat:", makefile, re.M) and "constraints-lowest.txt" in makefile
    ci = [s.strip() for s in (ROOT / ".ci" / "run").read_text().splitlines() if s.strip().startswith("make ")]
    assert ci.index("make test-compat") > ci.index("make test")
