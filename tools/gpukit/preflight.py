"""Before the GPU run's tests: does a fresh Python in the run's environment see gpulab as the run needs it?

    python tools/gpukit/preflight.py <checkout>      # prints one problem a line and exits 1; exits 0 when all is right

Run by tools/gpu_run.py with the environment pytest gets (``.gpu-deps/`` then the checkout on PYTHONPATH). It checks
that gpulab's kernel provisioner is registered (entry point group ``jupyter_client.kernel_provisioners``, which the
H100 run of 2026-11-26 lacked: ``NoSuchKernel: No such kernel named gpulab-1-gpu``) and loads from the checkout, and
that gpulab, its ``evidence/`` folder and its chapters are the checkout's, not copies in ``.gpu-deps/``.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import sys
from pathlib import Path

GROUP = "jupyter_client.kernel_provisioners"
PROVISIONER = "gpulab-provisioner"


def _inside(path: str | Path | None, folder: Path) -> bool:
    return path is not None and Path(path).resolve().is_relative_to(folder.resolve())


def shadowing_problems(root: Path) -> list[str]:
    """gpulab imported from anywhere but the checkout (an install of it into .gpu-deps/, which comes first)."""
    spec = importlib.util.find_spec("gpulab")
    origin = spec.origin if spec else None
    if _inside(origin, root / "gpulab"):
        return []
    return [
        f"gpulab imports from {origin}, not from the checkout {root}: remove that copy (an install of gpulab "
        f"into .gpu-deps/ shadows the checkout) and run again"
    ]


def registration_problems() -> list[str]:
    """gpulab's kernel provisioner missing from the entry points this Python sees (the standard library reads them)."""
    names = sorted(ep.name for ep in importlib.metadata.entry_points(group=GROUP))
    if PROVISIONER in names:
        return []
    return [
        f"gpulab's kernel provisioner is not registered: entry points in {GROUP} are {names or 'none'} "
        f"(gpulab's metadata in .gpu-deps/ is missing: tools/gpukit/distinfo.py writes it)"
    ]


def loading_problems(root: Path) -> list[str]:
    """The provisioner, the evidence folder and the chapters, once gpulab is imported: each must be the checkout's."""
    out = []
    for ep in importlib.metadata.entry_points(group=GROUP):
        if ep.name != PROVISIONER:
            continue
        try:
            module = sys.modules[ep.load().__module__]
        except Exception as exc:  # reported, with its type: the run would meet the same error in chapter 02
            out.append(f"{PROVISIONER} ({ep.value}) does not load: {type(exc).__name__}: {exc}")
            continue
        if not _inside(module.__file__, root / "gpulab"):
            out.append(f"{PROVISIONER} loads from {module.__file__}, not from the checkout {root}")
    from gpulab.checkup.chapters import notebooks_dir
    from gpulab.monitoring.recorded import EVIDENCE_DIR

    if EVIDENCE_DIR.resolve() != (root / "evidence").resolve():
        out.append(f"gpulab's evidence folder is {EVIDENCE_DIR}, not the checkout's {root / 'evidence'}")
    chapters = notebooks_dir()
    if chapters is None or chapters.resolve() != (root / "notebooks").resolve():
        out.append(f"gpulab finds its chapters in {chapters}, not in the checkout's {root / 'notebooks'}")
    return out


def problems(root: Path) -> list[str]:
    """What is wrong, one sentence each (what happened and what to do); empty when all is right."""
    return shadowing_problems(root) or registration_problems() + loading_problems(root)


if __name__ == "__main__":
    found = problems(Path(sys.argv[1]))
    print("\n".join(found))
    sys.exit(1 if found else 0)
