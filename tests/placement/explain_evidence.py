"""Evidence for gpulab.explain: a corpus of snippets, a runner that executes them with PyTorch, and the comparison.

explain() predicts, statement by statement, which physical GPU a line of PyTorch reaches (or what it raises). The
corpus — chapter 02's snippets plus generated ones over ``.cuda(i)``, ``.to``, ``set_device``, device contexts,
``set_default_device``, ``torch.accelerator`` and ``DataParallel(device_ids=…)`` — runs for real in fresh
interpreters (``explain_runner.py``, which imports torch and nothing of gpulab), one per
``CUDA_VISIBLE_DEVICES``/``CUDA_DEVICE_ORDER`` value. Each statement's outcome, the GPUs its result lives on by UUID
or the exception it raised, is compared with the prediction made from NVML's view of the same machine. On GPUs
(``tests/placement/test_explain_on_gpus.py``, ``make test-gpu``) that is the evidence behind chapter 02's
predictions; without a GPU the same pipeline checks the no-GPU predictions for real.

Written here rather than taken from a library: what is tested is gpulab's own model of PyTorch's device rules.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpulab.core.readings import GpuInfo
from gpulab.core.visible import visible_map
from gpulab.placement.device_rules import Explanation
from tests import process_group

RUNNER = Path(__file__).with_name("explain_runner.py")


@dataclass(frozen=True)
class Snippet:
    """Lines of PyTorch, the environment of the process that runs them, and how many GPUs they are written for."""

    code: str
    env: tuple[tuple[str, str], ...] = ()  # CUDA_VISIBLE_DEVICES / CUDA_DEVICE_ORDER; absent means unset
    needs: int = 0  # physical GPUs the snippet is written for (0: it says something even without a GPU)
    source: str = "generated"

    @property
    def environ(self) -> dict[str, str]:
        return dict(self.env)

    def __str__(self) -> str:
        env = " ".join(f"{k}={v!r}" for k, v in self.env) or "(no CUDA variables)"
        return f"[{env}] " + self.code.replace("\n", "; ")


def _snippet(code: str, env: Mapping[str, str], needs: int, source: str = "generated") -> Snippet:
    return Snippet(code, tuple(sorted(env.items())), needs, source)


# chapter 02's own snippets (section 4), with the environments the chapter gives them
CHAPTER_02 = (
    _snippet("model.cuda(1)", {"CUDA_VISIBLE_DEVICES": "2,3,4,5"}, 6, "chapter 02"),
    _snippet(
        "model.cuda(1)\ntorch.cuda.set_device(2)\nloss.cuda()\ntensor.cuda(0)",
        {"CUDA_VISIBLE_DEVICES": "2,3,4,5"},
        6,
        "chapter 02",
    ),
    _snippet("model.cuda('cuda:2,1')", {"CUDA_VISIBLE_DEVICES": "2,3,4,5"}, 0, "chapter 02"),
    _snippet("torch.cuda.set_device('cuda:2,1')", {}, 0, "chapter 02"),
    _snippet("model.cuda(0)\nmodel = nn.DataParallel(model)", {"CUDA_VISIBLE_DEVICES": "2,1,3"}, 4, "chapter 02"),
    _snippet(
        "with torch.cuda.device(1):\n    a = torch.cuda.FloatTensor(2, 3)\n    b = torch.FloatTensor(2, 3).cuda()\n"
        "    d = torch.randn(2, 3).cuda(0)\n    o = torch.ones(2, 3)\nz = torch.randn(2).cuda()",
        {},
        2,
        "chapter 02",
    ),
    _snippet(
        "torch.accelerator.set_device_index(1)\nmodel.cuda()", {"CUDA_VISIBLE_DEVICES": "2,3,4,5"}, 6, "chapter 02"
    ),
    _snippet("torch.cuda.set_device(1)\nt.cuda()\nt.cuda(1)", {"CUDA_VISIBLE_DEVICES": "0,2,3"}, 4, "chapter 02"),
    _snippet("nn.DataParallel(model, device_ids=[2, 3])", {}, 0, "chapter 02"),
)

KINDS = (
    ".cuda(i)",
    ".to",
    "set_device",
    "accelerator",
    "torch.cuda.device",
    "set_default_device",
    "torch.device",
    "DataParallel",
)


def statements(k: int) -> list[tuple[str, str, int]]:
    """(kind, code, visible GPUs it needs) for statements about ``cuda:k``."""
    return [
        (".cuda(i)", f"y = x.cuda({k})", 0),
        (".cuda(i)", f"model.cuda({k})", 0),
        (".to", f"y = x.to('cuda:{k}')", 0),
        (".to", f"y = x.to(torch.device('cuda', {k}))", 0),
        ("set_device", f"torch.cuda.set_device({k})\ny = x.cuda()\nz = x.cuda(0)", 0),
        ("accelerator", f"torch.accelerator.set_device_index({k})\ny = x.cuda()", 0),
        (
            "torch.cuda.device",
            f"with torch.cuda.device({k}):\n    y = x.cuda()\n    o = torch.ones(2)\nz = x.cuda()",
            0,
        ),
        ("set_default_device", f"torch.set_default_device('cuda:{k}')\ny = torch.ones(2)", 0),
        ("torch.device", f"with torch.device('cuda:{k}'):\n    y = torch.zeros(2)\nz = torch.zeros(2)", 0),
        ("DataParallel", f"model = nn.DataParallel(model, device_ids=[{k}])", 0),
        ("DataParallel", f"model = nn.DataParallel(model, device_ids=[{k}, 0])", 2),
    ]


def environments(gpus: Sequence[GpuInfo]) -> list[dict[str, str]]:
    """CUDA_VISIBLE_DEVICES / CUDA_DEVICE_ORDER values worth trying on these GPUs (NVML order)."""
    n, uuids = len(gpus), [g.uuid for g in gpus]
    envs: list[dict[str, str]] = [{}, {"CUDA_VISIBLE_DEVICES": ""}, {"CUDA_VISIBLE_DEVICES": "0,0"}]
    if n:
        envs += [
            {"CUDA_VISIBLE_DEVICES": str(n - 1), "CUDA_DEVICE_ORDER": "PCI_BUS_ID"},
            {"CUDA_VISIBLE_DEVICES": f"{n - 1},-1,0", "CUDA_DEVICE_ORDER": "PCI_BUS_ID"},
            {"CUDA_VISIBLE_DEVICES": uuids[-1][:12], "CUDA_DEVICE_ORDER": "PCI_BUS_ID"},
        ]
    if n >= 2:
        envs += [
            {"CUDA_VISIBLE_DEVICES": ",".join(str(i) for i in reversed(range(n))), "CUDA_DEVICE_ORDER": "PCI_BUS_ID"},
            {"CUDA_VISIBLE_DEVICES": f"{uuids[1][:12]},{uuids[0][:12]}"},
        ]
    if len({g.name for g in gpus}) <= 1:  # one model: FASTEST_FIRST cannot reorder them (explain assumes bus order)
        envs.append({"CUDA_DEVICE_ORDER": "FASTEST_FIRST"})
    return envs


def corpus(gpus: Sequence[GpuInfo]) -> list[Snippet]:
    """Chapter 02's snippets that fit these GPUs, then generated ones: under each environment, statements about the
    first visible GPU, the last, and one past the last (an error), of every kind in ``KINDS``."""
    n = len(gpus)
    out = [s for s in CHAPTER_02 if s.needs <= n]
    for env in environments(gpus):
        visible = len(visible_map(gpus, env).devices)
        for k in sorted({0, max(visible - 1, 0), visible}):
            for _, code, more in statements(k):
                if more == 0 or more <= visible:
                    out.append(_snippet(code, env, max(min(n, 1), more)))
    return list(dict.fromkeys(out))


def run(snippets: Iterable[Snippet], timeout_s: float = 300) -> dict[Snippet, list[dict[str, Any]]]:
    """Run the snippets with PyTorch, one fresh interpreter per environment; each gets its statements' outcomes."""
    groups: dict[tuple[tuple[str, str], ...], list[Snippet]] = {}
    for s in snippets:
        groups.setdefault(s.env, []).append(s)
    results: dict[Snippet, list[dict[str, Any]]] = {}
    for env, group in groups.items():
        environ = {k: v for k, v in os.environ.items() if k not in ("CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER")}
        done = process_group.run(
            [sys.executable, str(RUNNER)],
            input=json.dumps([s.code for s in group]),
            text=True,
            capture_output=True,
            timeout=timeout_s,
            env={**environ, **dict(env)},
        )
        if done.returncode != 0:
            raise RuntimeError(f"the runner failed under {dict(env)}:\n{done.stderr[-3000:]}")
        for s, records in zip(group, json.loads(done.stdout.strip().splitlines()[-1])):
            results[s] = records
    return results


def _stable(message: str) -> str:
    """The part of a predicted message PyTorch's own must start with: up to explain's own added words."""
    cls, _, text = message.partition(": ")
    for cut in (" (", ". "):
        text = text.split(cut, 1)[0]
    return f"{cls}: {text.rstrip('.')}"


def disagreements(predicted: Explanation, records: Sequence[Mapping[str, Any]]) -> list[str]:
    """Where the prediction and what PyTorch did differ, one sentence per statement; empty when they agree."""
    problems = []
    for n, (step, rec) in enumerate(zip(predicted.steps, records), 1):
        said = f"statement {n} `{step.code}`"
        if step.error or "error" in rec:
            if not (step.error and "error" in rec and rec["error"].startswith(_stable(step.error))):
                problems.append(
                    f"{said}: predicted {step.error or 'no error'}, PyTorch raised {rec.get('error', 'nothing')}"
                )
            continue
        got = rec.get("devices", [])
        if step.physical:
            want = [d.mig_uuid or d.uuid for d in step.physical]
            if got != want:
                problems.append(f"{said}: predicted {want}, PyTorch used {got or 'the CPU'}")
        elif got and not rec.get("state"):
            problems.append(f"{said}: predicted the CPU (or no device yet), PyTorch used {got}")
    if len(records) != len(predicted.steps):
        problems.append(f"PyTorch ran {len(records)} statement(s) where {len(predicted.steps)} were predicted")
    return problems


# make test-gpu's evidence counts snippets, not tests: each corpus test records its counts as this JUnit property
# (pytest's record_property), and tools/gpu_run.py::explain_corpus reads and adds them up.
COUNTS_PROPERTY = "explain_corpus"


def corpus_counts(snippets: int, disagreeing: Sequence[str]) -> str:
    """The property's value: ``{"snippets": n, "disagreements": [one line per snippet that disagreed]}`` as JSON."""
    return json.dumps({"snippets": snippets, "disagreements": list(disagreeing)})
