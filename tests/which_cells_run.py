"""Which chapter cells and which tests run on a machine with a given number of CUDA GPUs (pure: tags decide).

A notebook cell tagged ``gpu`` needs one CUDA GPU and one tagged ``multigpu`` needs two; its ``%%gpu [n]`` magic asks
for the same count and prints why it skips elsewhere (``tests/test_notebook_hygiene.py`` holds tag and magic to each
other). A test marked ``gpu`` / ``multigpu`` needs the same. Every other cell and test runs on any machine, 0 GPUs
included: so it must not name a GPU that a one-GPU machine lacks (``tests/test_untagged_cells.py``).
``conftest.py`` acts on this rule (markers, skips, ``make test-gpu``'s selection); tests give it 0, 1, 2 and 8 GPUs.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

GPU_TAGS = {"gpu": 1, "multigpu": 2}  # a cell's tag (or a test's marker) -> the CUDA GPUs it needs


def gpus_needed(tags: Iterable[str]) -> int:
    """The CUDA GPUs a cell or test with these tags (or marker names) needs: 0, 1 or 2."""
    return max((GPU_TAGS[t] for t in tags if t in GPU_TAGS), default=0)


def runs_with(tags: Iterable[str], gpu_count: int) -> bool:
    """Whether a cell or test with these tags runs (rather than skips, saying why) where ``gpu_count`` GPUs are."""
    if isinstance(gpu_count, bool) or not isinstance(gpu_count, int) or gpu_count < 0:
        raise ValueError(f"gpu_count is a whole number of CUDA GPUs, 0 or more; got {gpu_count!r}.")
    return gpu_count >= gpus_needed(tags)


def cells_that_run(cell_tags: Sequence[Iterable[str]], gpu_count: int) -> list[int]:
    """The positions of the cells (each given by its tags) that run where ``gpu_count`` GPUs are."""
    return [i for i, tags in enumerate(cell_tags) if runs_with(tags, gpu_count)]
