"""Which cells and tests run is a function of the GPU count and the tags, tested for 0, 1, 2 and 8 GPUs."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest

from tests.raising_cells import gpu_cell_needs
from tests.which_cells_run import GPU_TAGS, cells_that_run, gpus_needed, runs_with

CHAPTERS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("[0-9][0-9]_*.ipynb"))

CELLS = [  # made-up cells, by their tags
    [],  # 0: plain
    ["nbval-check-output"],  # 1: its output is compared
    ["gpu"],  # 2: %%gpu
    ["multigpu"],  # 3: %%gpu 2
    ["gpu", "raises-exception"],  # 4: a pitfall shown on a GPU
    ["multigpu", "nbval-check-output"],  # 5
    ["solution"],  # 6
]
RUN = {0: [0, 1, 6], 1: [0, 1, 2, 4, 6], 2: [0, 1, 2, 3, 4, 5, 6], 8: [0, 1, 2, 3, 4, 5, 6]}


@pytest.mark.parametrize("gpus", sorted(RUN))
def test_the_cells_that_run_on_0_1_2_and_8_gpus(gpus):
    assert cells_that_run(CELLS, gpus) == RUN[gpus]


@pytest.mark.parametrize(
    "tags, needed",
    [([], 0), (["gpu"], 1), (["multigpu"], 2), (["gpu", "multigpu"], 2), (["raises-exception"], 0), ({"multigpu"}, 2)],
)
def test_gpus_needed_reads_the_tags(tags, needed):
    assert gpus_needed(tags) == needed
    assert runs_with(tags, needed) and (needed == 0 or not runs_with(tags, needed - 1))


@pytest.mark.parametrize("count", [-1, 1.5, True, "2"])
def test_a_gpu_count_that_is_not_one_is_refused(count):
    with pytest.raises(ValueError, match="gpu_count is a whole number of CUDA GPUs, 0 or more; got"):
        runs_with(["gpu"], count)


@pytest.mark.parametrize("path", CHAPTERS, ids=[p.stem for p in CHAPTERS])
def test_each_chapter_cells_tags_ask_for_what_its_gpu_magic_asks_for(path):
    """The rule and the ``%%gpu n`` magic that carries it out in the kernel agree on every chapter cell."""
    cells = [c for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code"]
    for c in cells:
        assert gpus_needed(c.metadata.get("tags", [])) == (gpu_cell_needs(c.source) or 0), c.source[:80]
    tags = [c.metadata.get("tags", []) for c in cells]
    assert cells_that_run(tags, 0) == [i for i, c in enumerate(cells) if gpu_cell_needs(c.source) is None]
    assert cells_that_run(tags, 8) == list(range(len(cells)))


def test_the_repository_conftest_acts_on_this_rule():
    import conftest

    assert conftest.GPU_TAGS is GPU_TAGS and conftest.gpus_needed is gpus_needed and conftest.runs_with is runs_with
