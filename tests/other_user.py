"""A copy of this checkout's ``gpulab`` that another Unix user (nobody) can import with the system's Python.

The clone may sit in a private folder (root's home), which nobody cannot enter; the reservation and reservation code
needs nothing outside the standard library, so a world-readable copy in a scratch folder is all such a process needs.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def system_python_for_nobody() -> str:
    """The system's Python (outside root's home), or skip saying why this test cannot run here."""
    if os.geteuid() != 0:
        pytest.skip("needs root to start a process as another user (nobody)")
    python = shutil.which("python3.11", path="/usr/bin")
    if python is None:
        pytest.skip("no interpreter outside root's home that user nobody can run")
    return python


def readable_copy(prefix: str, packages: tuple[str, ...] = ()) -> Path:
    """A new scratch folder (mode 755) holding ``code/gpulab``, readable by everyone; the caller removes it.

    ``packages`` are copied beside it from this environment (``psutil`` for ``python -m gpulab watch``), for the
    system's Python of the same version."""
    tmp = Path(tempfile.mkdtemp(prefix=prefix))
    os.chmod(tmp, 0o755)
    shutil.copytree(ROOT / "gpulab", tmp / "code" / "gpulab", ignore=shutil.ignore_patterns("__pycache__"))
    for name in packages:
        module = __import__(name)
        shutil.copytree(Path(module.__file__).parent, tmp / "code" / name, ignore=shutil.ignore_patterns("__pycache__"))
    for folder, dirs, files in os.walk(tmp / "code"):
        for name in dirs + files:
            os.chmod(Path(folder) / name, 0o755 if name in dirs else 0o644)
    os.chmod(tmp / "code", 0o755)
    return tmp
