"""A kernel that launched ranks ends cleanly when Jupyter asks it to: within jupyter_client's grace, so that its
``atexit`` runs and multiprocessing's ``pymp-*`` folder (the fork server's socket) leaves the temporary folder."""

from __future__ import annotations

import nbformat
import pytest
from nbclient import NotebookClient

from .conftest import no_process_left  # noqa: F401  (the fixture)

CELLS = [
    "import atexit, os\n"
    "atexit.register(lambda: open(os.environ['EXIT_MARK'], 'w').write('atexit ran'))  # runs first: last registered",
    "import gpulab\n"
    "def train():\n"
    "    import torch\n"
    "    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(256, 256))\n"
    "    for _ in range(3):\n"
    "        model(torch.randn(64, 256)).square().mean().backward()\n"
    "    return 'trained'\n"
    "print(gpulab.launch(train, 2))",
]


@pytest.mark.timeout(300)
def test_after_a_launch_the_kernel_shuts_down_by_itself_and_leaves_no_pymp_folder(
    tmp_path, monkeypatch, no_process_left, short_tmp
):
    scratch, mark = short_tmp, tmp_path / "exit-mark"
    monkeypatch.setenv("TMPDIR", str(scratch))  # the kernel's multiprocessing makes its pymp-* folder here
    monkeypatch.setenv("EXIT_MARK", str(mark))
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in CELLS])
    # graceful shutdown, as JupyterLab and nbval do: jupyter_client sends SIGTERM after half of shutdown_wait_time
    NotebookClient(nb, kernel_name="python3", timeout=240, shutdown_kernel="graceful").execute()
    assert nb.cells[1].outputs[0].text.strip() == "trained"
    assert mark.exists(), "the kernel was ended by a signal before its atexit ran (its shutdown took too long)"
    left = sorted(p.name for p in scratch.iterdir() if p.name.startswith("pymp-"))
    assert left == [], f"multiprocessing's folder of the fork server's socket stayed: {left}"
