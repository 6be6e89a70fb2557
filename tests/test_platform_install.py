"""Installing gpulab into a Python that already holds torch, torchvision, ipywidgets and matplotlib (Colab, Kaggle, an
HPC module) changes none of them: pip's dry-run report, in the environment that runs the tests. make test-compat
runs this in Colab's versions (torch 2.11.0, ipywidgets 7.7.1, classic Notebook); make test in today's.
The same check runs in make test-compat's build on the platform alone, before gpulab's dependencies are there."""

from __future__ import annotations

import importlib.util
import os
from importlib import metadata
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PLATFORM = ("torch", "torchvision", "ipywidgets", "matplotlib", "numpy")
COLAB = {"torch": "2.11.0", "torchvision": "0.26.0", "ipywidgets": "7.7.1"}  # what make test-compat holds


def _install_changes():
    spec = importlib.util.spec_from_file_location("install_changes", ROOT / "tools" / "install_changes.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


install_changes = _install_changes()


def test_the_environment_under_test_holds_the_platform():
    have = {n: metadata.version(n) for n in PLATFORM}  # raises PackageNotFoundError where one is missing
    assert have["ipywidgets"].split(".")[0] in ("7", "8"), f"ipywidgets {have['ipywidgets']} is not a supported one"
    if os.environ.get("GPULAB_COMPAT") == "1":
        assert {n: have[n].split("+")[0] for n in COLAB} == COLAB, (
            f"make test-compat is not on Colab's versions: {have}"
        )
        with pytest.raises(metadata.PackageNotFoundError):
            metadata.version("jupyterlab")  # Colab brings its own front end: the compat leg has none


@pytest.mark.parametrize("pip_args", [["-e", f"{ROOT}[lightning]"], [str(ROOT)]], ids=["editable", "from-a-path"])
def test_installing_gpulab_replaces_no_installed_package(pip_args):
    would = install_changes.would_install(pip_args)
    assert "gpulab" in would, f"pip's report names no gpulab at all: {would}"
    assert install_changes.changes(pip_args) == {}


def test_the_preview_names_a_package_that_an_install_would_replace():
    """The preview can fail: asking for a tqdm other than the installed one is reported as a replacement."""
    other = "4.66.0" if metadata.version("tqdm") != "4.66.0" else "4.60.0"
    replaced = install_changes.changes([f"tqdm=={other}", "--no-deps"])
    assert set(replaced) == {"tqdm"} and replaced["tqdm"][1] == other


def test_moved_since_compares_a_freeze_file_with_what_is_installed():
    torch = metadata.version("torch")
    assert install_changes.moved_since(f"torch=={torch}\n", ["torch"]) == {}
    assert install_changes.moved_since("torch==1.0.0\n", ["torch"]) == {"torch": ("1.0.0", torch)}
    with pytest.raises(ValueError, match="not in the frozen list"):
        install_changes.moved_since("numpy==2.0.0\n", ["torch"])
