"""pytest set-up shared by the unit tests and the nbval run of the notebooks.

- Tests marked ``gpu`` / ``multigpu`` are skipped, with the reason, where the GPUs are missing.
- Notebook cells tagged ``gpu`` / ``multigpu`` get the same markers (their ``%%gpu`` magic prints why they skip).
  Which of them run for a GPU count is decided by ``tests/which_cells_run.py``; this file acts on it.
- ``GPULAB_ONLY_GPU=1`` (``make test-gpu``) keeps only the GPU tests and the notebooks that have GPU cells.
- nbval waits 5 s for a cell's output by default; chapters train for longer than that without printing, so the wait
  is raised here, and the sanitizer file for timings, addresses, PIDs, ports and paths is applied by default.
- Cells tagged ``raises-exception`` must raise the exception class and message start committed with them
  (``tests/raising_cells.py``; nbval alone lets such a cell stop raising).
- Property tests (hypothesis) are repeatable by default; ``GPULAB_HYPOTHESIS=explore`` searches afresh.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.which_cells_run import GPU_TAGS, gpus_needed, runs_with

pytest_plugins = ["tests.raising_cells", "tests.chapter_runs", "tests.cell_recorder"]

HERE = Path(__file__).parent
OUTPUT_WAIT_S = 300


def _hypothesis_profile() -> None:
    """Property tests draw the same examples on every run (a red CI run is reproducible, and a green one stays green
    unless the code changes); ``GPULAB_HYPOTHESIS=explore`` draws new random ones each run."""
    try:
        from hypothesis import settings
    except ImportError:
        return
    settings.register_profile("repeatable", derandomize=True, deadline=None, print_blob=True)
    settings.register_profile("explore", deadline=None, print_blob=True)
    settings.load_profile("explore" if os.environ.get("GPULAB_HYPOTHESIS") == "explore" else "repeatable")


def pytest_configure(config: pytest.Config) -> None:
    os.environ.setdefault("GPULAB_FAST", "1")
    _hypothesis_profile()
    if hasattr(config.option, "nbval_sanitize_with") and config.option.nbval_sanitize_with is None:
        config.option.nbval_sanitize_with = str(HERE / "notebooks" / "nbval_sanitize.cfg")


def _cell_tags(item: pytest.Item) -> set[str]:
    cell = getattr(item, "cell", None)
    return set(cell.metadata.get("tags", [])) if cell is not None else set()


# Under pytest-xdist (make test: -n 2 --dist loadfile) a file's tests run on one worker, in order: nbval's cells share
# their chapter's kernel, and a module's fixtures (a JupyterLab, a built handout) are made once. The files in SPREAD
# hold long tests that share nothing, so each of their tests is dealt out on its own. xdist deals out the files with
# the most tests first, and files of equal count in the order collected; these one-test groups are put before the
# other one-test files, so that none of them starts as the other worker runs out of work.
SPREAD = (
    "tests/test_install_lines.py::",
    "tests/exercises/test_ddp_script.py::",
    "tests/exercises/test_resume_script.py::",
)


def _spread_first(config: pytest.Config, items: list[pytest.Item]) -> None:
    if hasattr(config, "workerinput"):  # an xdist worker: the controller deals out work in the order collected here
        items.sort(key=lambda item: not item.nodeid.startswith(SPREAD))  # stable: the rest keep their order


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log):
    """xdist's own file-by-file scheduling, with the tests of the ``SPREAD`` files dealt out one by one."""
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class FileOrTestScheduling(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return nodeid if nodeid.startswith(SPREAD) else super()._split_scope(nodeid)

    return FileOrTestScheduling(config, log)


# make test is what a maintainer runs before a commit: the unit and meta tests, and every chapter and the workshop
# guide under nbval once. What takes minutes of its own beyond that is marked ``extended`` here, by file or by test
# (``path::test_name``, its parametrised cases included), and run by make test-extended (CI runs both): the test
# drives a browser (every chapter again, on a described server), builds the site or a handout, asks a package index,
# runs whole scripts or Lightning fits in fresh interpreters, or drills the launcher's processes (signals,
# fork servers, hangs). The chapters run the same launcher, Lightning and checkers in make test, once each.
EXTENDED = {
    "tests/test_site.py": "the website built and browsed in Chromium",
    "tests/test_browser.py": "JupyterLab driven in Chromium",
    "tests/test_handouts.py": "handouts run, exported and printed through Chromium",
    "tests/test_install_lines.py": "pip's dry runs of every install line, against the package index",
    "tests/test_platform_install.py": "pip's dry run of installing gpulab beside a platform's torch",
    "tests/exercises/test_ddp_script.py": "learners' DDP scripts under torchrun, hangs and wrong answers included",
    "tests/exercises/test_resume_script.py": "learners' resumable scripts under torchrun, a rank killed in each",
    "tests/ranks/test_scripts.py": "the chapters' scripts under torchrun, as one and two nodes",
    "tests/lightning/test_in_a_slurm_job.py": "Lightning fits in fresh interpreters, as SLURM's tasks would run them",
    "tests/lightning/test_spawn_script.py": "Lightning's ddp_spawn as a script, without and with its main guard",
    "tests/machine/test_srun_notice.py::test_real_lightning_warns_twice_without_it_and_not_at_all_with_it": (
        "real Lightning fits in fresh interpreters with an srun on PATH"
    ),
    "tests/exercises/test_solutions.py::test_the_solution_passes_and_the_skeleton_does_not": (
        "every exercise's solution and skeleton through its checker, scripts under torchrun included"
    ),
    "tests/ranks/test_isolation.py": "the launcher's process drills: fork servers, signals, hangs, spawn on macOS",
    "tests/ranks/test_launcher.py::test_twenty_reruns_in_a_row_each_on_a_port_the_system_picked_leave_no_process": (
        "twenty launches in a row"
    ),
    "tests/test_site_pages.py::test_a_broken_link_in_a_page_fails_the_build_and_says_what_to_do": "a Sphinx build",
    "tests/test_site_pages.py::test_a_missing_notebook_or_engine_is_reported": "a Sphinx build",
    "tests/evidence/test_bundle.py::test_make_handouts_gpu_edition_prints_the_recordings_in_place_of_the_skips": (
        "a chapter run and printed as the handouts' GPU edition"
    ),
    "tests/test_chapter_runs.py::test_under_xdist_the_workers_counts_are_added_up": "a pytest run under xdist",
}


def pytest_itemcollected(item: pytest.Item) -> None:
    """Marks the ``EXTENDED`` files' tests, before ``-m`` selects (at collection's end)."""
    path, _, name = item.nodeid.partition("::")
    test = f"{path}::{name.split('[', 1)[0]}"
    if path in EXTENDED or test in EXTENDED or item.get_closest_marker("browser"):
        item.add_marker(pytest.mark.extended)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    from gpulab.machine.cuda import cuda_gpu_count, too_few_gpus

    gpu_count = cuda_gpu_count()
    gpu_notebooks = set()
    for item in items:
        if hasattr(item, "cell"):  # an nbval cell
            item.output_timeout = OUTPUT_WAIT_S
            for tag in _cell_tags(item) & GPU_TAGS.keys():
                item.add_marker(getattr(pytest.mark, tag))
            if gpus_needed(_cell_tags(item)):
                gpu_notebooks.add(item.parent)
            continue
        markers = [name for name in GPU_TAGS if item.get_closest_marker(name)]
        if not runs_with(markers, gpu_count):
            item.add_marker(pytest.mark.skip(reason=f"this test {too_few_gpus(gpus_needed(markers))}"))
    if os.environ.get("GPULAB_ONLY_GPU") == "1":
        keep, drop = [], []
        for item in items:
            wanted = (
                (item.parent in gpu_notebooks)
                if hasattr(item, "cell")
                else gpus_needed(name for name in GPU_TAGS if item.get_closest_marker(name)) > 0
            )
            (keep if wanted else drop).append(item)
        config.hook.pytest_deselected(items=drop)
        items[:] = keep
    _spread_first(config, items)
