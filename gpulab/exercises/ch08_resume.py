"""The checker of chapter 08's exercise: the learner's resumable DDP script, run under torchrun with 2 gloo ranks and
``--max-restarts=1``, with one rank killed mid-run (notebooks/08_precision_restarts_fsdp.ipynb).

The contract (the exercise's text states it): the script takes the arguments of ``scripts/digits_ddp_restart.py``
and is run as ``torchrun --standalone --nproc-per-node=2 --max-restarts=1 SCRIPT --epochs 3 --batch-size 8 --lr 0.05
--seed 0 --train-size 512 --out model.pt --snapshot snapshot.pt`` in an empty folder, on the CPU, through
``resume_probe``. The moment ``snapshot.pt`` first exists (the end of epoch 0), the runner kills one rank with
``SIGKILL``, as a crash would; torchrun then restarts both. The probe's notes say who saved and loaded what, and
which epochs each attempt began; the checker names the first piece missing.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

from .feedback import Exercise, Hint, exercise
from .resume_probe import record_name
from .torchrun_script import ScriptRun, learners_script, run_under_torchrun

__all__ = ["check_resume_script", "ARGUMENTS", "EPOCHS", "TIMEOUT_S", "SECTION"]

EXERCISES: dict[str, Exercise] = {}
SECTION = "section 2 · “A run that survives a killed rank”"
EPOCHS, WORLD, SNAPSHOT = 3, 2, "snapshot.pt"
RESTARTS = 1  # torchrun --max-restarts: the checker kills one rank once, so attempts 0 and 1
ARGUMENTS = ["--epochs", str(EPOCHS), "--batch-size", "8", "--lr", "0.05", "--seed", "0", "--train-size", "512"]
ARGUMENTS += ["--out", "model.pt", "--snapshot", SNAPSHOT]
TIMEOUT_S = 240.0  # two worlds of 2 ranks, each importing torch: 20–60 s on a laptop


def _ran(run: ScriptRun) -> None:
    if run.timed_out:
        raise Hint(
            f"your script did not finish within {run.seconds:.0f} s, so the checker stopped it and every process it "
            f"had started. Its last lines:\n{run.tail()}",
            SECTION,
        )
    if run.returncode != 0:
        raise Hint(
            f"torchrun exited with an error (exit code {run.returncode}). The last lines of the ranks:\n"
            f"{run.error_lines()}",
            SECTION,
        )


def _notes(folder: Path, attempt: int) -> list[dict]:
    files = [folder / record_name(attempt, rank) for rank in range(WORLD)]
    return [json.loads(f.read_text()) for f in files if f.exists()]


def _snapshots(notes: dict) -> list[dict]:
    return [s for s in notes["saves"] if s["file"].startswith(SNAPSHOT)]  # snapshot.pt, or a snapshot.pt.tmp


def _every_rank_writes(folder: Path) -> None:
    """Checked before the exit code: two ranks writing one file may also make the run fail (a rename that races). In
    every attempt: the kill can come before rank 1 reached its first save, and the restarted world's race then ends
    the run."""
    others = [folder / record_name(attempt, rank) for attempt in range(RESTARTS + 1) for rank in range(1, WORLD)]
    if any(_snapshots(json.loads(f.read_text())) for f in others if f.exists()):
        raise Hint(
            "rank 1 wrote the snapshot too: every rank saved it, and two processes writing one file can leave it "
            "garbled, or fail when one renames the file the other just renamed. The ranks' copies are equal "
            "anyway: write it from rank 0 only, under if rank == 0.",
            SECTION,
        )


def _verdict(run: ScriptRun, folder: Path) -> str:
    first, second = _notes(folder, 0), _notes(folder, 1)
    written = {rank: _snapshots(n) for rank, n in enumerate(first)}
    if not any(written.values()):
        raise Hint(
            f"no rank wrote a snapshot: the run ended without ever creating --snapshot ({SNAPSHOT}), so the checker "
            "had no moment to kill a rank at, and a crash would have lost every epoch. Save one with torch.save at "
            "the end of each epoch.",
            SECTION,
        )
    saved = written[0][0]
    if not saved["optimizer"]:
        raise Hint(
            "the snapshot holds no optimizer state (no opt.state_dict() in what you saved): after a restart SGD's "
            "momentum starts from zero, and the run no longer matches one that never stopped.",
            SECTION,
        )
    if not saved["epoch"]:
        raise Hint(
            "the snapshot holds no whole number: save the epochs run with the weights, so that a restarted rank "
            "knows where to go on from.",
            SECTION,
        )
    if run.killed is None or not second:
        raise Hint(
            "the run ended before the checker could kill a rank: the snapshot appeared only at the end. Write it at "
            "the end of every epoch, inside the epoch loop.",
            SECTION,
        )
    for rank, notes in enumerate(second):
        if not any(f.startswith(SNAPSHOT) for f in notes["loads"]):
            raise Hint(
                f"after the restart, rank {rank} never read the snapshot: it trained again from fresh weights. At "
                f"start, every rank loads --snapshot if the file exists (os.path.exists), before DDP(model).",
                SECTION,
            )
        if not notes["optimizer_loads"]:
            raise Hint(
                f"after the restart, rank {rank} read the snapshot but never gave the optimizer its state back: call "
                "opt.load_state_dict(...) with what you saved, or its momentum starts from zero.",
                SECTION,
            )
    done = len(written[0])  # snapshots rank 0 began to write before the kill: the last may have been cut short
    began = [n["epochs"][0] if n["epochs"] else None for n in second]
    if len(set(began)) != 1 or began[0] not in (done - 1, done) or began[0] == 0:
        raise Hint(
            f"after the restart, the ranks began again at epoch {began[0]}, though the snapshot said epochs had been "
            "run: the weights were restored, but the epoch was not. Start the loop at the epoch the snapshot saved "
            "(for epoch in range(start, args.epochs)).",
            SECTION,
        )
    epochs = sorted(set(first[0]["epochs"]) | set(second[0]["epochs"]))
    if epochs != list(range(EPOCHS)) or second[0]["epochs"][-1] != EPOCHS - 1:
        raise Hint(f"the epochs run, before and after the restart, were {epochs}, not 0 to {EPOCHS - 1}.", SECTION)
    return (
        f"rank 0 alone wrote the snapshot with the optimizer's state and the epochs run; the checker killed a rank "
        f"after epoch {began[0] - 1}'s snapshot, torchrun restarted both, and every rank loaded the snapshot, gave the "
        f"optimizer its state back and went on at epoch {began[0]}."
    )


def check_resume_script(answer: Any, timeout_s: float = TIMEOUT_S) -> str:
    """Run the learner's script under torchrun with 2 gloo ranks and one restart, kill a rank once the snapshot
    exists, and check what each attempt did (``Hint`` names the first piece missing)."""
    script = learners_script(answer, "my_resume.py", "copy scripts/digits_ddp_restart.py to it, add the snapshot")
    with tempfile.TemporaryDirectory(prefix="gpulab-resume-check-") as name:
        folder = Path(name)
        run = run_under_torchrun(
            script,
            ARGUMENTS,
            cwd=folder,
            nproc=WORLD,
            timeout_s=timeout_s,
            probe=f"{__package__}.resume_probe",
            env={"GPULAB_PROBE_DIR": name},
            max_restarts=RESTARTS,
            kill_a_rank_when=(folder / SNAPSHOT).exists,
        )
        _every_rank_writes(folder)
        _ran(run)
        return _verdict(run, folder)


@exercise(
    EXERCISES,
    "ch08-ex1",
    "a snapshot, and a run that resumes from it",
    section=SECTION,
    expects='the path of your resumable script, e.g. "my_resume.py"',
)
def _resume_script(answer: Any) -> str:
    return check_resume_script(answer)
