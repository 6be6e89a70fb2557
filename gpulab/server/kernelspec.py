"""The kernelspecs that start GPU kernels: ``python -m gpulab kernelspec install|remove|list`` (a probe: files).

A kernelspec is the ``kernel.json`` JupyterLab's launcher lists. gpulab's names the kernel provisioner
(``metadata.kernel_provisioner.provisioner_name = "gpulab-provisioner"``) with its settings (``n_gpus``, how many
GPUs; the policy; how long to wait), so choosing "Python 3 · 1 free GPU (gpulab)" starts a kernel that holds a free
GPU. Written through jupyter_client's ``KernelSpecManager`` (``--user``, ``--prefix``, ``--sys-prefix`` as
``jupyter kernelspec install`` has them). Taught in ``notebooks/02_choosing_gpus.ipynb``.
"""

from __future__ import annotations

import json
import re
import sys
import tempfile
from dataclasses import fields
from pathlib import Path
from typing import Any

from ..core.arguments import whole_number
from ..placement.selection import Policy

__all__ = [
    "kernel_json",
    "install_kernelspec",
    "remove_kernelspec",
    "gpulab_kernelspecs",
    "parse_policy",
    "display_name",
    "default_name",
]

PROVISIONER = "gpulab-provisioner"  # the entry point's name (pyproject.toml), as server.provisioner names it
EXEC_LINES = "--IPKernelApp.exec_lines=import gpulab"  # a shared GPU's kernel: the cap is read where gpulab is imported
_NAME = re.compile(r"^[a-zA-Z0-9._-]+$")


def display_name(n_gpus: int, shares: int = 1) -> str:
    """What JupyterLab's launcher shows: ``"Python 3 · 1 free GPU (gpulab)"``, ``"Python 3 · 1 of 3 shares of a GPU
    (gpulab)"``."""
    if shares > 1:
        return f"Python 3 · 1 of {shares} shares of a GPU (gpulab)"
    if n_gpus == 0:
        return "Python 3 · no GPU (gpulab)"
    return f"Python 3 · {n_gpus} free GPU{'s' if n_gpus > 1 else ''} (gpulab)"


def default_name(n_gpus: int, shares: int = 1) -> str:
    """The kernelspec's name for kernels that hold that many GPUs: ``gpulab-1-gpu``, or ``gpulab-no-gpu``; for a
    share of a GPU ``gpulab-gpu-share-3``."""
    if shares > 1:
        return f"gpulab-gpu-share-{shares}"
    return "gpulab-no-gpu" if n_gpus == 0 else f"gpulab-{n_gpus}-gpu"


def parse_policy(text: str | None) -> dict[str, Any]:
    """``"max_memory_used_fraction=0.5,max_utilization_percent=50"`` as ``Policy``'s fields, validated by ``Policy``."""
    if not text:
        return {}
    known = {f.name: f.type for f in fields(Policy)}
    out: dict[str, Any] = {}
    for part in text.split(","):
        key, eq, value = part.strip().partition("=")
        if not eq or key not in known:
            raise ValueError(
                f"--policy {text!r}: {part.strip()!r} is not one of {', '.join(known)} written "
                "name=value; for example --policy max_memory_used_fraction=0.5,max_utilization_percent=50"
            )
        try:
            out[key] = (
                {"true": True, "yes": True, "false": False, "no": False}[value.lower()]
                if key == "allow_processes"
                else float(value)
                if key == "max_memory_used_fraction"
                else int(value)
            )
        except (KeyError, ValueError):
            raise ValueError(
                f"--policy: {key}={value!r} is not a {'yes/no' if key == 'allow_processes' else 'number'}; "
                f"for example {key}={'yes' if key == 'allow_processes' else '0.5' if 'fraction' in key else '50'}"
            ) from None
    Policy(**out)  # its own validation (ranges) with its own messages
    return out


def kernel_json(
    n_gpus: int,
    policy: dict[str, Any] | None = None,
    wait_s: float = 0.0,
    python: str | None = None,
    shares: int = 1,
) -> dict[str, Any]:
    """The kernelspec: ipykernel on ``python`` (default: this one), started by gpulab's provisioner. With ``shares``
    above 1, each kernel holds one of that many shares of a GPU (``config.shares``), and imports gpulab as it starts
    (``--IPKernelApp.exec_lines=import gpulab``) so that its share's memory cap is enforced at CUDA's start even in a
    notebook that never imports gpulab."""
    config: dict[str, Any] = {"n_gpus": n_gpus}
    if shares > 1:
        config["shares"] = shares
    if policy:
        config["policy"] = dict(policy)
    if wait_s:
        config["wait_s"] = float(wait_s)
    argv = [python or sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"]
    if shares > 1:
        argv.append(EXEC_LINES)
    return {
        "argv": argv,
        "display_name": display_name(n_gpus, shares),
        "language": "python",
        "metadata": {"debugger": True, "kernel_provisioner": {"provisioner_name": PROVISIONER, "config": config}},
    }


def _validate(name: str, wait_s: float) -> None:
    if not _NAME.match(name):
        raise ValueError(
            f"--name {name!r}: a kernelspec's name may hold only letters, digits, '.', '_' and '-' "
            "(Jupyter's rule); for example --name gpulab-1-gpu."
        )
    if not wait_s >= 0 or wait_s > 24 * 3600:  # NaN too
        raise ValueError(
            f"--wait {wait_s!r}: seconds a kernel start waits for a GPU, from 0 (fail at once) to a "
            "day; for example --wait 300."
        )


def install_kernelspec(
    n_gpus: int = 1,
    *,
    policy: str | None = None,
    name: str | None = None,
    wait_s: float = 0.0,
    user: bool = False,
    prefix: str | None = None,
    shares: int = 1,
) -> tuple[str, dict[str, Any]]:
    """Install the kernelspec; returns where it went and its ``kernel.json``. Without ``user`` or ``prefix`` it goes
    to the system-wide folder (as ``jupyter kernelspec install`` does). ``shares`` above 1: each kernel holds one of
    that many shares of a GPU, with its memory cap (``n_gpus`` must then be 1)."""
    from jupyter_client.kernelspec import KernelSpecManager

    n_gpus = whole_number(
        n_gpus,
        "n_gpus",
        minimum=0,
        maximum=64,
        what="how many GPUs each kernel holds, 0 for a kernel that sees no GPU",
        example="install_kernelspec(n_gpus=1), or --n-gpus 1 on the command line",
    )
    shares = whole_number(
        shares,
        "shares",
        minimum=1,
        maximum=64,
        what="how many kernels share each GPU, 1 for a whole GPU per kernel",
        example="install_kernelspec(shares=3), or --shares 3 on the command line",
    )
    if shares > 1 and n_gpus != 1:
        raise ValueError(
            f"--n-gpus {n_gpus} with --shares {shares}: a kernel holds one share of one GPU, so shares go with "
            "--n-gpus 1. Install --n-gpus 1 --shares 3 for students who share cards, and a kernelspec without "
            "--shares for those who need whole GPUs."
        )
    name = name or default_name(n_gpus, shares)
    _validate(name, wait_s)
    spec = kernel_json(n_gpus, parse_policy(policy), wait_s, shares=shares)
    with tempfile.TemporaryDirectory(prefix="gpulab-kernelspec-") as tmp:
        (Path(tmp) / "kernel.json").write_text(json.dumps(spec, indent=1) + "\n")
        try:
            where = KernelSpecManager().install_kernel_spec(tmp, name, user=user, prefix=prefix)
        except PermissionError as exc:
            raise PermissionError(
                f"cannot write the kernelspec ({exc.strerror}: {exc.filename}). Install it for "
                "yourself with --user, into this environment with --sys-prefix, or run as the "
                "administrator for every user."
            ) from None
    return where, spec


def gpulab_kernelspecs() -> dict[str, dict[str, Any]]:
    """The installed kernelspecs that gpulab's provisioner starts: name -> {resource_dir, spec}."""
    from jupyter_client.kernelspec import KernelSpecManager

    return {
        name: found
        for name, found in KernelSpecManager().get_all_specs().items()
        if found["spec"].get("metadata", {}).get("kernel_provisioner", {}).get("provisioner_name") == PROVISIONER
    }


def remove_kernelspec(name: str) -> str:
    """Remove one of gpulab's kernelspecs (refuses any other, with what to do); returns the folder removed."""
    from jupyter_client.kernelspec import KernelSpecManager

    ours = gpulab_kernelspecs()
    if name not in ours:
        others = KernelSpecManager().find_kernel_specs()
        why = (
            "it is not one of gpulab's (remove it with jupyter kernelspec remove)"
            if name in others
            else "no kernelspec has that name"
        )
        listed = ", ".join(sorted(ours)) or "none is installed"
        raise ValueError(f"cannot remove kernelspec {name!r}: {why}. gpulab's kernelspecs: {listed}.")
    return KernelSpecManager().remove_kernel_spec(name)
