"""What a learner's DDP script did in one rank, recorded while it runs under torchrun (chapter 04's last exercise).

    python -m torch.distributed.run --standalone --nproc-per-node=2 -m gpulab.exercises.ddp_probe SCRIPT [ARGS...]

Each rank runs SCRIPT as ``__main__`` with ARGS, as ``python SCRIPT ARGS`` would, and watches it without changing
what it computes:

- the training set: a DataLoader over a dataset of ``GPULAB_PROBE_TRAIN_SIZE`` items is handed a wrapper that
  notes every batch of indices it fetches, pass by pass (each pass over the loader is an epoch);
- ``torch.save``: where each call wrote;
- the optimiser: the parameters it trains, and its class and settings;
- ``DistributedDataParallel``: the model it wraps, and its weights just after wrapping (rank 0's, broadcast);
- whether the default process group is still there when the script returns.

When the script ends (or raises), the rank writes what it saw to ``GPULAB_PROBE_DIR/rank<RANK>.pt``. Rank 0 then
waits for the other ranks' files and replays the run as one process: from the same starting weights, each step on
the batches of every rank together (the global batch), with the script's own optimiser at ``GPULAB_PROBE_LR``. It
writes the replay's weights to ``reference.pt``. The checker (``ch04_script``) compares the files.
"""

from __future__ import annotations

import copy
import os
import runpy
import sys
import time
from pathlib import Path

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, Dataset, default_collate

__all__ = ["main"]

SEEN: dict = {"passes": [], "saves": [], "optimizer": None, "params": [], "start": None, "model": None}
_save = torch.save


class Watched(Dataset):
    """The training set, as the DataLoader sees it: the same items, with every batch of indices noted."""

    def __init__(self, dataset: Dataset) -> None:
        self.dataset = dataset

    def __len__(self):
        return len(self.dataset)

    def __getitem__(self, index):
        return self.dataset[index]

    def __getitems__(self, indices):
        SEEN["passes"][-1].append([int(i) for i in indices])
        return [self.dataset[i] for i in indices]


def _watch(train_size: int) -> None:
    loader_init, loader_iter = DataLoader.__init__, DataLoader.__iter__
    optimizer_init = torch.optim.Optimizer.__init__
    ddp_init = DistributedDataParallel.__init__

    def init(self, dataset, *args, **kwargs):
        if not isinstance(dataset, Watched) and hasattr(dataset, "__len__") and len(dataset) == train_size:
            dataset = Watched(dataset)
        loader_init(self, dataset, *args, **kwargs)

    def iterate(self):
        if isinstance(self.dataset, Watched):
            SEEN["passes"].append([])
        return loader_iter(self)

    def optimizer(self, params, defaults):
        optimizer_init(self, params, defaults)
        SEEN["optimizer"] = (type(self), dict(defaults))
        SEEN["params"] = [p for group in self.param_groups for p in group["params"]]

    def ddp(self, module, *args, **kwargs):
        ddp_init(self, module, *args, **kwargs)
        SEEN["model"] = module
        SEEN["start"] = copy.deepcopy(module.state_dict())

    def save(obj, f, *args, **kwargs):
        SEEN["saves"].append(os.path.abspath(os.fspath(f)) if isinstance(f, (str, os.PathLike)) else repr(f))
        return _save(obj, f, *args, **kwargs)

    DataLoader.__init__, DataLoader.__iter__ = init, iterate
    torch.optim.Optimizer.__init__, DistributedDataParallel.__init__ = optimizer, ddp
    torch.save = save


def _replay(ranks: list[dict], lr: float) -> list[torch.Tensor] | None:
    """One process on every step's global batch, from DDP's starting weights: the weights it ends with."""
    model, start, opt = SEEN["model"], SEEN["start"], SEEN["optimizer"]
    dataset = SEEN.get("dataset")
    if model is None or start is None or opt is None or dataset is None:
        return None
    one = copy.deepcopy(model).cpu()
    one.load_state_dict(start)
    cls, defaults = opt
    try:
        optimizer = cls(one.parameters(), **{**defaults, "lr": lr})
    except TypeError:  # an optimiser whose settings are not its arguments: no replay, the checker says so
        return None
    for epoch in range(len(ranks[0]["passes"])):
        for batches in zip(*(r["passes"][epoch] for r in ranks)):
            x, y = default_collate([dataset[i] for b in batches for i in b])
            optimizer.zero_grad()
            F.cross_entropy(one(x), y).backward()
            optimizer.step()
    return [p.detach().clone() for p in one.parameters()]


def _report(out: Path, rank: int, world: int, lr: float, finished: bool) -> None:
    mine = {
        "rank": rank,
        "passes": SEEN["passes"],
        "saves": SEEN["saves"],
        "ddp": SEEN["model"] is not None,
        "final": [p.detach().cpu().clone() for p in SEEN["params"]],
        "lr": SEEN["optimizer"][1].get("lr") if SEEN["optimizer"] else None,
        "group_left": dist.is_initialized(),
    }
    _save(mine, out / f".rank{rank}.pt")
    os.replace(out / f".rank{rank}.pt", out / f"rank{rank}.pt")  # complete when it appears
    if rank != 0 or not finished:  # a rank that failed: torchrun stops the others, nothing to replay
        return
    deadline = time.monotonic() + 60
    files = [out / f"rank{r}.pt" for r in range(world)]
    while not all(f.exists() for f in files) and time.monotonic() < deadline:
        time.sleep(0.05)
    if all(f.exists() for f in files):
        ranks = [torch.load(f) for f in files]
        if len({len(r["passes"]) for r in ranks}) == 1:
            _save(_replay(ranks, lr), out / "reference.pt")


def main() -> None:
    """Run the learner's script (``sys.argv[1]``, its arguments after it) as ``__main__`` in this rank, watched."""
    script, *args = sys.argv[1:]
    out = Path(os.environ["GPULAB_PROBE_DIR"])
    lr = float(os.environ["GPULAB_PROBE_LR"])
    _watch(int(os.environ["GPULAB_PROBE_TRAIN_SIZE"]))
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    original = Watched.__getitems__

    def remember(self, indices):  # the replay reads the same items
        SEEN["dataset"] = self.dataset
        return original(self, indices)

    Watched.__getitems__ = remember
    sys.argv = [script, *args]
    sys.path.insert(0, str(Path(script).resolve().parent))  # as `python SCRIPT` puts the script's folder first
    finished = False
    try:
        runpy.run_path(script, run_name="__main__")
        finished = True
    finally:
        _report(out, rank, world, lr, finished)


if __name__ == "__main__":
    main()
