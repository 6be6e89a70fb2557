"""The JupyterHub side without a Hub (cheap, in make test): wrong settings of gpu_hooks and of
tools/jupyterhub_config.py are refused with a clear message when the Hub reads its config, and the message a student
reads when no GPU is free names who holds each GPU (real reservations, from this process and from another one). The real
Hub is tests/server/test_hub.py (slow)."""

from __future__ import annotations

from pathlib import Path

import pytest
from traitlets.config.loader import PyFileConfigLoader

from gpulab.machine.simulated import SimulatedGpuReader
from gpulab.placement.reservation import reserve_gpus
from gpulab.placement.selection import Policy
from gpulab.server.hub import NoGpuForServer, gpu_hooks, hub_policy, no_gpu_message
from tests.placement.other_kernel import held_elsewhere

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    "n_gpus, error, text",
    [
        (
            -1,
            ValueError,
            r"n_gpus=-1: n_gpus \(how many GPUs each single-user server holds\) must be a whole number ≥ 0 "
            r"\(e.g. gpu_hooks\(n_gpus=1\) for one GPU",
        ),
        (
            "2",
            TypeError,
            r"n_gpus='2' is a str; n_gpus \(how many GPUs each single-user server holds\) takes a whole "
            r"number",
        ),
        (1.5, TypeError, r"n_gpus=1.5 is a float"),
    ],
)
def test_a_wrong_number_of_gpus_is_refused_when_the_hub_reads_its_config(n_gpus, error, text):
    with pytest.raises(error, match=text):
        gpu_hooks(n_gpus=n_gpus)


@pytest.mark.parametrize(
    "policy, error, text",
    [
        (
            {"max_memory": 0.1},
            ValueError,
            r"'max_memory' is not a policy setting; the settings are "
            r"max_memory_used_fraction, max_utilization_percent, allow_processes",
        ),
        ("strict", TypeError, r"policy='strict' is a str; give a dict of policy settings"),
        ({"max_memory_used_fraction": 2}, ValueError, r"between 0 and 1; got 2"),
    ],
)
def test_an_unknown_policy_is_refused_with_the_settings_there_are(policy, error, text):
    with pytest.raises(error, match=text):
        gpu_hooks(n_gpus=1, policy=policy)


def test_a_policy_may_be_written_as_a_dict_of_its_settings():
    assert hub_policy({"max_memory_used_fraction": 0.05}) == Policy(max_memory_used_fraction=0.05)
    assert hub_policy(None) is None


def test_a_wrong_machine_is_refused_naming_the_described_ones():
    with pytest.raises(ValueError, match=r"'idle-9'.*presets? \(.*idle-8.*Did you mean 'idle-8'"):
        gpu_hooks(machine="idle-9")
    with pytest.raises(TypeError, match=r"machine=.*by name.*machine=\"idle-8\""):
        gpu_hooks(machine=SimulatedGpuReader("idle-8"))


def test_the_hooks_are_a_coroutine_and_a_function_for_the_spawner():
    import inspect

    pre, post = gpu_hooks(n_gpus=2, policy={"max_utilization_percent": 20}, machine="idle-8")
    assert inspect.iscoroutinefunction(pre) and callable(post) and not inspect.iscoroutinefunction(post)


def _load(monkeypatch, model: str | None):
    if model is None:
        monkeypatch.delenv("GPULAB_HUB_MODEL", raising=False)
    else:
        monkeypatch.setenv("GPULAB_HUB_MODEL", model)
    return PyFileConfigLoader("jupyterhub_config.py", path=str(ROOT / "tools")).load_config()


def test_the_documented_config_sets_the_hooks_only_in_the_server_model(monkeypatch):
    kernel = _load(monkeypatch, None)  # the default: every kernel reserves
    assert "pre_spawn_hook" not in kernel.Spawner and kernel.Spawner.poll_interval == 10
    assert kernel.JupyterHub.cleanup_servers is True
    assert kernel.Spawner.args == [f"--config={ROOT / 'tools' / 'workshop_server_config.py'}"]
    server = _load(monkeypatch, "server")
    assert server.Spawner.pre_spawn_hook.__name__ == "pre_spawn_hook"
    assert server.Spawner.post_stop_hook.__name__ == "post_stop_hook"


def test_the_documented_config_refuses_an_unknown_model(monkeypatch):
    with pytest.raises(ValueError, match=r"GPULAB_HUB_MODEL='servers' is not a model.*use 'kernel'.*or 'server'"):
        _load(monkeypatch, "servers")


def test_no_gpu_message_names_each_holder_and_what_to_do(tmp_path):
    """Three GPUs reserved for alice's server by this process (as the Hub holds them), two by another process's kernel
    reservation, three left: a server that needs four is told who holds what."""
    hub_reservation = reserve_gpus(
        3, "idle-8", reservations=tmp_path, details={"for_user": "alice", "server": "(default)"}
    )
    with held_elsewhere(2, "idle-8", tmp_path) as (pid, elsewhere), hub_reservation:
        text = no_gpu_message("carol", 4, "idle-8", None, tmp_path)
        lines = text.splitlines()
        assert lines[0] == "No GPU for carol's server: it needs 4 free GPU(s), and 3 of this machine's 8 are free now."
        for i in hub_reservation.physical_indices:
            assert f"  GPU {i}: reserved by alice's server" in lines
        for i in elsewhere:
            assert any(line.startswith(f"  GPU {i}: reserved by ") and f"(pid {pid})" in line for line in lines)
        assert sum(": free:" in line for line in lines) == 3
        assert lines[-1].startswith("What to do: wait until someone stops their server")
    error = NoGpuForServer(text)
    assert error.status_code == 503 and error.jupyterhub_message == text == str(error)


def test_watch_names_the_user_a_hub_reservation_is_for_and_the_process_that_holds_it(tmp_path):
    import os
    import pwd

    from gpulab.server.reservation_list import reservation_rows

    w8 = SimulatedGpuReader("idle-8")
    gpus = [w8.info(i) for i in range(w8.count())]
    me = pwd.getpwuid(os.geteuid()).pw_name
    with reserve_gpus(1, w8, reservations=tmp_path, details={"for_user": "alice", "server": "(default)"}):
        (row,) = reservation_rows(gpus, tmp_path)
    assert row.user == f"alice via {me}" and row.kernel == "(default)"


def test_no_gpu_message_keeps_other_students_server_names_and_notebooks_to_themselves(tmp_path):
    """The Hub reads every private detail; what it tells carol names alice's server and bob's kernel, not the server's
    name or the notebook's path (alice reads her own server's name)."""
    with (
        reserve_gpus(4, "idle-8", reservations=tmp_path, details={"for_user": "alice", "server": "thesis-runs"}),
        reserve_gpus(3, "idle-8", reservations=tmp_path, details={"kernel": "k1", "notebook": "bob/exam.ipynb"}),
    ):
        to_carol = no_gpu_message("carol", 2, "idle-8", None, tmp_path)
        to_alice = no_gpu_message("alice", 2, "idle-8", None, tmp_path)
    assert "reserved by alice's server" in to_carol and "a kernel of" in to_carol
    assert "thesis-runs" not in to_carol and "exam.ipynb" not in to_carol
    assert "reserved by alice's server 'thesis-runs'" in to_alice
