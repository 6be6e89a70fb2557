"""Would installing gpulab here change a package this Python already holds? pip's own answer, without installing.

    python tools/install_changes.py -e '.[lightning]'      # the README's cell for Colab and Kaggle, editable
    python tools/install_changes.py .                      # the same from a path
    python tools/install_changes.py --compare frozen.txt torch ipywidgets   # after installing: still as frozen?

Runs ``pip install --dry-run --report`` with the arguments given, in the Python that runs this script, and compares
the packages pip would install with the ones installed. Exit status 1, with each one named, when pip would replace
any (gpulab itself excepted); 0 otherwise. Standard library only: it runs before gpulab's dependencies are there.
"""

from __future__ import annotations

import json
import subprocess
import sys
from importlib import metadata

OURS = {"gpulab"}


def _key(name: str) -> str:
    return name.lower().replace("_", "-").replace(".", "-")


def installed() -> dict[str, str]:
    """Name -> version of every distribution this Python sees."""
    return {_key(d.metadata["Name"]): d.version for d in metadata.distributions() if d.metadata["Name"]}


def would_install(pip_args: list[str]) -> dict[str, str]:
    """Name -> version of what ``pip install <pip_args>`` would install here (pip's JSON report, nothing installed)."""
    cmd = [sys.executable, "-m", "pip", "install", "--dry-run", "--quiet", "--report", "-", *pip_args]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        raise RuntimeError(
            f"`{' '.join(cmd)}` failed (exit {done.returncode}): pip could not resolve the install, "
            f"so it cannot say what would change.\n{done.stderr[-3000:]}"
        )
    report = json.loads(done.stdout)
    return {_key(i["metadata"]["name"]): i["metadata"]["version"] for i in report["install"]}


def changes(pip_args: list[str]) -> dict[str, tuple[str, str]]:
    """Installed packages (gpulab excepted) that the install would replace: name -> (installed, would be)."""
    have, get = installed(), would_install(pip_args)
    return {n: (have[n], v) for n, v in get.items() if n in have and n not in OURS}


def moved_since(frozen: str, names: list[str]) -> dict[str, tuple[str, str]]:
    """Of ``names``, those whose installed version differs from a ``pip freeze`` file: name -> (then, now)."""
    then = {}
    for line in frozen.splitlines():
        if "==" in line:
            name, version = line.split("==", 1)
            then[_key(name)] = version.strip()
    now = installed()
    missing = [n for n in names if _key(n) not in then]
    if missing:
        raise ValueError(f"{missing} not in the frozen list: it was not installed before, so there is nothing to keep")
    return {n: (then[_key(n)], now.get(_key(n), "removed")) for n in names if now.get(_key(n)) != then[_key(n)]}


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__)
        return 2
    if argv[0] == "--compare":
        with open(argv[1]) as f:
            moved = moved_since(f.read(), argv[2:])
        for name, (then, now) in sorted(moved.items()):
            print(f"the install replaced {name} {then} with {now}")
        if not moved:
            print(f"still as before the install: {', '.join(argv[2:])}")
        return 1 if moved else 0
    replaced = changes(argv)
    if replaced:
        print(f"pip install {' '.join(argv)} would replace {len(replaced)} installed package(s):")
        for name, (old, new) in sorted(replaced.items()):
            print(f"  {name} {old} -> {new}")
        print(
            "A bound in pyproject.toml excludes what this platform holds: widen it (and test the new bound in "
            "make test-compat), or the platform breaks when its users install gpulab."
        )
        return 1
    print(f"pip install {' '.join(argv)} keeps every installed package as it is.")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
