"""Every chapter is committed in a state nbval, handouts and learners can rely on (no kernel needed)."""

from __future__ import annotations

import sys
from pathlib import Path

import nbformat
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
from normalise_notebook import normal_text, problems  # noqa: E402

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("*.ipynb"))
KNOWN_TAGS = {"nbval-check-output", "raises-exception", "gpu", "multigpu", "nbval-ignore-output", "solution"}


def test_there_are_chapters():
    assert any(p.name.startswith("00_") for p in NOTEBOOKS)


@pytest.fixture(params=NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def nb(request):
    return nbformat.read(request.param, as_version=4)


def _code(nb):
    return [c for c in nb.cells if c.cell_type == "code"]


def test_kernelspec_is_python3(nb):
    assert nb.metadata.get("kernelspec", {}).get("name") == "python3"


def test_no_embedded_images(nb):
    images = [k for c in _code(nb) for o in c.outputs for k in o.get("data", {}) if k.startswith("image/")]
    assert images == [], "strip images: run tools/execute_notebooks.py"


def test_every_code_cell_was_run_in_order(nb):
    counts = [c.execution_count for c in _code(nb) if c.source.strip()]
    assert None not in counts, "commit the outputs of a CPU run (tools/execute_notebooks.py)"
    assert counts == sorted(counts) and len(set(counts)) == len(counts)


def test_only_known_tags(nb):
    tags = {t for c in nb.cells for t in c.metadata.get("tags", [])}
    assert tags <= KNOWN_TAGS, f"unknown tags {tags - KNOWN_TAGS}"


def test_gpu_cells_use_the_gpu_magic_and_are_tagged(nb):
    for c in _code(nb):
        tags = set(c.metadata.get("tags", []))
        first = c.source.lstrip().splitlines()[0] if c.source.strip() else ""
        if first.startswith("%%gpu"):
            n = int(first.split()[1]) if len(first.split()) > 1 else 1
            assert tags & {"gpu", "multigpu"} == {"multigpu" if n >= 2 else "gpu"}, c.source[:80]
        else:
            assert not tags & {"gpu", "multigpu"}, f"tagged gpu but no %%gpu magic: {c.source[:80]}"


def test_expected_exceptions_really_raised_in_the_committed_run(nb):
    # a %%gpu cell committed from a CPU run shows why it skipped; tests/raising_cells.py holds it to its tag on GPUs
    for c in _code(nb):
        if "raises-exception" in c.metadata.get("tags", []) and not c.source.lstrip().startswith("%%gpu"):
            assert any(o.output_type == "error" for o in c.outputs), (
                f"tagged raises-exception but did not raise: {c.source[:80]}"
            )


def test_only_cells_tagged_raises_exception_committed_an_error(nb):
    for c in _code(nb):
        if any(o.output_type == "error" for o in c.outputs):
            assert "raises-exception" in c.metadata.get("tags", []), f"raised but is not tagged: {c.source[:80]}"


def test_first_code_cell_loads_the_extension(nb):
    assert "%load_ext gpulab" in _code(nb)[0].source


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_every_chapter_is_committed_normalised(path):
    assert problems(path) == [], "run tools/normalise_notebook.py (make notebooks does, after running the chapters)"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_every_chapter_is_at_most_100_kib(path):
    assert path.stat().st_size <= 100 * 1024, f"{path.name} is {path.stat().st_size / 1024:.0f} KiB"


def test_the_normaliser_removes_colours_and_the_paths_of_the_machine_that_ran_it():
    repo = Path("/home/ada/gpulab")
    text = (
        "\x1b[31mValueError\x1b[0m in /home/ada/gpulab/gpulab/core/units.py, line 3, called from "
        "/opt/venv/lib/python3.11/site-packages/torch/nn/modules/module.py and /usr/lib/python3.11/runpy.py; "
        "another checkout: /work/wt-7/notebooks/scripts/ddp_digits.py; reservations in /tmp/gpulab-reservations"
    )
    assert normal_text(text, repo) == (
        "ValueError in <repo>/gpulab/core/units.py, line 3, called from .../site-packages/torch/nn/modules/module.py "
        "and .../lib/python3.11/runpy.py; another checkout: <repo>/notebooks/scripts/ddp_digits.py; "
        "reservations in /tmp/gpulab-reservations"
    )


def test_the_normaliser_hides_the_folders_a_run_made_in_the_temporary_directory():
    text = "No such file or directory: '/tmp/gpulab-04-3r0ii739/tmpexei_ckt/new.pt'; locks: /tmp/gpulab-reservations/a"
    assert normal_text(text, Path("/home/ada/gpulab")) == (
        "No such file or directory: '/tmp/…/new.pt'; locks: /tmp/gpulab-reservations/a"
    )


def test_the_normaliser_writes_the_home_folder_of_the_user_who_ran_it_as_a_tilde():
    text = "its parent, pid 12, wrote no /root/.local/share/jupyter/runtime/jpserver-12.json; /rootless/x stays"
    assert normal_text(text, Path("/work/gpulab"), home=Path("/root")) == (
        "its parent, pid 12, wrote no ~/.local/share/jupyter/runtime/jpserver-12.json; /rootless/x stays"
    )
    assert normal_text("/a/b", Path("/work/gpulab"), home=Path("/")) == "/a/b"
