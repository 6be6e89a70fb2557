"""In a real kernel, loaded as a learner would (``%load_ext gpulab``): the line that started CUDA is named by its cell
and line, in ``cuda_state()``."""

from __future__ import annotations

import nbformat
import pytest
from nbclient import NotebookClient


def _run(*sources: str, raises: tuple[int, ...] = ()) -> list[str]:
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell(s, metadata={"tags": ["raises-exception"]} if i in raises else {})
        for i, s in enumerate(sources)
    ]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    NotebookClient(nb, kernel_name="python3", timeout=120).execute()
    return [
        "".join(o.get("evalue", "") for o in c.outputs)
        + "".join(
            o.get("text", "")
            if o.output_type == "stream"
            else o.get("data", {}).get("text/plain", "") + o.get("data", {}).get("text/html", "")
            for o in c.outputs
        )
        for c in nb.cells
    ]


@pytest.mark.timeout(300)
def test_the_cell_and_line_that_tried_torch_cuda_init_are_named():
    out = _run(
        "%load_ext gpulab\nimport gpulab",
        "import torch\n\nx = 1\ntorch.cuda.init()",
        "print(gpulab.cuda_state())",
        raises=(1,),
    )
    assert "cell [2], line 4: `torch.cuda.init()`" in out[2], out


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_a_hang_in_a_kernel_is_reported_by_cell_and_line():
    body = (
        "def evaluate():\n    time.sleep(60)\n\ndef body():\n    t = torch.ones(2)\n    if dist.get_rank() == 0:\n"
        "        dist.all_reduce(t)\n    else:\n        evaluate()"
    )
    out = _run(
        "%load_ext gpulab\nimport gpulab, time, torch\nimport torch.distributed as dist",
        body,
        "gpulab.launch(body, world_size=2, timeout_s=5)",
        raises=(2,),
    )
    assert "rank 0 was waiting in all_reduce at cell [2], line 7 (`dist.all_reduce(t)`)" in out[2], out[2]
    assert "rank 1 is in `evaluate()` at cell [2], line 2 (`time.sleep(60)`) and never called all_reduce" in out[2]
