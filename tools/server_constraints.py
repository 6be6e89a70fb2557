"""Write ``constraints-server.txt``: the pins of ``constraints.txt`` less the machine's own torch, torchvision and CUDA.

    python tools/server_constraints.py           # (re)write constraints-server.txt from constraints.txt
    python tools/server_constraints.py --check   # exit 1, saying what differs, when it is out of step

``constraints.txt`` pins the torch build this course is tested with; ``make lab``, ``make test`` and ``make install``
install it into a fresh ``.venv``. A workshop server, a JupyterHub, an HPC module, Colab or Kaggle already holds a
torch built for its driver, with the CUDA libraries it needs: installing gpulab there must keep them. So the README's
install lines for those places constrain with this derived file, which keeps every other pin. What is left out:
torch, torchvision, triton and the CUDA libraries (``nvidia-*`` wheels other than ``nvidia-ml-py``, gpulab's own NVML
binding, and ``cuda-*``). ``tests/test_install_lines.py`` checks that the file is in step and that each install line
keeps a different torch. Standard library only.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT / "constraints.txt"
TARGET = ROOT / "constraints-server.txt"
HEADER = (
    "# Written by tools/server_constraints.py from constraints.txt; do not edit (a test keeps the two in step).\n"
    "# The pins of constraints.txt less torch, torchvision, triton and the CUDA libraries: for installing gpulab into\n"
    "# an environment that already holds the machine's torch (a workshop server, JupyterHub, HPC), which it keeps.\n"
)

__all__ = ["machine_owned", "derived", "main"]


def machine_owned(name: str) -> bool:
    """True for the packages that belong to the machine's torch build: torch, torchvision, triton, CUDA's wheels."""
    key = re.sub(r"[-_.]+", "-", name).lower()
    return (
        key in ("torch", "torchvision", "triton")
        or (key.startswith("nvidia-") and key != "nvidia-ml-py")
        or key.startswith("cuda-")
    )


def _requirement_name(line: str) -> str | None:
    match = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", line)
    return match.group(1) if match and not line.lstrip().startswith("#") else None


def derived(constraints: str) -> str:
    """``constraints-server.txt``'s text for a ``constraints.txt`` text: its pins, less what the machine owns."""
    kept = []
    for line in constraints.splitlines():
        name = _requirement_name(line)
        if name is not None and not machine_owned(name):
            kept.append(line.strip())
    return HEADER + "".join(f"{line}\n" for line in kept)


def main(argv: list[str]) -> int:
    want = derived(SOURCE.read_text())
    if argv == ["--check"]:
        have = TARGET.read_text() if TARGET.exists() else ""
        if have != want:
            print(
                f"{TARGET.name} is not what constraints.txt gives: constraints.txt changed since it was written. "
                "Run python tools/server_constraints.py and commit both files.\nIt should read:\n" + want
            )
            return 1
        print(f"{TARGET.name} is in step with constraints.txt.")
        return 0
    if argv:
        print(__doc__)
        return 2
    TARGET.write_text(want)
    print(f"wrote {TARGET.name}: {len(want.splitlines()) - len(HEADER.splitlines())} pin(s)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
