"""What the GPU run lacks, added into a folder of the checkout (``.gpu-deps/``), never into the Python's environment.

pip itself decides what is missing: a dry run (``--report``) in the GPU machine's Python, with ``.gpu-deps/`` on the
path, lists what an install would bring. That list must hold no torch, CUDA library or triton (the machine's own
build stays); then exactly those wheels go into ``.gpu-deps/`` with ``--target --no-deps``. With ``wheelhouse/``
present pip reads only it (no index): a GPU node without internet installs what was carried to it.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

FORBIDDEN = ("torch", "torchvision", "torchaudio", "triton", "nvidia-", "cuda-", "lightning", "pytorch-lightning")
REQUIREMENTS = Path(__file__).with_name("requirements.txt")


def _key(name: str) -> str:
    return name.lower().replace("_", "-").replace(".", "-")


def forbidden(name: str) -> bool:
    """A package the GPU machine's own build provides and this kit must never install or upgrade."""
    key = _key(name)
    return any(key == f or (f.endswith("-") and key.startswith(f)) for f in FORBIDDEN)


def _pip(python: str, args: list[str], target: Path, wheelhouse: Path | None) -> subprocess.CompletedProcess[str]:
    source = ["--no-index", "--find-links", str(wheelhouse)] if wheelhouse else []
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(target), os.environ.get("PYTHONPATH")]))}
    return subprocess.run([python, "-m", "pip", *args, *source], capture_output=True, text=True, env=env, timeout=900)


def missing(python: str, target: Path, wheelhouse: Path | None, requirements: Path = REQUIREMENTS) -> dict[str, str]:
    """Name -> version of what ``python`` (with ``target`` on its path) lacks for the GPU run, by pip's dry run."""
    done = _pip(
        python, ["install", "--dry-run", "--quiet", "--report", "-", "-r", str(requirements)], target, wheelhouse
    )
    if done.returncode != 0:
        where = f"from {wheelhouse}/ (no index)" if wheelhouse else "from the package index"
        raise RuntimeError(
            f"pip could not find what the GPU run needs {where}:\n{done.stderr.strip()[-2000:]}\n"
            "On a machine without internet, run `make wheelhouse GPU_PYTHON_VERSION=<this Python's X.Y>` where an "
            "index is reachable and copy wheelhouse/ into this checkout."
        )
    report = json.loads(done.stdout)
    return {i["metadata"]["name"]: i["metadata"]["version"] for i in report["install"]}


def add_missing(python: str, target: Path, wheelhouse: Path | None) -> dict[str, str]:
    """Install what is missing into ``target`` (``--target --no-deps``); returns what was added."""
    need = missing(python, target, wheelhouse)
    refused = sorted(n for n in need if forbidden(n))
    if refused:
        raise RuntimeError(
            f"the GPU run would need to install {', '.join(refused)}, which this machine's own build must provide "
            "(reinstalling torch or a CUDA library breaks a working GPU setup). Install gpulab's requirements with "
            "the torch this machine has, or point GPU_PYTHON at the Python that holds it."
        )
    if need:
        target.mkdir(exist_ok=True)
        pins = [f"{n}=={v}" for n, v in sorted(need.items())]
        done = _pip(python, ["install", "--quiet", "--no-deps", "--target", str(target), *pins], target, wheelhouse)
        if done.returncode != 0:
            raise RuntimeError(f"installing into {target}/ failed:\n{done.stderr.strip()[-2000:]}")
    return need
