"""What a learner's resumable DDP script did in one rank and one attempt, recorded as it runs (chapter 08's exercise).

    python -m torch.distributed.run --standalone --nproc-per-node=2 --max-restarts=1 \\
        -m gpulab.exercises.resume_probe SCRIPT [ARGS...]

Each rank runs SCRIPT as ``__main__`` with ARGS, as ``python SCRIPT ARGS`` would, and notes without changing what it
computes:

- ``torch.save``: the file each call wrote, and whether what it saved holds an optimizer's state (a dict with
  ``state`` and ``param_groups``) and a whole number (the epochs run);
- ``torch.load``: the file each call read;
- ``Optimizer.load_state_dict``: that it was called;
- ``DistributedSampler.set_epoch``: each epoch the rank began.

A rank may be killed at any moment, so every note is written at once, to ``GPULAB_PROBE_DIR/attempt<A>-rank<R>.json``
(``A`` is torchrun's ``TORCHELASTIC_RESTART_COUNT``), replaced whole each time. The checker (``ch08_resume``) reads
the files of every attempt.
"""

from __future__ import annotations

import json
import os
import runpy
import sys
from pathlib import Path
from typing import Any

import torch
from torch.utils.data import DistributedSampler

from ..core.arguments import is_whole_number

__all__ = ["main", "record_name"]

SEEN: dict[str, Any] = {"saves": [], "loads": [], "optimizer_loads": 0, "epochs": []}
_save, _load = torch.save, torch.load


def record_name(attempt: int | str, rank: int | str) -> str:
    """The file one rank's notes go to in one attempt."""
    return f"attempt{attempt}-rank{rank}.json"


def _write(out: Path, name: str) -> None:
    (out / f".{name}").write_text(json.dumps(SEEN))
    os.replace(out / f".{name}", out / name)  # whole whenever it is read, even if the rank is killed


def _name(f: Any) -> str:
    return os.path.basename(os.fspath(f)) if isinstance(f, (str, os.PathLike)) else repr(f)


def _holds(obj: Any) -> dict[str, bool]:
    values = list(obj.values()) if isinstance(obj, dict) else []
    optimizer = [v for v in values if isinstance(v, dict) and {"state", "param_groups"} <= set(v)]
    return {
        "optimizer": bool(optimizer),
        "momentum": any(bool(v["state"]) for v in optimizer),
        "epoch": any(is_whole_number(v) for v in values),
    }


def _watch(out: Path, name: str) -> None:
    load_state_dict = torch.optim.Optimizer.load_state_dict
    set_epoch = DistributedSampler.set_epoch

    def save(obj, f, *args, **kwargs):
        SEEN["saves"].append({"file": _name(f), **_holds(obj)})
        _write(out, name)
        return _save(obj, f, *args, **kwargs)

    def load(f, *args, **kwargs):
        SEEN["loads"].append(_name(f))
        _write(out, name)
        return _load(f, *args, **kwargs)

    def optimizer_loads(self, state_dict):
        SEEN["optimizer_loads"] += 1
        _write(out, name)
        return load_state_dict(self, state_dict)

    def epoch(self, value):
        SEEN["epochs"].append(int(value))
        _write(out, name)
        return set_epoch(self, value)

    torch.save, torch.load = save, load
    torch.optim.Optimizer.load_state_dict = optimizer_loads
    DistributedSampler.set_epoch = epoch


def main() -> None:
    """Run the learner's script (``sys.argv[1]``, its arguments after it) as ``__main__`` in this rank, watched."""
    script, *args = sys.argv[1:]
    out = Path(os.environ["GPULAB_PROBE_DIR"])
    name = record_name(os.environ.get("TORCHELASTIC_RESTART_COUNT", "0"), os.environ["RANK"])
    _write(out, name)  # the rank started
    _watch(out, name)
    sys.argv = [script, *args]
    sys.path.insert(0, str(Path(script).resolve().parent))  # as `python SCRIPT` puts the script's folder first
    runpy.run_path(script, run_name="__main__")


if __name__ == "__main__":
    main()
