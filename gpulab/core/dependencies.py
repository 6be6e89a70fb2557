"""What to say when a Python that lacks gpulab's packages runs it (pure: the standard library only).

In the course's folder, any Python finds ``./gpulab`` (the folder is on ``sys.path``), so the system Python of a fresh
terminal imports gpulab happily and then fails on its first dependency, ``No module named 'psutil'``. That traceback
names neither the cause (the wrong Python: the course's packages live in ``.venv``) nor the fix (``make env``, or
``.venv/bin/python``). ``missing_dependency`` tells such an error from a bug in gpulab, and
``missing_dependency_message`` says what happened, why and what to type instead.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["DEPENDENCIES", "missing_dependency", "missing_dependency_message"]

# import name -> the distribution pip installs it from (pyproject.toml's dependencies, and IPython, which the
# notebook helpers import and ipywidgets brings)
DEPENDENCIES = {
    "torch": "torch",
    "torchvision": "torchvision",
    "ipywidgets": "ipywidgets",
    "IPython": "ipython",
    "matplotlib": "matplotlib",
    "pynvml": "nvidia-ml-py",
    "psutil": "psutil",
    "tqdm": "tqdm",
    "sklearn": "scikit-learn",
    "cloudpickle": "cloudpickle",
    "numpy": "numpy",
}


def missing_dependency(exc: BaseException) -> str | None:
    """The import name of the gpulab dependency whose absence raised ``exc``; None for any other error."""
    if not isinstance(exc, ModuleNotFoundError) or not exc.name:
        return None
    top = exc.name.partition(".")[0]
    return top if top in DEPENDENCIES else None


def missing_dependency_message(module: str, executable: str, root: Path, command: str | None = None) -> str:
    """The sentence for a Python (``executable``) that found gpulab's code in ``root`` but lacks ``module``.

    ``command`` is the ``python -m gpulab`` command that was asked for, so that the fix names it; None for an import.
    """
    package = DEPENDENCIES.get(module, module)
    made = "" if (root / ".venv" / "bin" / "python").exists() else f" once `make install` has made .venv in {root}"
    if command is None:
        through = f"run it with `.venv/bin/python` (in {root}){made}, or in `make lab`'s JupyterLab"
    else:
        via_make = "`make env` there (it creates .venv if missing) or " if command == "env" else ""
        through = f"{via_make}`.venv/bin/python -m gpulab {command}` (from {root}){made}"
    return (
        f"gpulab: this Python ({executable}) has no {package!r} (import {module}), one of the packages gpulab needs. "
        f"It found gpulab's code in {root}, but not the packages installed with it: a fresh terminal's python3 is "
        f"not the course's environment. Use the course's venv: {through}. "
        f"In a notebook, choose the kernel of the environment where gpulab is installed; to use this Python "
        f"instead, install gpulab into it: {executable} -m pip install -e {root}"
    )
