"""A learner's own copy of the chapters, which ``make lab`` opens: ``mywork/``, beside ``notebooks/``, git-ignored.

Running a chapter (Run All, autosave, an edited cell) changes the notebook. Done in ``notebooks/`` itself, that changes
the tracked chapters, and the learner's next ``git pull`` stops on a conflict. So ``make lab`` opens a copy:

- each chapter (``notebooks/NN_*.ipynb``) is copied into ``mywork/`` the first time, and never overwritten after:
  what the learner wrote and ran stays theirs; a chapter that a later ``git pull`` adds joins on the next ``make lab``;
- what the chapters read through relative paths sits beside them as links into ``notebooks/``: ``scripts/`` (chapters
  02 and 04 print and run its scripts) and ``claims_ledger.md``, so they are always the checkout's current ones;
- ``mywork/`` is in ``.gitignore``: whatever the chapters write there (MNIST's ``data/``, logs) stays out of git too.

A fresh copy of one chapter: delete (or rename) ``mywork/NN_….ipynb`` and run ``make lab`` (or this script) again.

    python tools/learner_copy.py [--source notebooks] [--dest mywork]
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LINKED = ("scripts", "claims_ledger.md")  # read by the chapters through relative paths; never edited by a learner


def chapters(source: Path) -> list[Path]:
    """The chapters a learner works through, in order: ``NN_*.ipynb``."""
    return sorted(p for p in source.glob("[0-9][0-9]_*.ipynb") if p.is_file())


def update_copy(source: Path, dest: Path) -> list[str]:
    """Copy into ``dest`` the chapters it lacks and link what they read; returns one line per change made.

    A chapter already in ``dest`` is left as it is, whatever it holds. A link already there is left too; a file or
    folder of the learner's own where a link would go is reported, not replaced.
    """
    if not source.is_dir():
        raise SystemExit(f"learner_copy: no chapters folder at {source}: run this from the course's checkout.")
    dest.mkdir(parents=True, exist_ok=True)
    done = []
    for chapter in chapters(source):
        target = dest / chapter.name
        if not target.exists():
            shutil.copy2(chapter, target)
            done.append(f"copied {chapter.name}")
    for name in LINKED:
        if not (source / name).exists():
            continue
        target = dest / name
        relative = os.path.relpath(source / name, dest)
        if target.is_symlink() and os.readlink(target) == relative:
            continue
        if target.is_symlink():  # a link to somewhere else (the checkout moved): point it at this one
            target.unlink()
        elif target.exists():
            done.append(f"kept your own {name} (the chapters read it; delete it to get the course's back)")
            continue
        target.symlink_to(relative, target_is_directory=(source / name).is_dir())
        done.append(f"linked {name} -> {relative}")
    return done


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", type=Path, default=ROOT / "notebooks", help="the tracked chapters (notebooks/)")
    parser.add_argument("--dest", type=Path, default=ROOT / "mywork", help="the learner's copy (mywork/)")
    args = parser.parse_args(argv)
    changes = update_copy(args.source.resolve(), args.dest.resolve())
    where = os.path.relpath(args.dest.resolve(), Path.cwd())
    for line in changes:
        print(f"{where}/: {line}")
    print(
        f"Your copy of the chapters is {where}/ (git ignores it; git pull never touches it). "
        f"A fresh copy of one chapter: delete it there and run make lab again."
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
