"""``python -m gpulab kernelspec install|list|remove``: what JupyterLab's launcher will list, and the clear errors."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from gpulab.__main__ import main
from gpulab.server.kernelspec import install_kernelspec, kernel_json, parse_policy
from tests.process_group import run


def _gpulab(tmp_path, *args: str):
    """The command line in a process of its own (as an instructor types it)."""
    env = {"JUPYTER_PATH": str(tmp_path / "share" / "jupyter"), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    return run([sys.executable, "-m", "gpulab", *args], env=env, capture_output=True, text=True, timeout=120)


@pytest.fixture
def cli(tmp_path, monkeypatch, capsys):
    """The same command line, called in this process (cheaper: one Python start for many refusals)."""
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "share" / "jupyter"))
    monkeypatch.setenv("HOME", str(tmp_path))

    def call(*args: str) -> subprocess.CompletedProcess:
        try:
            rc = main(list(args))
        except SystemExit as exc:  # argparse's own refusals
            rc = exc.code
        out, err = capsys.readouterr()
        return subprocess.CompletedProcess(args, rc, out, err)

    return call


def test_install_writes_a_kernelspec_that_names_the_provisioner_then_list_and_remove(tmp_path):
    done = _gpulab(
        tmp_path,
        "kernelspec",
        "install",
        "--n-gpus",
        "1",
        "--prefix",
        str(tmp_path),
        "--policy",
        "max_memory_used_fraction=0.5,allow_processes=no",
        "--wait",
        "120",
    )
    assert done.returncode == 0, done.stderr
    assert '"Python 3 · 1 free GPU (gpulab)"' in done.stdout
    spec = json.loads((tmp_path / "share/jupyter/kernels/gpulab-1-gpu/kernel.json").read_text())
    assert spec["metadata"]["kernel_provisioner"] == {
        "provisioner_name": "gpulab-provisioner",
        "config": {"n_gpus": 1, "policy": {"max_memory_used_fraction": 0.5, "allow_processes": False}, "wait_s": 120.0},
    }
    assert spec["argv"][1:] == ["-m", "ipykernel_launcher", "-f", "{connection_file}"]
    assert _gpulab(tmp_path, "kernelspec", "install", "--n-gpus", "0", "--prefix", str(tmp_path)).returncode == 0
    listed = _gpulab(tmp_path, "kernelspec", "list").stdout
    assert "gpulab-1-gpu" in listed and "Python 3 · no GPU (gpulab)" in listed
    assert _gpulab(tmp_path, "kernelspec", "remove", "gpulab-1-gpu").returncode == 0
    assert "gpulab-1-gpu" not in _gpulab(tmp_path, "kernelspec", "list").stdout


@pytest.mark.parametrize(
    "args, message",
    [
        (
            ["--n-gpus", "-1"],
            "n_gpus=-1: n_gpus (how many GPUs each kernel holds, 0 for a kernel that sees no GPU) must "
            "be a whole number from 0 to 64 (e.g. install_kernelspec(n_gpus=1), or --n-gpus 1 on the "
            "command line).",
        ),
        (["--n-gpus", "two"], "argument --n-gpus: invalid int value: 'two'"),
        (["--name", "my kernel"], "may hold only letters, digits"),
        (["--wait", "-5"], "--wait -5.0: seconds a kernel start waits"),
        (["--policy", "memory=0.5"], "'memory=0.5' is not one of max_memory_used_fraction"),
        (["--policy", "max_utilization_percent=lots"], "max_utilization_percent='lots' is not a number"),
        (["--policy", "max_memory_used_fraction=2"], "max_memory_used_fraction is a share of the GPU's memory"),
        (["--user", "--sys-prefix"], "not allowed with argument --user"),
    ],
)
def test_wrong_install_arguments_are_refused_with_what_to_write(tmp_path, cli, args, message):
    done = cli("kernelspec", "install", *args)
    assert done.returncode == 2 and message in done.stderr, done.stderr
    assert not (tmp_path / "share").exists()


@pytest.mark.parametrize(
    "n_gpus, error, message",
    [
        (
            True,
            TypeError,
            r"^n_gpus=True is a bool; n_gpus \(how many GPUs each kernel holds, 0 for a kernel that sees no "
            r"GPU\) takes a whole number from 0 to 64 \(e\.g\. install_kernelspec\(n_gpus=1\)",
        ),
        (1.5, TypeError, r"^n_gpus=1\.5 is a float; n_gpus \(how many GPUs"),
        (
            65,
            ValueError,
            r"^n_gpus=65: n_gpus \(how many GPUs each kernel holds.*\) must be a whole number from 0 to 64",
        ),
    ],
)
def test_a_wrong_count_from_python_is_refused_naming_n_gpus(tmp_path, n_gpus, error, message):
    with pytest.raises(error, match=message):
        install_kernelspec(n_gpus, prefix=str(tmp_path))
    assert not (tmp_path / "share").exists()


def test_remove_refuses_a_kernelspec_that_is_not_gpulabs(tmp_path, cli):
    (tmp_path / "share/jupyter/kernels/other").mkdir(parents=True)
    (tmp_path / "share/jupyter/kernels/other/kernel.json").write_text(
        json.dumps(
            {
                "argv": ["python", "-m", "ipykernel_launcher", "-f", "{connection_file}"],
                "display_name": "Other",
                "language": "python",
            }
        )
    )
    done = cli("kernelspec", "remove", "other")
    assert (
        done.returncode == 2 and "it is not one of gpulab's (remove it with jupyter kernelspec remove)" in done.stderr
    )
    assert (tmp_path / "share/jupyter/kernels/other/kernel.json").exists()
    assert "no kernelspec has that name" in cli("kernelspec", "remove", "nothing").stderr


def test_policy_text_and_display_names():
    assert parse_policy("max_utilization_percent=50, allow_processes=yes") == {
        "max_utilization_percent": 50,
        "allow_processes": True,
    }
    assert kernel_json(2)["display_name"] == "Python 3 · 2 free GPUs (gpulab)"
    assert "policy" not in kernel_json(1)["metadata"]["kernel_provisioner"]["config"]
