"""The kit's install step registers gpulab's entry points without shadowing the checkout.

On the H100 run of 2026-11-26 (evidence/, README: chapter 02, cells 35-37) a fresh clone had no gpulab metadata, so
``jupyter_client`` found no ``gpulab-provisioner``: ``NoSuchKernel: No such kernel named gpulab-1-gpu``. Here the
checkout is ``pip install -e``'d, whose egg-info registers them anyway; these tests use a copy of the checkout that has
never been installed (its pyproject.toml, and its gpulab package by a link) and a Python started with ``-S`` (no
site-packages, so no installed gpulab either), which is what the GPU machine's Python sees of gpulab.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))

import gpu_run  # noqa: E402

from gpukit import distinfo  # noqa: E402
from gpukit.preflight import GROUP, PROVISIONER  # noqa: E402

try:
    import tomllib
except ImportError:  # Python 3.10
    import tomli as tomllib

SEEN = (
    "import importlib.metadata as md, importlib.util as u, json, sys; sys.path.insert(0, sys.argv[1]); "
    "import preflight; print(json.dumps({'eps': sorted(e.name for e in md.entry_points(group=preflight.GROUP)), "
    "'gpulab': u.find_spec('gpulab').origin, 'problems': preflight.registration_problems()}))"
)


@pytest.fixture
def fresh_clone(tmp_path):
    """A checkout never installed into: no egg-info, gpulab's code the real one (linked). The PYTHONPATH this test
    runs with stays for pip's look at what is missing (under the kit: .gpu-deps/, so that no index is needed)."""
    clone = tmp_path / "clone"
    clone.mkdir()
    (clone / "pyproject.toml").write_bytes((ROOT / "pyproject.toml").read_bytes())
    (clone / "gpulab").symlink_to(ROOT / "gpulab", target_is_directory=True)
    return clone


def _seen_by_a_bare_python(env: dict, cwd: Path) -> dict:
    """What a Python without site-packages, started outside the checkout (``-c`` puts the working folder first on
    its path), sees of gpulab with ``env``'s PYTHONPATH."""
    done = subprocess.run(
        [sys.executable, "-S", "-c", SEEN, str(ROOT / "tools" / "gpukit")],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return json.loads(done.stdout)


def test_after_the_install_step_a_fresh_clone_s_provisioner_is_registered_and_gpulab_is_the_checkout_s(fresh_clone):
    target = fresh_clone / ".gpu-deps"
    before = _seen_by_a_bare_python({"PYTHONPATH": str(fresh_clone)}, fresh_clone.parent)
    assert PROVISIONER not in before["eps"] and "is not registered" in before["problems"][0]  # as on the H100

    added, env = gpu_run.kit_env(fresh_clone, target, None)
    assert env["PYTHONPATH"].split(os.pathsep)[:2] == [str(target), str(fresh_clone)]  # then what this test had
    seen = _seen_by_a_bare_python({"PYTHONPATH": os.pathsep.join([str(target), str(fresh_clone)])}, fresh_clone.parent)
    assert PROVISIONER in seen["eps"] and seen["problems"] == []
    assert Path(seen["gpulab"]) == fresh_clone / "gpulab" / "__init__.py"  # the checkout, not .gpu-deps/
    assert sorted(p.name for p in target.iterdir() if "gpulab" in p.name) == ["gpulab-0.1.0.dist-info"]


def test_the_registered_entry_points_are_pyproject_s(fresh_clone):
    folder = distinfo.register(fresh_clone, fresh_clone / ".gpu-deps")
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    import importlib.metadata

    (dist,) = importlib.metadata.distributions(path=[str(folder.parent)])
    assert (dist.metadata["Name"], dist.version) == (project["name"], project["version"])
    assert {ep.name: ep.value for ep in dist.entry_points.select(group=GROUP)} == project["entry-points"][GROUP]
    assert {ep.name: ep.value for ep in dist.entry_points.select(group="console_scripts")} == project["scripts"]
    assert sorted(p.name for p in folder.iterdir()) == ["INSTALLER", "METADATA", "RECORD", "entry_points.txt"]


def test_a_rerun_replaces_the_registration_but_never_a_real_install_of_gpulab(fresh_clone):
    target = fresh_clone / ".gpu-deps"
    old = target / "gpulab-0.0.9.dist-info"
    old.mkdir(parents=True)
    (old / "INSTALLER").write_text(distinfo.INSTALLER + "\n")
    folder = distinfo.register(fresh_clone, target)
    assert not old.exists() and distinfo.register(fresh_clone, target) == folder
    (folder / "INSTALLER").write_text("pip\n")  # what `pip install --target .gpu-deps .` would leave
    with pytest.raises(distinfo.MetadataError, match=r"was not written by the GPU kit .* would shadow the checkout"):
        distinfo.register(fresh_clone, target)


def test_a_pyproject_without_a_static_version_is_refused_with_what_to_do(fresh_clone):
    (fresh_clone / "pyproject.toml").write_text('[project]\nname = "gpulab"\ndynamic = ["version"]\n')
    with pytest.raises(distinfo.MetadataError, match=r"no static project\.version .* give version = "):
        distinfo.register(fresh_clone, fresh_clone / ".gpu-deps")


def test_the_preflight_refuses_a_gpulab_that_shadows_the_checkout(tmp_path, monkeypatch):
    shadow = tmp_path / ".gpu-deps"
    (shadow / "gpulab").mkdir(parents=True)
    (shadow / "gpulab" / "__init__.py").write_text("")
    monkeypatch.setenv("PYTHONPATH", f"{shadow}:{ROOT}")
    found = gpu_run.preflight(ROOT, dict(os.environ))
    assert len(found) == 1 and "gpulab imports from" in found[0] and "shadows the checkout" in found[0]


def test_the_preflight_passes_in_the_kit_s_environment_here(tmp_path):
    """The full check, loading the provisioner through jupyter_client and reading gpulab's folders."""
    _, env = gpu_run.kit_env(ROOT, tmp_path / ".gpu-deps", None)
    assert gpu_run.preflight(ROOT, env) == []


@pytest.mark.parametrize("raw, mode", [(None, "fast"), ("1", "fast"), ("0", "full"), ("no", "full")])
def test_the_chapters_mode_is_fast_unless_gpulab_fast_says_full(monkeypatch, raw, mode):
    if raw is None:
        monkeypatch.delenv("GPULAB_FAST", raising=False)
    else:
        monkeypatch.setenv("GPULAB_FAST", raw)
    assert gpu_run.chapter_mode() == mode
    assert os.environ["GPULAB_FAST"] == (raw or "1")  # what the kernels will read


def test_a_mode_the_kit_does_not_understand_is_refused(monkeypatch):
    monkeypatch.setenv("GPULAB_FAST", "quick")
    with pytest.raises(ValueError, match="GPULAB_FAST='quick' is not understood: use 1 or 0"):
        gpu_run.chapter_mode()
