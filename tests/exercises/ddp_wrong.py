"""Wrong answers to chapter 04's last exercise, one per piece the checker checks: each is ddp_solution.py with one
edit, and the words the checker's message must contain for it."""

from __future__ import annotations

from pathlib import Path

SOLUTION = Path(__file__).with_name("ddp_solution.py")

# name -> (edits: (text of the solution, what replaces it), words the checker's message names)
WRONG: dict[str, tuple[list[tuple[str, str]], list[str]]] = {
    "no_sampler": (  # every rank reads the whole training set
        [
            ("    sampler = DistributedSampler(train, shuffle=True, seed=args.seed)\n", ""),
            ("sampler=sampler)", "shuffle=True)"),
            ("        sampler.set_epoch(epoch)\n", ""),
        ],
        ["every rank read all 256 items", "DistributedSampler"],
    ),
    "no_set_epoch": (
        [("        sampler.set_epoch(epoch)\n", "")],
        ["same order in epoch 0 and epoch 1", "set_epoch"],
    ),
    "no_ddp": (  # the ranks train apart: their weights drift
        [
            ('DDP(model, device_ids=[local_rank]) if device.type == "cuda" else DDP(model)', "model"),
            ("torch.save(model.module.state_dict()", "torch.save(model.state_dict()"),
        ],
        ["weights differ between rank 0 and rank 1", "DDP("],
    ),
    "every_rank_saves": (
        [("    if rank == 0:\n        torch.save(", "    if True:\n        torch.save(")],
        ["rank 1 called torch.save", "rank 0"],
    ),
    "no_destroy": (
        [("    dist.destroy_process_group()\n", "")],
        ["process group was still there", "destroy_process_group"],
    ),
    "scaled_lr": (  # identical weights, but not one process's on the global batch at the given learning rate
        [("lr=args.lr)", "lr=args.lr * dist.get_world_size())")],
        ["one process on the global batch", "lr=0.2", "--lr 0.1"],
    ),
    "crashes_on_rank_1": (
        [
            (
                "    rank = dist.get_rank()\n",
                "    rank = dist.get_rank()\n    assert rank == 0, 'only rank 0 expected'\n",
            )
        ],
        ["exited with an error", "only rank 0 expected"],
    ),
    "hangs": (  # rank 0 waits for a file no rank writes: the checker's time limit ends it
        [
            (
                "    dist.destroy_process_group()\n",
                "    while rank == 0 and not os.path.exists(args.out + '.done'):\n"
                "        __import__('time').sleep(0.1)\n"
                "    dist.destroy_process_group()\n",
            )
        ],
        ["did not finish within", "no process is left"],
    ),
}


def write_wrong(name: str, folder: Path) -> Path:
    """The wrong answer ``name`` as a file in ``folder``."""
    text = SOLUTION.read_text()
    edits, _ = WRONG[name]
    for old, new in edits:
        assert text.count(old) == 1, (name, old)
        text = text.replace(old, new)
    path = folder / f"{name}.py"
    path.write_text(text)
    return path
