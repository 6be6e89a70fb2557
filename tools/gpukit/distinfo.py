"""gpulab's entry points for the GPU run, registered without installing gpulab: a metadata-only ``.dist-info``.

Jupyter finds the kernel provisioner that chapter 02's kernelspecs name (``gpulab-provisioner``, entry point group
``jupyter_client.kernel_provisioners``) in the metadata of installed distributions. ``pip install -e .`` leaves
``gpulab.egg-info`` in the checkout, which registers gpulab's entry points for any Python with the checkout on its
path; a fresh clone on a GPU machine has none (the H100 run of 2026-11-26: ``NoSuchKernel: No such kernel named
gpulab-1-gpu``). Installing gpulab into ``.gpu-deps/`` would register them but shadow the checkout, since
``.gpu-deps/`` comes first on the path and several modules find the repository through ``__file__`` (``evidence/``,
the chapters, the rank server). So ``.gpu-deps/`` gets only ``gpulab-<version>.dist-info`` (METADATA and
``entry_points.txt``, written from pyproject.toml's ``[project]`` table): the code Python imports stays the checkout's.
"""

from __future__ import annotations

import re
import shutil
import sys
from pathlib import Path
from typing import Any

INSTALLER = "gpulab-gpu-kit"  # written into the dist-info's INSTALLER file: who made it, so a rerun may replace it


class MetadataError(ValueError):
    """pyproject.toml does not give what the metadata needs (what is missing, and what to do)."""


def _toml(path: Path, target: Path) -> dict[str, Any]:
    if sys.version_info >= (3, 11):
        import tomllib  # novm (guarded by the version check)
    else:  # 3.10: tomli, which tools/gpukit/requirements.txt adds into target/ there
        sys.path.insert(0, str(target))
        try:
            import tomli as tomllib
        finally:
            sys.path.remove(str(target))
    with path.open("rb") as f:
        return tomllib.load(f)


def project_table(pyproject: Path, target: Path) -> dict[str, Any]:
    """pyproject.toml's ``[project]`` table, with a static name and version."""
    project = _toml(pyproject, target).get("project") or {}
    for key in ("name", "version"):
        if not isinstance(project.get(key), str):
            raise MetadataError(
                f"{pyproject} gives no static project.{key} (dynamic: {project.get('dynamic')}): the "
                f'GPU run writes gpulab\'s metadata from it, so give {key} = "..." in [project]'
            )
    return project


def entry_points_txt(project: dict[str, Any]) -> str:
    """entry_points.txt as setuptools writes it: one INI section per group, ``scripts`` as ``console_scripts``."""
    groups = {
        "console_scripts": project.get("scripts") or {},
        "gui_scripts": project.get("gui-scripts") or {},
        **(project.get("entry-points") or {}),
    }
    sections = [
        f"[{group}]\n" + "".join(f"{name} = {value}\n" for name, value in sorted(eps.items()))
        for group, eps in sorted(groups.items())
        if eps
    ]
    return "\n".join(sections)


def metadata_txt(project: dict[str, Any]) -> str:
    """METADATA (core metadata 2.1): name, version, summary and the Python it needs. No Requires-Dist: nothing is
    installed by this, and what the GPU run imports is the machine's own or .gpu-deps/' (tools/gpukit/deps.py)."""
    lines = ["Metadata-Version: 2.1", f"Name: {project['name']}", f"Version: {project['version']}"]
    if project.get("description"):
        lines.append(f"Summary: {project['description']}")
    if project.get("requires-python"):
        lines.append(f"Requires-Python: {project['requires-python']}")
    return "\n".join(lines) + "\n"


def _normalised(name: str) -> str:
    return re.sub(r"[-_.]+", "_", name).lower()


def dist_info_name(project: dict[str, Any]) -> str:
    """``gpulab-0.1.0.dist-info``: the name normalised as the wheel and installed-packages specifications say."""
    return f"{_normalised(project['name'])}-{project['version']}.dist-info"


def register(root: Path, target: Path) -> Path:
    """Write the checkout's metadata into ``target`` (its ``.dist-info`` only, never its code); returns the folder.

    An older registration of the same project in ``target`` (another version, or one written before pyproject.toml
    changed) is replaced, so that ``target`` holds exactly one."""
    project = project_table(root / "pyproject.toml", target)
    target.mkdir(parents=True, exist_ok=True)
    folder = target / dist_info_name(project)
    for old in target.glob(f"{_normalised(project['name'])}-*.dist-info"):
        if old.is_dir() and (old / "INSTALLER").is_file() and (old / "INSTALLER").read_text().strip() == INSTALLER:
            shutil.rmtree(old)
    if folder.exists():
        raise MetadataError(
            f"{folder} exists and was not written by the GPU kit (an install of {project['name']} "
            f"into {target.name}/ would shadow the checkout): remove {target}/ and run again"
        )
    files = {
        "METADATA": metadata_txt(project),
        "entry_points.txt": entry_points_txt(project),
        "INSTALLER": INSTALLER + "\n",
    }
    folder.mkdir()
    for name, text in files.items():
        (folder / name).write_text(text, encoding="utf-8")
    record = [f"{folder.name}/{name},," for name in (*files, "RECORD")]
    (folder / "RECORD").write_text("\n".join(record) + "\n", encoding="utf-8")
    return folder
