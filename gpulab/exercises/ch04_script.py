"""The checker of chapter 04's last exercise: the learner's DDP script, run for real under torchrun with 2 gloo ranks.

The contract (the exercise's text in notebooks/04_ddp.ipynb states it): the script takes the arguments of
``scripts/digits_single.py`` (``--epochs``, ``--batch-size``, ``--lr``, ``--seed``, ``--train-size``, ``--out``) and
is run as ``torchrun --standalone --nproc-per-node=2 SCRIPT --epochs 2 --batch-size 16 --lr 0.1 --seed 0
--train-size 256 --out model.pt`` in an empty folder, on the CPU (``CUDA_VISIBLE_DEVICES=""``), through
``ddp_probe``, which records each rank's batches, its weights at the end, its ``torch.save`` calls and whether its
process group was ended. 256 items divide among 2 ranks: the sampler pads nothing. The reference is one process that
starts from the same weights and takes each step on both ranks' batches together, with the script's optimiser at
``lr=0.1``; the weights must agree within ``TOLERANCE``.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import torch

from .feedback import Hint
from .torchrun_script import ScriptRun, learners_script, run_under_torchrun

__all__ = ["check_ddp_script", "ARGUMENTS", "TOLERANCE", "TIMEOUT_S"]

EPOCHS, BATCH, LR, SEED, TRAIN_SIZE, WORLD = 2, 16, 0.1, 0, 256, 2
ARGUMENTS = ["--epochs", str(EPOCHS), "--batch-size", str(BATCH), "--lr", str(LR), "--seed", str(SEED)]
ARGUMENTS += ["--train-size", str(TRAIN_SIZE), "--out", "model.pt"]
TOLERANCE = 1e-4  # the largest difference allowed between a weight of the script and of the one-process reference
TIMEOUT_S = 180.0  # two ranks importing torch and training 2 short epochs take 10–30 s on a laptop


def _ran(run: ScriptRun, sections: dict[str, str]) -> None:
    if run.timed_out:
        raise Hint(
            f"your script did not finish within {run.seconds:.0f} s, so the checker stopped it: it ended torchrun and "
            f"the {len(run.left_behind) - 1} process(es) it had started, and no process is left. A rank that waits "
            "for something no other rank does (a collective that only some ranks call, a file nobody writes) "
            "waits for ever. "
            f"Its last lines:\n{run.tail()}",
            sections["collective"],
        )
    if run.returncode != 0:
        raise Hint(
            f"torchrun exited with an error (exit code {run.returncode}): a rank raised. Its last lines:\n"
            f"{run.error_lines()}",
            sections["script"],
        )


def _disjoint(ranks: list[dict], sections: dict[str, str]) -> None:
    if not all(r["passes"] and any(r["passes"][0]) for r in ranks):
        raise Hint(
            f"the checker saw no batch of the training set ({TRAIN_SIZE} items with --train-size {TRAIN_SIZE}) in "
            "some rank. Keep the single-device script's DataLoader over the training set (num_workers=0, the "
            "default), built from load_data(args.train_size).",
            sections["script"],
        )
    for epoch in range(EPOCHS):
        shares = [[i for batch in r["passes"][epoch] for i in batch] if epoch < len(r["passes"]) else [] for r in ranks]
        if all(sorted(s) == list(range(TRAIN_SIZE)) for s in shares):
            raise Hint(
                f"in epoch {epoch} every rank read all {TRAIN_SIZE} items: the ranks did the same work twice. DDP "
                "does not split the data: give the DataLoader a DistributedSampler.",
                sections["split"],
            )
        flat = [i for s in shares for i in s]
        if len(set(flat)) != len(flat) or set(flat) != set(range(TRAIN_SIZE)):
            raise Hint(
                f"in epoch {epoch} the ranks read {len(flat)} items, {len(set(flat))} of them distinct, of "
                f"{TRAIN_SIZE}: each item must go to exactly one rank (a DistributedSampler does that).",
                sections["split"],
            )
    if ranks[0]["passes"][0] == ranks[0]["passes"][1]:
        raise Hint(
            "rank 0 read its items in the same order in epoch 0 and epoch 1: the sampler shuffles by seed + epoch, "
            "and it knows the epoch only if you tell it with set_epoch(epoch) at the top of every epoch.",
            sections["set_epoch"],
        )


def _gap(a: list[torch.Tensor], b: list[torch.Tensor]) -> float:
    if len(a) != len(b) or any(x.shape != y.shape for x, y in zip(a, b)):
        return float("inf")
    return max((x - y).abs().max().item() for x, y in zip(a, b))


def _weights(ranks: list[dict], reference: list[torch.Tensor] | None, sections: dict[str, str]) -> str:
    apart = _gap(ranks[0]["final"], ranks[1]["final"])
    if apart > 1e-6:
        wrapped = "" if ranks[0]["ddp"] else " Your script never wrapped the model: model = DDP(model)."
        raise Hint(
            f"after training, the weights differ between rank 0 and rank 1 (by up to {apart:.3g}): each rank "
            f"trained its own model on its own share. DDP averages the gradients so that they stay equal.{wrapped}",
            sections["grads"],
        )
    savers = sorted({r["rank"] for r in ranks if r["saves"]})
    if savers != [0]:
        who = "no rank called torch.save" if not savers else f"rank {savers[-1]} called torch.save"
        raise Hint(
            f"{who}: only rank 0 should write the checkpoint (to --out), after training, with if rank == 0. "
            "Several ranks writing one file can leave it garbled.",
            sections["save"],
        )
    if any(r["group_left"] for r in ranks):
        raise Hint(
            "when your script ended, its process group was still there: end it with "
            "dist.destroy_process_group() as the last line of main().",
            sections["script"],
        )
    if reference is None:
        raise Hint(
            "the checker could not replay your training as one process: it needs the model wrapped in DDP, an "
            "optimiser from torch.optim, and F.cross_entropy as the loss, as in scripts/digits_single.py.",
            sections["grads"],
        )
    gap = _gap(ranks[0]["final"], reference)
    if gap > TOLERANCE:
        lr = "" if ranks[0]["lr"] == LR else f" Your optimiser ran with lr={ranks[0]['lr']:g} for --lr {LR:g}."
        raise Hint(
            f"the weights are equal on both ranks, but differ by up to {gap:.3g} (more than {TOLERANCE:g}) from one "
            f"process on the global batch (both ranks' batches together, lr={LR:g}).{lr} DDP already averages the "
            "gradients over the ranks: keep the optimiser and the loss as they were.",
            sections["grads"],
        )
    return (
        f"2 ranks read disjoint halves of the {TRAIN_SIZE} items, in a new order each epoch; their weights agree, "
        f"and match one process on the global batch of {WORLD * BATCH} within {TOLERANCE:g} (largest difference "
        f"{gap:.1g}); only rank 0 saved; the process group was ended."
    )


def check_ddp_script(answer: Any, sections: dict[str, str], timeout_s: float = TIMEOUT_S) -> str:
    """Run the learner's script under torchrun with 2 gloo ranks and check it piece by piece (``Hint`` names the
    first piece missing); return what a passing script showed."""
    script = learners_script(answer, "my_ddp.py", "copy scripts/digits_single.py to it, make it a DDP script")
    with tempfile.TemporaryDirectory(prefix="gpulab-ddp-check-") as folder:
        probe_env = {"GPULAB_PROBE_DIR": folder, "GPULAB_PROBE_LR": str(LR), "GPULAB_PROBE_TRAIN_SIZE": str(TRAIN_SIZE)}
        run = run_under_torchrun(
            script,
            ARGUMENTS,
            cwd=folder,
            nproc=WORLD,
            timeout_s=timeout_s,
            probe=f"{__package__}.ddp_probe",
            env=probe_env,
        )
        _ran(run, sections)
        files = [Path(folder, f"rank{r}.pt") for r in range(WORLD)]
        if not all(f.exists() for f in files):
            raise Hint(f"a rank ended without the checker's record of it. The last lines:\n{run.error_lines()}")
        ranks = [torch.load(f) for f in files]
        reference_file = Path(folder, "reference.pt")
        reference = torch.load(reference_file) if reference_file.exists() else None
    _disjoint(ranks, sections)
    return _weights(ranks, reference, sections)
