"""Wrong answers to chapter 08's exercise, one per piece the checker checks: each is the chapter's resumable script
(scripts/digits_ddp_resume.py, the solution) with one edit, and the words the checker's message must contain for it."""

from __future__ import annotations

from pathlib import Path

SOLUTION = Path(__file__).resolve().parents[2] / "notebooks" / "scripts" / "digits_ddp_resume.py"

SAVE = "            save_snapshot(args.snapshot, model.module, opt, epoch + 1)\n"

# name -> (edits: (text of the solution, what replaces it), words the checker's message names)
WRONG: dict[str, tuple[list[tuple[str, str]], list[str]]] = {
    "no_snapshot": ([(SAVE, "")], ["no rank wrote a snapshot", "torch.save"]),
    "every_rank_saves": (
        [
            (SAVE, ""),
            (
                '        if rank == 0:\n            print(f"epoch',
                f'{SAVE[4:]}        if rank == 0:\n            print(f"epoch',
            ),
        ],
        ["rank 1 wrote the snapshot too", "if rank == 0"],
    ),
    "not_loaded": (
        [("    start = load_snapshot(args.snapshot, model, opt, device)", "    start = 0")],
        ["never read the snapshot", "os.path.exists"],
    ),
    "optimizer_not_restored": (
        [('    opt.load_state_dict(snapshot["optimizer"])\n', "")],
        ["never gave the optimizer its state back", "opt.load_state_dict"],
    ),
    "optimizer_not_saved": (
        [('"optimizer": opt.state_dict(), ', ""), ('    opt.load_state_dict(snapshot["optimizer"])\n', "")],
        ["no optimizer state", "momentum"],
    ),
    "epoch_not_resumed": (
        [("for epoch in range(start, args.epochs):", "for epoch in range(args.epochs):")],
        ["began again at epoch 0", "range(start, args.epochs)"],
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
