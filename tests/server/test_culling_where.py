"""Culling only where GPUs are shared: ``make lab`` (a learner's own JupyterLab) never culls an idle kernel; the
workshop configuration (a shared server started as the README says, JupyterHub's servers) culls after 30 minutes.

Each configuration is read the way its server reads it (traitlets' own loader), in the environment that server gets:
the command ``make -n lab`` prints (with an instructor's ``GPULAB_CULL_IDLE_S`` exported in the shell, which a learner's
JupyterLab must not obey either), the README's command for the shared server, and ``tools/jupyterhub_config.py``'s
arguments and environment for its servers. ``test_culling.py`` watches the workshop configuration cull for real.
"""

from __future__ import annotations

import os
import re
import shlex
from pathlib import Path

import pytest
from traitlets.config.loader import PyFileConfigLoader

from tests.process_group import run

ROOT = Path(__file__).resolve().parents[2]
CULLING = ("cull_idle_timeout", "cull_interval", "cull_connected", "cull_busy")


def _culling(config_path: Path, env: dict[str, str], monkeypatch) -> dict:
    """What a server loading ``config_path`` in environment ``env`` sets of jupyter-server's culling."""
    for name in [k for k in os.environ if k.startswith("GPULAB_")]:
        monkeypatch.delenv(name)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    config = PyFileConfigLoader(config_path.name, path=str(config_path.parent)).load_config()
    return {k: v for k, v in config.MappingKernelManager.items() if k in CULLING}


def _command(line: str) -> tuple[dict[str, str], Path]:
    """The environment assignments in front of a ``jupyter lab`` command, and the config file it passes."""
    words = shlex.split(line)
    env = {}
    while words and re.fullmatch(r"[A-Z_][A-Z0-9_]*=.*", words[0]):
        name, value = words.pop(0).split("=", 1)
        env[name] = value
    (config,) = [w.split("=", 1)[1] for w in words if w.startswith("--config=")]
    return env, ROOT / config


def test_make_lab_never_culls_even_with_an_instructors_setting_in_the_shell(monkeypatch):
    shell = {**os.environ, "GPULAB_CULL_IDLE_S": "1800"}
    done = run(["make", "-n", "lab"], cwd=ROOT, env=shell, capture_output=True, text=True, timeout=60, check=True)
    (line,) = [line for line in done.stdout.splitlines() if "jupyter lab" in line]
    env, config = _command(line)
    assert env.get("GPULAB_FAST") == "0"  # the recipe's own settings are read
    assert _culling(config, {**env, "GPULAB_CULL_IDLE_S": "1800"}, monkeypatch) == {}, (
        f"make lab ({line}) culls an idle kernel: a learner who steps away loses their work"
    )


def _workshop_culls(culling: dict, idle_s: int = 1800) -> bool:
    return culling == {
        "cull_idle_timeout": idle_s,
        "cull_interval": min(60, idle_s),
        "cull_connected": True,
        "cull_busy": False,
    }


def test_the_readmes_shared_server_command_culls_after_30_minutes(monkeypatch):
    readme = (ROOT / "docs" / "instructors.md").read_text()  # the instructors' page, which the README links
    section = readme[readme.index("**One shared server, plain JupyterLab") : readme.index("**JupyterHub.**")]
    (line,) = re.findall(r"`([^`]*jupyter lab --config=[^`]*)`", section)
    env, config = _command(line)
    assert _workshop_culls(_culling(config, env, monkeypatch))
    assert _workshop_culls(_culling(config, {**env, "GPULAB_CULL_IDLE_S": "120"}, monkeypatch), 120)
    assert _culling(config, {**env, "GPULAB_CULL_IDLE_S": "0"}, monkeypatch) == {}


@pytest.mark.parametrize("model", ["kernel", "server"])
def test_jupyterhubs_single_user_servers_cull_and_take_the_hubs_idle_time(model, monkeypatch):
    for hub_env, idle_s in (({}, 1800), ({"GPULAB_CULL_IDLE_S": "600"}, 600)):
        for name in [k for k in os.environ if k.startswith("GPULAB_")]:
            monkeypatch.delenv(name)
        monkeypatch.setenv("GPULAB_HUB_MODEL", model)
        for name, value in hub_env.items():
            monkeypatch.setenv(name, value)
        hub = PyFileConfigLoader("jupyterhub_config.py", path=str(ROOT / "tools")).load_config()
        (config,) = [a.split("=", 1)[1] for a in hub.Spawner.args if a.startswith("--config=")]
        assert _workshop_culls(_culling(Path(config), dict(hub.Spawner.environment), monkeypatch), idle_s)


def test_a_wrong_idle_time_is_refused_saying_what_to_write(monkeypatch):
    with pytest.raises(ValueError, match=r"GPULAB_CULL_IDLE_S='half an hour' is not a number of seconds: .*=1800"):
        _culling(ROOT / "tools" / "workshop_server_config.py", {"GPULAB_CULL_IDLE_S": "half an hour"}, monkeypatch)


def test_the_workshop_configuration_without_the_courses_file_says_what_to_copy(tmp_path):
    (tmp_path / "workshop_server_config.py").write_text((ROOT / "tools" / "workshop_server_config.py").read_text())
    with pytest.raises(FileNotFoundError, match=r"jupyter_server_config.py is missing: .*Copy jupyter_server_config"):
        PyFileConfigLoader("workshop_server_config.py", path=str(tmp_path)).load_config()
