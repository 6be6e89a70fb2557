"""Write a chapter back in the form it is committed in, so that a diff shows only what changed.

    .venv/bin/python tools/normalise_notebook.py notebooks/*.ipynb          # rewrite in place
    .venv/bin/python tools/normalise_notebook.py --check notebooks/*.ipynb  # exit 1 naming what is not normalised

``tools/execute_notebooks.py`` applies it after every run. It removes what changes on every run without saying
anything about the code:

* execution timestamps (``metadata.execution`` of each cell);
* widget state (``metadata.widgets`` of the notebook: a live kernel's widget models, hundreds of KiB);
* ANSI colour codes in outputs (IPython colours its tracebacks);
* paths of the machine that ran the chapter: this checkout becomes ``<repo>``, an installed package's folder
  ``.../site-packages/`` and Python's own library ``.../lib/pythonX.Y/``, and the folders a run made in the temporary
  directory (``/tmp/gpulab-04-3r0ii739/tmpexei_ckt/new.pt``) become ``/tmp/…/new.pt``, still a path to the
  sanitizer that nbval and the raising-cell check apply. The documented default ``/tmp/gpulab-reservations`` is a
  path the reader's machine has too, and stays. The home folder of the user who ran it becomes ``~``
  (``/root/.local/share/jupyter/runtime/…`` → ``~/.local/share/jupyter/runtime/…``).
"""

from __future__ import annotations

import re
import sys
import tempfile
from pathlib import Path

import nbformat

REPO = Path(__file__).resolve().parents[1]
ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_PATH_CHARS = r"[^\s'\"(),:<>\[\]]"
SITE_PACKAGES = re.compile(rf"/{_PATH_CHARS}*?/site-packages/")
STDLIB = re.compile(rf"/{_PATH_CHARS}*?/lib/(python3\.\d+)/")
# Folders a run made under the temporary directory (random names), not the documented reservations folder.
TEMP_FOLDERS = re.compile(
    rf"(?<![\w.~-])({'|'.join(re.escape(t) for t in sorted({'/tmp', tempfile.gettempdir()}))})/"
    rf"(?!gpulab-reservations\b)(?:{_PATH_CHARS}+/)+"
)
# Another checkout of this repository (a worktree, a clone elsewhere): a folder followed by one of ours.
OTHER_CHECKOUT = re.compile(rf"/{_PATH_CHARS}*?/(?=(?:gpulab|notebooks|tools|tests|benchmarks)/{_PATH_CHARS}+\.py\b)")


def normal_text(text: str, repo: Path = REPO, home: Path | None = None) -> str:
    """``text`` without ANSI codes, machine paths written as ``<repo>/…``, ``~/…`` and ``.../site-packages/…``."""
    text = ANSI.sub("", text)
    text = text.replace(str(repo) + "/", "<repo>/").replace(str(repo), "<repo>")
    home = Path.home() if home is None else home
    if len(home.parts) > 1:  # a home of "/" would turn every path into ~
        text = re.sub(rf"(?<![\w.~-]){re.escape(str(home))}/", "~/", text)
    text = SITE_PACKAGES.sub(".../site-packages/", text)
    text = STDLIB.sub(r".../lib/\1/", text)
    text = TEMP_FOLDERS.sub(r"\1/…/", text)
    return OTHER_CHECKOUT.sub("<repo>/", text)


def _normal_value(value, repo: Path):
    if isinstance(value, str):
        return normal_text(value, repo)
    if isinstance(value, list):
        return [_normal_value(v, repo) for v in value]
    return value


def normalise(nb: nbformat.NotebookNode, repo: Path = REPO) -> nbformat.NotebookNode:
    """Normalise ``nb`` in place (see the module's docstring) and return it."""
    nb.metadata.pop("widgets", None)
    for cell in nb.cells:
        cell.metadata.pop("execution", None)
        for out in cell.get("outputs", []):
            if "text" in out:
                out.text = _normal_value(out.text, repo)
            if "traceback" in out:
                out.traceback = _normal_value(out.traceback, repo)
            if "evalue" in out:
                out.evalue = _normal_value(out.evalue, repo)
            for kind in [k for k in out.get("data", {}) if k.startswith("text/")]:
                out.data[kind] = _normal_value(out.data[kind], repo)
    return nb


def problems(path: Path) -> list[str]:
    """What in the committed file ``path`` is not normalised (empty when nothing is)."""
    nb = nbformat.read(path, as_version=4)
    found = []
    if "widgets" in nb.metadata:
        found.append("widget state in the notebook's metadata")
    if any("execution" in c.metadata for c in nb.cells):
        found.append("execution timestamps in cell metadata")
    before = nbformat.writes(nb)
    if nbformat.writes(normalise(nb)) != before and not found:
        found.append("outputs with ANSI codes or paths of the machine that ran it")
    return found


def main(argv: list[str]) -> int:
    check = "--check" in argv
    paths = [Path(a) for a in argv if a != "--check"]
    if not paths:
        sys.exit(__doc__)
    bad = 0
    for path in paths:
        if check:
            for problem in problems(path):
                print(f"{path}: {problem}; run tools/normalise_notebook.py {path}")
                bad = 1
        else:
            nb = normalise(nbformat.read(path, as_version=4))
            nbformat.write(nb, path)
    return bad


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
