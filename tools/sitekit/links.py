"""Where a reader can run a chapter: the repository's URL, Open in Colab / Open in Kaggle, and Colab's first cell.

The repository has no fixed public URL, so it is a setting: ``--repo-url``, else the git remote ``origin``. Colab opens
notebooks from GitHub only (``colab.research.google.com/github/OWNER/REPO/blob/BRANCH/PATH``) and Kaggle imports one
from a GitHub URL (``kaggle.com/kernels/welcome?src=…``), so both links are made for a GitHub repository only; where
there is none, they are left out and ``launch_links`` says why, for the build to print. They point at the chapter's
Colab edition on the branch the site is published from (``docs/publishing.md``): the chapter with a first cell that
does what the README's Colab route does: clone, install gpulab keeping the platform's torch, and run from the
chapters' folder.
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

import nbformat

__all__ = ["repo_url_from_git", "github_repo", "LaunchLinks", "launch_links", "colab_edition", "COLAB_TAG"]

COLAB_TAG = "colab-setup"
_GITHUB = re.compile(
    r"^(?:https?://(?:[^@/]+@)?github\.com/|git@github\.com:|ssh://git@github\.com/)([^/]+)/([^/]+?)(?:\.git)?/?$"
)


def repo_url_from_git(root: Path) -> str | None:
    """The URL of the git remote ``origin`` of ``root``, or None where there is no git or no such remote."""
    try:
        done = subprocess.run(
            ["git", "-C", str(root), "remote", "get-url", "origin"], capture_output=True, text=True, timeout=30
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() or None if done.returncode == 0 else None


def github_repo(url: str) -> tuple[str, str] | None:
    """(owner, name) of a GitHub URL, https or ssh; None for any other host or a local path."""
    m = _GITHUB.match(url.strip())
    return (m.group(1), m.group(2)) if m else None


def clone_url(url: str) -> str:
    """The URL a learner clones from: a GitHub remote as https (Colab and Kaggle have no ssh key), others as given."""
    gh = github_repo(url)
    return f"https://github.com/{gh[0]}/{gh[1]}.git" if gh else url


@dataclass(frozen=True)
class LaunchLinks:
    colab: str | None
    kaggle: str | None
    why_not: str | None  # a sentence for the build's output where the links are left out


def launch_links(repo_url: str | None, branch: str, path: str) -> LaunchLinks:
    """The Open in Colab and Open in Kaggle URLs of the notebook at ``path`` on ``branch`` of ``repo_url``."""
    if not repo_url:
        return LaunchLinks(
            None,
            None,
            "no repository URL (no git remote 'origin', and no --repo-url), so the chapters have no Open in Colab / "
            "Open in Kaggle links: pass --repo-url https://github.com/OWNER/REPO (or add the remote) to get them",
        )
    gh = github_repo(repo_url)
    if gh is None:
        return LaunchLinks(
            None,
            None,
            f"the repository URL {repo_url} is not on GitHub, and Colab and Kaggle open notebooks from GitHub only, "
            "so the chapters have no Open in Colab / Open in Kaggle links (the Colab editions are still there to "
            "download)",
        )
    owner, name = gh
    blob = f"github/{owner}/{name}/blob/{quote(branch)}/{quote(path)}"
    return LaunchLinks(
        f"https://colab.research.google.com/{blob}",
        "https://www.kaggle.com/kernels/welcome?src="
        + quote(f"https://github.com/{owner}/{name}/blob/{branch}/{path}", safe=""),
        None,
    )


def setup_source(repo_url: str, lightning: bool) -> str:
    """Colab's (and Kaggle's) first cell: the README's route. ``pip install`` keeps the platform's torch, torchvision
    and CUDA libraries (``constraints-server.txt`` pins everything else the course is tested with); the checkout goes
    first on ``sys.path`` because an editable install is seen only by processes started after it (the ranks the
    chapters start are, this kernel is not)."""
    extra = "[lightning]" if lightning else ""
    return "\n".join(
        [
            "# Colab or Kaggle: get the course and install its helper package, keeping this runtime's torch.",
            f"![ -d gpulab ] || git clone --depth 1 {clone_url(repo_url)} gpulab",
            f"%pip install --quiet -c ./gpulab/constraints-server.txt -e './gpulab{extra}'",
            "import os, sys",
            "sys.path.insert(0, os.path.abspath('gpulab'))",
            "%cd gpulab/notebooks",
        ]
    )


def colab_edition(chapter: Path, repo_url: str) -> nbformat.NotebookNode:
    """The committed chapter with the setup cell first (tagged ``colab-setup``): the notebook Colab and Kaggle open."""
    nb = nbformat.read(chapter, as_version=4)
    lightning = any(
        re.search(r"^\s*(import|from) lightning\b", c.source, re.M) for c in nb.cells if c.cell_type == "code"
    )
    cell = nbformat.v4.new_code_cell(setup_source(repo_url, lightning))
    cell.metadata["tags"] = [COLAB_TAG]
    nb.cells.insert(0, cell)
    return nb
