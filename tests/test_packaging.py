"""The project's own install files agree with each other (no kernel, no network)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10: the dev extra installs tomli there
    tomllib = pytest.importorskip("tomli")

ROOT = Path(__file__).resolve().parents[1]


def _name(req: str) -> str:
    return re.split(r"[<>=!~\[ ;]", req.strip(), maxsplit=1)[0].lower()


def _pyproject() -> dict[str, str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    reqs = list(project["dependencies"]) + [r for extra in project["optional-dependencies"].values() for r in extra]
    # A requirement limited by an environment marker (tomli on Python < 3.11) has no conda counterpart.
    return {_name(r): r.replace(" ", "") for r in reqs if ";" not in r}


def _conda() -> dict[str, str]:
    deps = yaml.safe_load((ROOT / "environment.yml").read_text())["dependencies"]
    out: dict[str, str] = {}
    for d in deps:
        items = d["pip"] if isinstance(d, dict) else [d]
        for r in items:
            if not r.startswith("-e") and _name(r) not in ("python", "pip"):
                out[_name(r)] = r.replace(" ", "")
    return out


def test_environment_yml_and_pyproject_name_the_same_dependencies_and_bounds():
    assert _conda() == _pyproject()


def test_torch_is_not_required_newer_than_the_local_wheels():
    """make installs the pinned local wheels; the package itself accepts them (and newer ones, e.g. Colab's)."""
    from packaging.requirements import Requirement

    constraints = (ROOT / "constraints.txt").read_text()
    assert "torch==2.14.1" in constraints and "torchvision==0.29.1" in constraints
    assert Requirement(_pyproject()["torch"]).specifier.contains("2.14.1")
    assert Requirement(_pyproject()["torchvision"]).specifier.contains("0.29.1")
    assert "-c constraints.txt" in (ROOT / "Makefile").read_text()


def test_the_deprecated_pynvml_distribution_is_not_used():
    assert "pynvml" not in _pyproject() and "nvidia-ml-py" in _pyproject()


def test_ci_runs_make_test_and_readme_gives_the_two_commands():
    assert "make test" in (ROOT / ".ci" / "run").read_text()
    readme = (ROOT / "README.md").read_text()
    assert "make lab" in readme and "make test" in readme


def test_make_lab_keeps_token_auth_and_binds_to_localhost():
    lab = [line for line in (ROOT / "Makefile").read_text().splitlines() if "jupyter lab" in line][0]
    assert "--ip=127.0.0.1" in lab
    assert "token=''" not in lab and "ServerApp.token" not in lab and "--NotebookApp.token" not in lab


def test_the_readme_names_only_chapters_that_exist():
    """Chapters land one by one: the README points at notebooks/ (and `python -m gpulab env`) instead of a list that
    goes stale, and any chapter it does name by file must be there."""
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    named = {n for p in pages for n in re.findall(r"\b(\d\d_[a-z0-9_]+)", p.read_text())}
    present = {p.stem for p in (ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")}
    assert named <= present, f"the README names chapters that do not exist: {sorted(named - present)}"


def test_the_lab_config_keeps_subshell_requests_from_setting_the_kernel_state():
    """JupyterLab shows "Idle" after any status answering a request type the server does not list as untracked;
    ipykernel 7 answers a widget's create_subshell_request mid-cell. make lab loads this file (real traitlets
    loader)."""
    from jupyter_server.services.kernels.kernelmanager import MappingKernelManager
    from traitlets.config.loader import PyFileConfigLoader

    assert "--config=tools/jupyter_server_config.py" in (ROOT / "Makefile").read_text()
    config = PyFileConfigLoader("jupyter_server_config.py", path=str(ROOT / "tools")).load_config()
    untracked = config.MappingKernelManager.untracked_message_types
    default = MappingKernelManager.class_traits()["untracked_message_types"].default()
    assert set(default) <= set(untracked) and len(untracked) == len(set(untracked))
    assert {"create_subshell_request", "create_subshell_reply", "delete_subshell_request"} <= set(untracked)


def test_the_lab_config_turns_off_the_news_popup_with_jupyterlabs_own_overrides():
    """The course's settings ride on the config make lab passes: JupyterLab 4 reads overrides.json from its application
    settings directory, which the config points at tools/lab_settings (the browser test checks no popup appears)."""
    from traitlets.config.loader import PyFileConfigLoader

    config = PyFileConfigLoader("jupyter_server_config.py", path=str(ROOT / "tools")).load_config()
    folder = Path(config.LabApp.app_settings_dir)
    assert folder == ROOT / "tools" / "lab_settings"
    overrides = json.loads((folder / "overrides.json").read_text())
    assert overrides["@jupyterlab/apputils-extension:notification"]["fetchNews"] == "false"
    assert (
        config.LabApp.custom_css
        and Path(config.ServerApp.tornado_settings["static_custom_path"][0]) == ROOT / "tools" / "lab_custom"
    )
    assert "word-break: normal" in (ROOT / "tools" / "lab_custom" / "custom.css").read_text()
