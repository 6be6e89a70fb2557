"""make wheelhouse: download, where an index is reachable, the wheels make test-gpu needs on a GPU machine without one.

    python tools/gpukit/wheelhouse.py 3.12        # into wheelhouse/, for CPython 3.12 on manylinux x86-64

What the kit needs beyond the GPU machine's own packages (tools/gpukit/requirements.txt) and what those depend on;
then the folder is checked: no torch, CUDA library or triton (deps.forbidden), and at most 60 MiB in all.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from gpukit.deps import REQUIREMENTS, forbidden  # noqa: E402

LIMIT_BYTES = 60 * 2**20
PLATFORMS = (
    "manylinux_2_34_x86_64",
    "manylinux_2_28_x86_64",
    "manylinux_2_17_x86_64",
    "manylinux2014_x86_64",
    "manylinux_2_12_x86_64",
    "manylinux2010_x86_64",
    "manylinux_2_5_x86_64",
    "manylinux1_x86_64",
)


def download(folder: Path, python_version: str) -> None:
    tag = "cp" + python_version.replace(".", "")
    platforms = [a for p in PLATFORMS for a in ("--platform", p)]
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--quiet",
            "--dest",
            str(folder),
            "--only-binary=:all:",
            "--python-version",
            python_version,
            "--implementation",
            "cp",
            "--abi",
            tag,
            "--abi",
            "abi3",
            "--abi",
            "none",
            *platforms,
            "-r",
            str(REQUIREMENTS),
        ],
        check=True,
    )


def problems(folder: Path) -> list[str]:
    """What makes ``folder`` unfit to carry: a wheel of torch/CUDA/triton, or more than 60 MiB."""
    wheels = sorted(folder.glob("*.whl"))
    out = [
        f"{w.name} is a package the GPU machine's own build provides" for w in wheels if forbidden(w.name.split("-")[0])
    ]
    total = sum(w.stat().st_size for w in wheels)
    if total > LIMIT_BYTES:
        out.append(f"{total / 2**20:.1f} MiB in all, over the {LIMIT_BYTES >> 20} MiB limit")
    if not wheels:
        out.append("no wheels at all")
    return out


def main(argv: list[str]) -> int:
    if len(argv) != 1 or not argv[0].count(".") == 1:
        print("usage: wheelhouse.py X.Y  (the GPU machine's Python, e.g. 3.12)")
        return 2
    folder = Path(__file__).resolve().parents[2] / "wheelhouse"
    folder.mkdir(exist_ok=True)
    download(folder, argv[0])
    found = problems(folder)
    for p in found:
        print(f"wheelhouse/: {p}")
    wheels = list(folder.glob("*.whl"))
    print(
        f"wheelhouse/: {len(wheels)} wheels, {sum(w.stat().st_size for w in wheels) / 2**20:.1f} MiB, "
        f"for CPython {argv[0]} on manylinux x86-64"
    )
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
