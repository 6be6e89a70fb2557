"""No chapter cell names more GPUs than the smallest machine it runs on (``tests/device_indices.py`` says how it reads).

The first GPU run (one H100, 2026-11-26) failed chapter 03's untagged ``DataParallel(..., device_ids=[0, 1])`` cell
with ``AssertionError: Invalid device id``; every CPU run had passed it, because without CUDA DataParallel ignores
``device_ids``. This check reads the code instead of running it, so it needs no GPU to catch such a cell.
"""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest

from tests.device_indices import chapter_problems, device_findings, python_code

CHAPTERS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("[0-9][0-9]_*.ipynb"))


@pytest.mark.parametrize("path", CHAPTERS, ids=[p.stem for p in CHAPTERS])
def test_no_cell_names_a_gpu_that_a_machine_it_runs_on_lacks(path):
    cells = [
        (c.source, c.metadata.get("tags", [])) for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code"
    ]
    problems = chapter_problems(f"notebooks/{path.name}", cells)
    assert not problems, "\n\n".join(problems)


# The cell of chapter 03 that failed on one H100, as it was committed then.
CHAPTER_03_CELL_8 = "\n".join(
    [
        "dp = torch.nn.DataParallel(cnn((8, 16), 64).eval(), device_ids=[0, 1])  # eval: dropout off, to compare",
        'print("device_ids:", dp.device_ids, "| output_device set:", hasattr(dp, "output_device"))',
        "x = data.train.tensors[0][:6]",
        'print("output equals the bare model\'s:", torch.equal(dp(x), dp.module(x)))',
        'print("state_dict keys:", list(dp.state_dict())[:2], "...")',
    ]
)


def test_it_catches_the_chapter_03_cell_that_failed_on_one_gpu():
    problems = chapter_problems(
        "notebooks/03_dataparallel.ipynb", [("%load_ext gpulab", []), ("x = 1", ["gpu"]), (CHAPTER_03_CELL_8, [])]
    )
    assert len(problems) == 1
    assert problems[0].startswith(
        "notebooks/03_dataparallel.ipynb, code cell 2 (as nbval numbers them; it starts "
        "`dp = torch.nn.DataParallel(cnn((8, 16), 64).eval(), device_i`), line 1: "
    )
    assert "names device_ids of 2 GPU(s) [0, 1], which needs 2 GPUs, in a cell that runs on any machine" in problems[0]
    assert "`if gpulab.cuda_gpu_count() >= 2:`" in problems[0] and "%%gpu 2" in problems[0]


FAILS = [  # (cell, tags, line, what): one finding each
    ("model.cuda(1)", [], 1, "device index 1"),
    ("import torch\nx = torch.ones(2)\ny = x.to(1)", [], 3, "device index 1"),
    ("out = cnn((8, 16), 64).eval().cuda(1)", [], 1, "device index 1"),  # a call chain
    ("y = data.train.tensors[0][:6].to('cuda:1')", [], 1, "device index 1"),
    ("y = x.to('cuda:1')", [], 1, "device index 1"),
    ("d = torch.device('cuda', 1)", [], 1, "device index 1"),
    ("d = torch.device('cuda:2')", [], 1, "device index 2"),
    ("torch.cuda.set_device(1)", [], 1, "device index 1"),
    ("z = torch.zeros(3, device=1)", [], 1, "device index 1"),
    ("devices = ['cuda:0', 'cuda:1']", [], 1, "device index 1"),
    ("state = torch.load(path, map_location='cuda:1')", [], 1, "device index 1"),
    ("print(torch.cuda.memory_allocated(1))", [], 1, "device index 1"),
    ("with torch.cuda.device(1):\n    pass", [], 1, "device index 1"),
    ("def f(device='cuda:3'):\n    return device", [], 1, "device index 3"),
    ("dp = torch.nn.DataParallel(model, device_ids=[0, 1])", [], 1, "device_ids of 2 GPU(s) [0, 1]"),
    ("dp = torch.nn.DataParallel(model, [0, 1])", [], 1, "device_ids of 2 GPU(s) [0, 1]"),
    (
        "device_ids = list(range(2))\ndp = torch.nn.DataParallel(model, device_ids)",
        [],
        1,
        "device_ids of 2 GPU(s) [0, 1]",
    ),
    ("dp = torch.nn.DataParallel(model, device_ids=[1])", [], 1, "device_ids of 1 GPU(s) [1]"),
    ("trainer = L.Trainer(accelerator='gpu', devices=[0, 1])", [], 1, "devices of 2 GPU(s) [0, 1]"),
    ("step = data_parallel_step(m, x, y, devices=['cuda:0', 'cuda:1'])", [], 1, "devices of 2 GPU(s) [0, 1]"),
    ("step = data_parallel_step(m, x, y, devices=['cpu', 'cuda:1'])", [], 1, "device index 1"),
    ("%load_ext gpulab\n!nvidia-smi\nmodel.cuda(1)", [], 3, "device index 1"),
    ("%%gpu\nmodel.cuda(1)", ["gpu"], 2, "device index 1"),  # one GPU is enough to run it, not for cuda:1
    ("%%gpu 2\nmodel.cuda(2)", ["multigpu"], 2, "device index 2"),
    ("if gpulab.cuda_gpu_count() >= 1:\n    model.cuda(1)", [], 2, "device index 1"),  # a guard that lets 1 GPU in
    ("gpus = gpulab.cuda_gpu_count()\nif gpus > 0:\n    model.cuda(1)", [], 3, "device index 1"),
    ("if gpulab.cuda_gpu_count() >= 2:\n    pass\nelse:\n    model.cuda(1)", [], 4, "device index 1"),
]


@pytest.mark.parametrize("cell, tags, line, what", FAILS, ids=[f"{c[0][:40]!r}" for c in FAILS])
def test_a_cell_that_needs_more_gpus_than_it_may_have_fails(cell, tags, line, what):
    found = device_findings(cell, tags)
    assert [(f.line, f.what) for f in found] == [(line, what)], found


PASSES = [  # (cell, tags)
    ('print(explain("model.cuda(1)", workshop, {}))', []),  # a string of code, explained, not run
    ('explain("nn.DataParallel(model, device_ids=[2, 3])", env={})', []),
    ('print("cuda:1 is physical GPU", m.physical(1).physical_index)', []),  # prose
    ("print('cuda:1')", []),
    ("x = model  # model.cuda(1) would fail on one GPU", []),  # a comment
    ('answer = {"cuda:0": ..., "cuda:1": ...}  # physical GPU numbers', []),  # dict keys: an exercise's answer
    ("if gpulab.cuda_gpu_count() >= 2:\n    model.cuda(1)", []),  # guarded by the count
    ("if gpulab.cuda_gpu_count() == 0:   # chapter 02\n    dp = torch.nn.DataParallel(m, device_ids=[2, 3])", []),
    ("gpus = gpulab.cuda_gpu_count()\nids = list(range(gpus))\nif len(ids) >= 2:\n    model.cuda(1)", []),
    ("x = model.cuda(1) if torch.cuda.device_count() > 1 else model", []),
    ("if reason := too_few_gpus(2):\n    print(reason)\nelse:\n    model.cuda(1)", []),
    ("if too_few_gpus(2) is None:\n    dp = torch.nn.DataParallel(m, device_ids=[0, 1])", []),
    ("if gpulab.cuda_gpu_count() >= helper():\n    model.cuda(1)", []),  # a test it cannot evaluate: trusted
    ("model.cuda(1)", ["raises-exception"]),  # meant to fail
    ("dp = torch.nn.DataParallel(m, device_ids=[0, 1])", ["raises-exception", "nbval-check-output"]),
    ("%%gpu 2\ndp = torch.nn.DataParallel(m, device_ids=[0, 1])\nwith torch.cuda.device(1):\n    pass", ["multigpu"]),
    ("model.cuda(0)\ndp = torch.nn.DataParallel(m, device_ids=[0])\nx = torch.zeros(1, device='cuda:0')", []),
    ("dp = torch.nn.DataParallel(m, device_ids=plan.device_ids)\nx.to(plan.model_device)", []),  # decided
    ("step = data_parallel_step(m, x, y, devices=['cpu'] * 4)", []),
    ("torch.cuda.manual_seed(1)\nt = torch.cuda.FloatTensor(2, 3)", []),  # a seed and a shape, not devices
    ("%%bash\npython train.py --device cuda:1", []),  # not Python run in the kernel
    ("%time y = f(1)\nz = !ls\nprint(z)", []),
]


@pytest.mark.parametrize("cell, tags", PASSES, ids=[f"{c[0][:40]!r}" for c in PASSES])
def test_a_cell_that_runs_anywhere_it_may_passes(cell, tags):
    assert device_findings(cell, tags) == []


def test_a_name_bound_to_the_count_in_one_cell_guards_a_branch_in_another():
    cells = [
        ("gpus = gpulab.cuda_gpu_count()", []),
        ("if gpus >= 2:\n    model.cuda(1)", []),
        ("if gpus >= 1:\n    model.cuda(1)", []),
    ]
    problems = chapter_problems("notebooks/99_made_up.ipynb", cells)
    assert len(problems) == 1 and problems[0].startswith("notebooks/99_made_up.ipynb, code cell 2 ")


def test_the_code_keeps_the_cells_line_numbers():
    assert python_code("%load_ext gpulab\n\nimport torch\n!ls\nx = 1").splitlines() == [
        "get_ipython().run_line_magic('load_ext', 'gpulab')",
        "",
        "import torch",
        "get_ipython().system('ls')",
        "x = 1",
    ]
    assert python_code("\n%%gpu 2\nx = 1").splitlines() == ["pass", "pass", "x = 1"]
    assert python_code("%%writefile script.py\nimport torch") == ""
