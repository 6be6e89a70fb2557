"""Every line of README.md, docs/ and environment.yml that installs gpulab keeps the machine's torch, torchvision and
CUDA libraries: pip's own dry run (``pip install --dry-run --report``) of each line, read out of the files themselves,
in an environment that holds a torch other than the pins of constraints.txt.

That environment is a GPU machine's as pip sees it: pip decides what to install from the installed distributions'
metadata alone, so a venv whose site-packages holds the ``.dist-info`` of torch 2.11.0+cu130, torchvision
0.26.0+cu130 and the CUDA wheels that torch requires (the machine of the first GPU run, 2026-11-26: torch
2.11.0+cu130; its requirements as torch 2.11.0's wheel declares them) is, for a dry run, that machine. No second torch
is installed for it. The README's lines that install a torch build for an older driver (PyTorch's own index) are meant
to change torch: they are recognised and left out, and any other pip line that installs no gpulab fails the test, so
that a new one is classified. Needs the package index to resolve; skips, saying so, where it cannot be reached.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest
import yaml

from tests.process_group import run
from tools.server_constraints import derived, machine_owned
from tools.sitekit.links import setup_source

ROOT = Path(__file__).resolve().parents[1]
TORCH_INDEX = "https://download.pytorch.org/whl/"

# The machine's torch build, as metadata: (name, version, Requires-Dist lines).
MACHINE = [
    (
        "torch",
        "2.11.0+cu130",
        [
            "filelock",
            "typing-extensions>=4.10.0",
            "sympy>=1.13.3",
            "networkx>=2.5.1",
            "jinja2",
            "fsspec>=0.8.5",
            'cuda-bindings<14,>=13.0.3; platform_system == "Linux"',
            'nvidia-cudnn-cu13==9.19.0.56; platform_system == "Linux"',
            'nvidia-nccl-cu13==2.28.9; platform_system == "Linux"',
            'triton==3.6.0; platform_system == "Linux"',
        ],
    ),
    ("torchvision", "0.26.0+cu130", ["numpy", "torch==2.11.0", "pillow!=8.3.*,>=5.3.0"]),
    ("cuda-bindings", "13.0.3", []),
    ("nvidia-cudnn-cu13", "9.19.0.56", []),
    ("nvidia-nccl-cu13", "2.28.9", []),
    ("triton", "3.6.0", []),
]


def _pip_words(command: str) -> list[str] | None:
    """The words after ``pip install`` in a shell or notebook line (``%pip``, ``!pip``, ``python -m pip``), else
    None."""
    words = shlex.split(command.lstrip("%!"), comments=True)
    for i in range(len(words) - 1):
        if words[i] == "pip" and words[i + 1] == "install":
            return words[i + 2 :]
    return None


def _installs_gpulab(words: list[str]) -> bool:
    return any(re.fullmatch(r"\.(/gpulab)?(\[[\w,]+\])?", w) for w in words)


def readme_pip_lines(text: str) -> list[str]:
    """Every ``pip install`` command of a Markdown text: inline code spans and lines of code blocks."""
    found = [span for span in re.findall(r"`([^`\n]*\bpip install\b[^`\n]*)`", text)]
    in_block = False
    for line in text.splitlines():
        if line.startswith("```"):
            in_block = not in_block
        elif in_block and re.search(r"\bpip install\b", line):
            found.append(line)
    return found


def pages() -> list[tuple[str, str]]:
    """(name, text) of the README and the docs/ pages it links: the install lines live in both."""
    return [("README.md", (ROOT / "README.md").read_text())] + [
        (f"docs/{p.name}", p.read_text()) for p in sorted((ROOT / "docs").glob("*.md"))
    ]


def install_lines() -> list[tuple[str, list[str]]]:
    """(where, pip's words) of each line installing gpulab: README.md and docs/, environment.yml, the Hub config's
    docstring, the site's Colab cell."""
    found = [(name, c) for name, text in pages() for c in readme_pip_lines(text)]
    hub = (ROOT / "tools" / "jupyterhub_config.py").read_text()  # its docstring's set-up, an indented block
    found += [("tools/jupyterhub_config.py", line) for line in hub.splitlines() if re.search(r"\bpip install\b", line)]
    for lightning in (False, True):  # the first cell of the site's Colab and Kaggle notebooks (tools/sitekit/links.py)
        cell = setup_source("https://github.com/OWNER/REPO", lightning)
        found += [("the site's Colab cell", line) for line in cell.splitlines() if re.search(r"\bpip install\b", line)]
    lines: dict[tuple[str, ...], str] = {}  # the same words in two places are resolved once, both named
    for name, command in found:
        words = _pip_words(command)
        if words is not None and _installs_gpulab(words):
            key = tuple(words)
            lines[key] = f"{lines[key]}; {name}" if key in lines else f"{name}: {command.strip()}"
    deps = yaml.safe_load((ROOT / "environment.yml").read_text())["dependencies"]
    pip_section = next(d["pip"] for d in deps if isinstance(d, dict) and "pip" in d)
    words = [w for item in pip_section for w in shlex.split(item)]
    return [(where, list(key)) for key, where in lines.items()] + [
        (f"environment.yml: pip install {' '.join(pip_section)}", words)
    ]


LINES = install_lines()


def test_the_files_name_each_route_and_every_other_pip_line_is_a_torch_for_the_driver():
    where = " ".join(w for w, _ in LINES)
    for route in ("'.[lightning]'", "'.[lightning,lab]'", "'.[lightning,lab,hub]'", "./gpulab", "environment.yml"):
        assert route in where, f"no install line for {route} was found: {where}"
    others = [
        c
        for _, text in pages()
        for c in readme_pip_lines(text)
        if _pip_words(c) is not None and not _installs_gpulab(_pip_words(c))
    ]
    assert len(others) == 3, others  # cu124, cu121, cu118
    for command in others:
        words = _pip_words(command)
        assert set(words) >= {"torch", "torchvision", "--index-url"} and TORCH_INDEX in command, (
            f"{command!r} installs something other than gpulab or a torch for the driver: say here which it is"
        )


def test_the_server_constraints_are_constraints_txt_less_the_machines_torch():
    assert (ROOT / "constraints-server.txt").read_text() == derived((ROOT / "constraints.txt").read_text()), (
        "constraints-server.txt is out of step: run python tools/server_constraints.py"
    )
    kept = derived(
        "torch==2.14.1\ntorchvision==0.29.1\nnvidia-nccl-cu13==2.28.9\nnvidia-ml-py==13.0\njupyterhub==6.1.1\n"
    )
    assert [line for line in kept.splitlines() if not line.startswith("#")] == [
        "nvidia-ml-py==13.0",
        "jupyterhub==6.1.1",
    ]
    assert [n for n in ("torch", "Torch_Vision", "triton", "cuda-toolkit", "nvidia_cublas") if machine_owned(n)] == [
        "torch",
        "triton",
        "cuda-toolkit",
        "nvidia_cublas",
    ]


@pytest.fixture(scope="module")
def machine(tmp_path_factory) -> Path:
    """A venv (no pip of its own) holding the machine's torch build as installed metadata; its Python."""
    index = os.environ.get("PIP_INDEX_URL", "https://pypi.org/simple/").rstrip("/") + "/"
    try:
        urllib.request.urlopen(f"{index}pip/", timeout=20).close()
    except (urllib.error.URLError, OSError) as exc:
        pytest.skip(
            f"the package index {index} cannot be reached ({exc}): pip needs it to resolve the install lines. "
            "Run this test where the index answers (PIP_INDEX_URL names another one)."
        )
    home = tmp_path_factory.mktemp("machine")
    run([sys.executable, "-m", "venv", "--without-pip", str(home / "venv")], check=True, timeout=120)
    (site,) = (home / "venv" / "lib").glob("python3*/site-packages")
    for name, version, requires in MACHINE:
        info = site / f"{name.replace('-', '_')}-{version}.dist-info"
        info.mkdir()
        lines = ["Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}"]
        (info / "METADATA").write_text("\n".join(lines + [f"Requires-Dist: {r}" for r in requires]) + "\n")
        (info / "INSTALLER").write_text("pip\n")
        (info / "RECORD").write_text("")
    (home / "gpulab").symlink_to(ROOT)  # the Colab and Kaggle cells install ./gpulab, the clone beside them
    return home


@pytest.mark.parametrize("where, words", LINES, ids=[w for w, _ in LINES])
def test_the_install_line_keeps_the_machines_torch_and_cuda(machine, where, words):
    python = machine / "venv" / "bin" / "python"
    cwd = machine if any(w.startswith("./gpulab") for w in words) else ROOT
    cmd = [sys.executable, "-m", "pip", "--python", str(python), "install", "--dry-run", "--quiet", "--report", "-"]
    done = run([*cmd, *words], cwd=cwd, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, f"pip could not resolve {where}:\n{done.stderr[-3000:]}"
    would = {i["metadata"]["name"]: i["metadata"]["version"] for i in json.loads(done.stdout)["install"]}
    assert any(n.lower() == "gpulab" for n in would), f"pip's report installs no gpulab for {where}: {would}"
    replaced = {n: v for n, v in would.items() if machine_owned(n)}
    assert not replaced, (
        f"{where} would replace the machine's torch build with {replaced} (it holds "
        f"{', '.join(f'{n} {v}' for n, v, _ in MACHINE)}): constrain with constraints-server.txt, not constraints.txt"
    )
