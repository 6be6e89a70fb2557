"""Every chapter runs top to bottom on a described workshop server, as an instructor preparing a class runs it.

``GPULAB_SIMULATE_GPUS=workshop-8`` makes NVML's answers come from eight described A100s (some busy, some free) while
PyTorch still sees no GPU. Each chapter is executed by nbclient in a fresh kernel — the engine nbval and nbconvert use —
and must run without an error outside the cells tagged ``raises-exception`` (those must raise), give the committed
output in every cell tagged ``nbval-check-output`` (compared as nbval compares them), and leave nothing in its
temporary folder once the kernel has ended. ``GPULAB_TEST_PRESETS=workshop-8,kaggle-2xT4,colab-T4,two-gpus-mig``
runs the chapters under more described machines (the default, in CI, is workshop-8 alone: one run per chapter).
"""

from __future__ import annotations

import os
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from .checked_outputs import checked_differences

ROOT = Path(__file__).resolve().parents[1]
CHAPTERS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")) + [ROOT / "notebooks" / "workshop_guide.ipynb"]
PRESETS = [p.strip() for p in os.environ.get("GPULAB_TEST_PRESETS", "workshop-8").split(",") if p.strip()]
# torch's own compile cache, made in $TMPDIR by the first optimiser step of any program: not the chapter's doing
NOT_OURS = ("torchinductor_",)


def _lightnings_empty_folder(path: Path) -> bool:
    """Lightning's fork and spawn launchers save rank 0's weights as ``tempfile.mkdtemp()/.temp.ckpt`` for the parent
    and remove the file but not its folder (lightning/pytorch/strategies/launchers/multiprocessing.py): one empty
    ``tmp*`` folder per such fit, made by Lightning in the rank, not by the chapter."""
    return path.is_dir() and path.name.startswith("tmp") and not any(path.iterdir())


@pytest.mark.timeout(900)
@pytest.mark.parametrize("preset", PRESETS)
@pytest.mark.parametrize("path", CHAPTERS, ids=[p.stem for p in CHAPTERS])
def test_the_chapter_runs_on_a_described_machine_and_leaves_nothing_behind(
    path, preset, tmp_path, monkeypatch, short_tmp
):
    scratch = short_tmp
    monkeypatch.setenv("GPULAB_SIMULATE_GPUS", preset)
    monkeypatch.setenv("GPULAB_FAST", "1")
    monkeypatch.setenv("TMPDIR", str(scratch))  # the kernel's tempfile.* lands here, so leftovers can be seen
    monkeypatch.setenv("GPULAB_RESERVATIONS_DIR", str(tmp_path / "reservations"))  # not the machine's shared one
    committed = nbformat.read(path, as_version=4)
    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs = []
    # Cells tagged raises-exception may raise (nbclient's rule, as nbval's); any other error fails here.
    client = NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}})
    client.km = client.create_kernel_manager()
    # The chapter's own clean-up (its TemporaryDirectory, the fork server's folder) runs as the kernel exits, which
    # with torch loaded can take longer than jupyter_client's 5 s grace on a loaded machine; killed before it ends,
    # the kernel would leave them behind through no fault of the chapter's.
    client.km.shutdown_wait_time = 60
    client.execute()
    for cell in nb.cells:
        if "raises-exception" in cell.metadata.get("tags", []):
            assert any(o.output_type == "error" for o in cell.outputs), (
                f"tagged raises-exception but did not raise under {preset}: {cell.source[:80]}"
            )
    changed = checked_differences(committed, nb)
    assert changed == [], f"{path.name} under {preset}: checked outputs differ from the committed ones:\n" + "\n".join(
        changed
    )
    left = sorted(
        str(p.relative_to(scratch))
        for p in scratch.iterdir()
        if not p.name.startswith(NOT_OURS) and not _lightnings_empty_folder(p)
    )
    assert left == [], f"{path.name} left these in its temporary folder under {preset}: {left}"
