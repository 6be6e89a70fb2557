"""Which chapters this checkout has, and what each needs (a probe: reads the notebooks' JSON, runs nothing).

The report says what each chapter will do on this machine from the chapters themselves — their titles and their
cells tagged ``gpu`` / ``multigpu`` — so it never promises a chapter that is not there, and stays true as chapters
are added. Taught in ``notebooks/00_setup.ipynb``.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Chapter", "chapters", "notebooks_dir"]

_CHAPTER = re.compile(r"^\d\d_.+\.ipynb$")


@dataclass(frozen=True)
class Chapter:
    """One notebook chapter: ``name`` is its file's stem (``02_choosing_gpus``); cell counts come from its tags."""

    name: str
    title: str
    gpu_cells: int  # cells that need one CUDA GPU (tag gpu, magic %%gpu)
    multigpu_cells: int  # cells that need two or more (tag multigpu, magic %%gpu 2)
    uses_lightning: bool

    def plan(self, usable_gpus: int) -> str:
        """What this chapter will do on a machine where PyTorch can use ``usable_gpus`` GPUs."""
        parts = []
        if self.gpu_cells:
            parts.append(f"{self.gpu_cells} GPU cell(s) " + ("run" if usable_gpus >= 1 else "skip, saying why"))
        if self.multigpu_cells:
            parts.append(
                f"{self.multigpu_cells} multi-GPU cell(s) " + ("run" if usable_gpus >= 2 else "skip, saying why")
            )
        return "; ".join(parts) if parts else "runs entirely on the CPU"


def notebooks_dir(start: Path | None = None) -> Path | None:
    """The chapters' folder: ``notebooks/`` next to the package (a checkout), else the working directory when it
    holds chapters (a kernel started in ``notebooks/``); ``None`` when neither has any."""
    candidates = [Path(__file__).resolve().parents[2] / "notebooks", Path.cwd()] if start is None else [start]
    for d in candidates:
        if d.is_dir() and any(_CHAPTER.match(p.name) for p in d.iterdir()):
            return d
    return None


def _read(path: Path) -> Chapter:
    nb = json.loads(path.read_text(encoding="utf-8"))
    cells = nb.get("cells", [])
    title = path.stem
    for cell in cells:
        if cell.get("cell_type") == "markdown":
            first = "".join(cell.get("source", "")).strip().splitlines()
            if first and first[0].startswith("#"):
                title = first[0].lstrip("#").strip()
            break
    tags = [set(c.get("metadata", {}).get("tags", [])) for c in cells if c.get("cell_type") == "code"]
    code = "\n".join("".join(c.get("source", "")) for c in cells if c.get("cell_type") == "code")
    lightning = (
        re.search(r"^\s*(import|from)\s+(lightning|pytorch_lightning|gpulab\.lightning)\b", code, re.MULTILINE)
        is not None
    )
    return Chapter(path.stem, title, sum("gpu" in t for t in tags), sum("multigpu" in t for t in tags), lightning)


def chapters(directory: Path | None = None) -> tuple[Chapter, ...]:
    """The chapters found (see ``notebooks_dir``), in order; empty when this is not a checkout of the course."""
    d = notebooks_dir(directory)
    if d is None:
        return ()
    return tuple(_read(p) for p in sorted(d.iterdir()) if _CHAPTER.match(p.name))
