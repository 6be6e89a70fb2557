"""The one-page cheat sheet: choosing GPUs, moving data, DP, DDP, torchrun, Lightning flags, errors and their fixes.

Every quoted message and every behaviour the sheet states as a fact carries a ``Check``: a short Python program whose
output must contain the quoted pieces (split at "…"). ``tests/test_handouts.py`` runs them all on the installed
torch and Lightning, so the sheet cannot drift from what the chapters run. A few messages need two devices or a
forked CUDA process to appear; for those the check finds the message in the installed library instead, and says so.
"""

from __future__ import annotations

import html
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Check", "CHECKS", "SECTIONS", "ERRORS", "render", "write_html"]

HERE = Path(__file__).resolve().parent
MARGINS_MM = (9.0, 9.0, 9.0)  # right, top, bottom: the sheet uses more of the page than a chapter


@dataclass(frozen=True)
class Check:
    """``program`` must print text containing every piece of ``shown``. The checks share one interpreter (each
    program in a fresh namespace), except ``fresh`` ones, which need their own (they change import-time state)."""

    shown: str
    program: str
    fresh: bool = False

    @property
    def pieces(self) -> list[str]:
        return [p.strip() for p in self.shown.split("…") if p.strip()]


def _raises(code: str) -> str:  # run code, print the exception as Python shows it
    return (
        f"import torch\nfrom torch import nn\ntry:\n    {code}\n"
        "except Exception as e:\n    print(type(e).__name__ + ': ' + str(e))\n"
    )


def _in_source(module: str) -> str:  # import_module: `import a.b as m` can bind a function of the same name
    return f"import importlib, inspect\nprint(inspect.getsource(importlib.import_module({module!r})))"


_IN_LIBTORCH = (
    "import mmap, pathlib, torch\nlib = pathlib.Path(torch.__file__).parent / 'lib' / 'libtorch_cpu.so'\n"
    "with open(lib, 'rb') as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:\n"
    "    i = m.find(b'Expected all tensors to be on the same device')\n"
    "    print(m[i:i + 60].decode(errors='replace') if i >= 0 else 'not found')"
)
_SAMPLER = (
    "from torch.utils.data import DistributedSampler as D\ns = D(range(10), num_replicas=2, rank=0)\n"
    "print('same order every epoch:', list(s) == list(s))\ns.set_epoch(1)\n"
    "print('after set_epoch(1):', list(s) != list(D(range(10), num_replicas=2, rank=0)))\n"
    "print('11 items on 4 ranks:', [len(D(range(11), num_replicas=4, rank=r)) for r in range(4)])"
)
_TORCHRUN = (
    "import os, subprocess, sys\nrun = os.path.join(os.path.dirname(sys.executable), 'torchrun')\n"
    "print(subprocess.run([run, '--standalone', '--nproc-per-node=2', '--no-python', 'sh', '-c', "
    "'echo RANK LOCAL_RANK WORLD_SIZE = $RANK $LOCAL_RANK $WORLD_SIZE'], capture_output=True, "
    "text=True).stdout)"
)
_SPAWN = (
    "import subprocess, sys\nchild = 'import torch.multiprocessing as mp\\ndef work(rank): pass\\n"
    "mp.spawn(work, nprocs=1)'\nprint(subprocess.run([sys.executable, '-c', child], capture_output=True, "
    "text=True).stderr)"
)
_INTERACTIVE = (
    "import sys\nsys.ps1 = '>>> '  # what a notebook or a REPL has\nimport lightning as L\ntry:\n"
    "    L.Trainer(accelerator='cpu', devices=2, strategy='ddp', logger=False)\nexcept Exception as e:\n"
    "    print(e)"
)
_UNUSED = (
    "import torch, torch.distributed as dist\nfrom torch import nn\n"
    "dist.init_process_group('gloo', store=dist.HashStore(), rank=0, world_size=1)\n"
    "class Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
    "        self.used, self.unused = nn.Linear(2, 1), nn.Linear(2, 1)\n"
    "    def forward(self, x):\n        return self.used(x)\n"
    "d = nn.parallel.DistributedDataParallel(Net())\ntry:\n    for _ in range(2):\n"
    "        d(torch.ones(1, 2)).sum().backward()\nexcept RuntimeError as e:\n    print(e)\n"
    "dist.destroy_process_group()"
)
_PORT = (
    "import socket, torch.distributed as dist\ns = socket.socket(); s.bind(('127.0.0.1', 0)); s.listen()\n"
    "try:\n    dist.TCPStore('127.0.0.1', s.getsockname()[1], is_master=True, wait_for_workers=False)\n"
    "except Exception as e:\n    print(e)"
)

# (what the sheet says, as HTML; the check behind it or None for plain how-to lines)
SECTIONS: list[tuple[str, list[tuple[str, Check | None]]]] = [
    (
        "Choosing GPUs",
        [
            (
                "<b>Two numberings.</b> <code>nvidia-smi</code> numbers physical GPUs (PCI bus); <code>cuda:k</code> "
                "is the k-th GPU <i>this process</i> sees.",
                None,
            ),
            (
                "<code>CUDA_VISIBLE_DEVICES=2,3 python train.py</code> → <code>cuda:0</code> is GPU 2, "
                "<code>cuda:1</code> GPU 3. Add <code>CUDA_DEVICE_ORDER=PCI_BUS_ID</code> to count as nvidia-smi does.",
                None,
            ),
            (
                "CUDA reads the list left to right and stops at the first bad entry: <code>0,2,-1,1</code> → "
                "GPUs 0, 2.",
                Check(
                    "[0, 2]",
                    "import os, torch\nos.environ['CUDA_VISIBLE_DEVICES'] = '0,2,-1,1'\n"
                    "print(torch.cuda._parse_visible_devices())\ndel os.environ['CUDA_VISIBLE_DEVICES']",
                ),
            ),
            (
                "Set it before the first CUDA call: <code>import torch</code> is fine, but <code>is_available()</code> "
                "or a tensor on the GPU reads it (<code>torch.cuda.is_initialized()</code> stays <code>False</code> "
                "after <code>is_available()</code>: ask <code>gpulab.cuda_state()</code>); later, restart the kernel. "
                "Lessons: <code>gpulab.GpuPicker()</code>, <code>gpulab.reserve_gpus(n)</code>, <code>python -m gpulab "
                "env</code>.",
                None,
            ),
        ],
    ),
    (
        "Moving data",
        [
            (
                "<code>t.to(dev)</code> returns a new tensor, <code>t</code> stays: write <code>t = t.to(dev)</code>. "
                "<code>model.to(dev)</code> moves the module itself and returns it.",
                Check(
                    "False … True",
                    "import torch\nt = torch.ones(1); m = torch.nn.Linear(1, 1)\n"
                    "print(t.to('meta') is t, m.to('meta') is m)",
                ),
            ),
            (
                "Shared memory: <code>torch.from_numpy(a)</code>, <code>torch.as_tensor(a)</code>, "
                "<code>t.numpy()</code>. Copies: <code>torch.tensor(a)</code>, <code>t.tolist()</code>.",
                Check(
                    "shared True … copied True",
                    "import numpy as np, torch\na = np.zeros(2); s = torch.from_numpy(a); "
                    "c = torch.tensor(a); a[0] = 1\nprint('shared', bool(s[0] == 1), 'copied', bool(c[0] == 0))",
                ),
            ),
            (
                "Buffers move with <code>.to()</code>: a loss with class weights is a module — move it too.",
                Check("weight", _raises("print(dict(nn.CrossEntropyLoss(weight=torch.ones(2)).named_buffers()))")),
            ),
            (
                "Make a parameter on its device: <code>nn.Parameter(torch.randn(n, device=dev))</code>. "
                "<code>nn.Parameter(t).to(dev)</code> is a plain tensor, not a parameter.",
                Check(
                    "Tensor False",
                    "import torch\np = torch.nn.Parameter(torch.ones(1)).to(torch.float64)\n"
                    "print(type(p).__name__, isinstance(p, torch.nn.Parameter))",
                ),
            ),
            (
                "float32 = 4 bytes a number; float16 / bfloat16 = 2. float16 overflows past 65504.",
                Check("65504.0", "import torch; print(torch.finfo(torch.float16).max)"),
            ),
        ],
    ),
    (
        "DataParallel (one process)",
        [
            (
                "<code>nn.DataParallel(model.to('cuda:0'), device_ids=[0, 1])</code>: parameters on "
                "<code>device_ids[0]</code>, outputs gathered there (GPU 0 fills up first).",
                Check("(device_ids[0])", _in_source("torch.nn.parallel.data_parallel")),
            ),
            (
                "PyTorch recommends DDP instead, even on one machine.",
                Check("It is recommended to use", _in_source("torch.nn.parallel.data_parallel")),
            ),
            (
                "Its <code>state_dict()</code> keys start with <code>module.</code>: save "
                "<code>model.module.state_dict()</code>.",
                Check(
                    "['module.weight', 'module.bias']",
                    "import torch\nprint(list(torch.nn.DataParallel(torch.nn.Linear(1, 1)).state_dict()))",
                ),
            ),
        ],
    ),
    (
        "DDP (one process per GPU)",
        [
            (
                "<code>dist.init_process_group('nccl')</code> (<code>'gloo'</code> on CPU), "
                "<code>torch.cuda.set_device(local_rank)</code>, <code>DDP(model, device_ids=[local_rank])</code>.",
                None,
            ),
            (
                "<code>DistributedSampler</code>: call <code>sampler.set_epoch(epoch)</code> every epoch, or each "
                "epoch repeats the same order. It pads by repeating items: 11 items on 4 ranks → 3 each.",
                Check("same order every epoch: True … after set_epoch(1): True … [3, 3, 3, 3]", _SAMPLER),
            ),
            (
                "Save on rank 0 only, <code>dist.barrier()</code> before others read; load with "
                "<code>map_location</code>.",
                None,
            ),
        ],
    ),
    (
        "torchrun",
        [
            (
                "<code>torchrun --standalone --nproc-per-node=2 train.py</code> starts 2 processes; each reads "
                "<code>RANK</code>, <code>LOCAL_RANK</code>, <code>WORLD_SIZE</code> from its environment.",
                Check("RANK LOCAL_RANK WORLD_SIZE = 0 0 2 … = 1 1 2", _TORCHRUN),
            ),
            (
                "<code>python -m torch.distributed.launch</code> is deprecated: use torchrun and "
                "<code>os.environ['LOCAL_RANK']</code>, not a <code>--local-rank</code> argument.",
                Check("The module torch.distributed.launch is deprecated", _in_source("torch.distributed.launch")),
            ),
        ],
    ),
    (
        "Lightning 2.x flags",
        [
            (
                "<code>Trainer(accelerator='gpu', devices=2)</code>; <code>accelerator='cpu', devices=2</code> runs "
                "real DDP over gloo. <code>gpus=</code> and <code>auto_select_gpus=</code> are gone (2.0): use "
                "<code>devices=</code> and <code>find_usable_cuda_devices(n)</code>.",
                Check(
                    "unexpected keyword argument 'auto_select_gpus'",
                    "import lightning as L\ntry:\n    L.Trainer(auto_select_gpus=True)\nexcept TypeError as e:\n"
                    "    print(e)\nfrom lightning.pytorch.accelerators import find_usable_cuda_devices",
                ),
            ),
            (
                "In a notebook: <code>strategy='ddp_notebook'</code>; <code>'ddp'</code> is refused there. "
                "<code>strategy='dp'</code> no longer exists.",
                Check("is not compatible with an interactive environment", _INTERACTIVE, fresh=True),
            ),
            (
                "Mixed precision: <code>precision='16-mixed'</code> or <code>'bf16-mixed'</code>; "
                "<code>precision=32</code> is full precision.",
                None,
            ),
        ],
    ),
]

# (the message, as the learner sees it, checked; the fix, as HTML)
ERRORS: list[tuple[Check, str]] = [
    (
        Check(
            "can't convert … device type tensor to numpy. Use Tensor.cpu()",
            _raises("torch.ones(1, device='meta').numpy()"),
        ),
        "<code>t.cpu().numpy()</code>",
    ),
    (
        Check("Expected all tensors to be on the same device", _IN_LIBTORCH),
        "move the model, its buffers and the batch to one device (needs two devices to appear; the check finds the "
        "message in the installed PyTorch)",
    ),
    (
        Check("'bool' object is not callable", _raises("torch.ones(1).is_cuda()")),
        "<code>x.is_cuda</code> is a property",
    ),
    (
        Check("unexpected keyword argument 'device_id'", _raises("nn.Linear(1, 1).cuda(device_id=1)")),
        "<code>.cuda(1)</code> or <code>.to('cuda:1')</code>",
    ),
    (
        Check(
            'Missing key(s) in state_dict: "weight", "bias". … Unexpected key(s) in state_dict: "module.weight"',
            _raises("nn.Linear(1, 1).load_state_dict(nn.DataParallel(nn.Linear(1, 1)).state_dict())"),
        ),
        "save <code>model.module.state_dict()</code>, or <code>consume_prefix_in_state_dict_if_present(sd, "
        "'module.')</code>",
    ),
    (
        Check("Can't get attribute 'work' on <module '__main__' (built-in)>", _SPAWN),
        "<code>mp.spawn</code> from a notebook: use a fork launcher (<code>ddp_notebook</code>) or a script",
    ),
    (
        Check("Cannot re-initialize CUDA in forked subprocess", _in_source("torch.cuda")),
        "no CUDA in the notebook before forking: restart the kernel (found in the installed PyTorch)",
    ),
    (
        Check("Expected to have finished reduction in the prior iteration", _UNUSED),
        "use every parameter in the loss, or <code>DDP(..., find_unused_parameters=True)</code>",
    ),
    (
        Check(
            "unexpected keyword argument 'gpus'",
            "import lightning as L\ntry:\n    L.Trainer(gpus=2)\nexcept TypeError as e:\n    print(e)",
        ),
        "<code>Trainer(accelerator='gpu', devices=2)</code>",
    ),
    (Check("EADDRINUSE", _PORT), "the port is taken (a run still alive?): another <code>MASTER_PORT</code>"),
]

CHECKS: list[Check] = [c for _, items in SECTIONS for _, c in items if c is not None] + [c for c, _ in ERRORS]


def render(title: str = "Putting PyTorch on GPUs — cheat sheet", page_css: str = "") -> str:
    """The sheet as one self-contained HTML page."""
    parts = [
        f"<section><h2>{html.escape(name)}</h2><ul>"
        + "".join(f"<li>{item}</li>" for item, _ in items)
        + "</ul></section>"
        for name, items in SECTIONS
    ]
    rows = "".join(f"<tr><td><code>{html.escape(check.shown)}</code></td><td>{fix}</td></tr>" for check, fix in ERRORS)
    parts.append(f"<section class='errors'><h2>Common errors → fix</h2><table>{rows}</table></section>")
    css = (HERE / "cheatsheet.css").read_text(encoding="utf-8")
    return (
        f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
        f"<style>{css}\n{page_css}</style></head><body><h1>{html.escape(title)}</h1>"
        f"<div class='cols'>{''.join(parts)}</div><p class='foot'>Every message and behaviour on this page is "
        "checked against the installed PyTorch and Lightning by the course's tests.</p></body></html>"
    )


def write_html(path: Path, paper) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        render(page_css=f"@page {{ size: {paper.css_size}; margin: {MARGINS_MM[0]}mm; }}"), encoding="utf-8"
    )
    return path


_RUNNER = """
import contextlib, io, json, sys, traceback
outputs = []
for program in json.load(sys.stdin):
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(buf):
        try:
            exec(compile(program, "<check>", "exec"), {"__name__": "__check__"})
        except BaseException:
            traceback.print_exc()
    outputs.append(buf.getvalue())
sys.stdout.write(json.dumps(outputs))
"""


def run_checks(
    python: str, checks: list[Check] | None = None, timeout_s: float = 600
) -> list[tuple[Check, list[str], str]]:
    """Run every check (shared interpreter, plus one per ``fresh`` check); return (check, missing pieces, output)."""
    import json
    import subprocess

    checks = CHECKS if checks is None else checks
    shared = [c for c in checks if not c.fresh]
    done = subprocess.run(
        [python, "-c", _RUNNER],
        input=json.dumps([c.program for c in shared]),
        text=True,
        capture_output=True,
        timeout=timeout_s,
    )
    if done.returncode != 0:
        raise RuntimeError(f"the cheat sheet's checks could not run:\n{done.stderr[-3000:]}")
    outputs = dict(zip(map(id, shared), json.loads(done.stdout)))
    for c in checks:
        if c.fresh:
            r = subprocess.run([python, "-c", c.program], capture_output=True, text=True, timeout=timeout_s)
            outputs[id(c)] = r.stdout + r.stderr
    return [(c, [p for p in c.pieces if p not in outputs[id(c)]], outputs[id(c)]) for c in checks]
