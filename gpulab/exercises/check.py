"""``gpulab.check("ch01-ex1", answer)``: the checker behind every chapter's exercises (notebooks/00–08).

Each chapter's exercises live in a module of this package; it is imported only when one of its exercises is checked,
so ``import gpulab`` stays light. ``check`` never raises for a wrong answer (a chapter still runs top to bottom with
its exercises unanswered); it refuses an exercise name it does not know.
"""

from __future__ import annotations

import difflib
import importlib
from typing import Any

from ..core.arguments import shown, text
from .feedback import CORRECT, EXERCISES_HERE, Exercise, Feedback, Hint, unanswered

__all__ = ["check", "exercise_names", "find_exercise", "CHAPTER_MODULES"]

# chapter prefix -> module holding its exercises; names are "<prefix>-ex<k>"
CHAPTER_MODULES: dict[str, str] = {
    "ch00": "ch00_setup",
    "ch01": "ch01_transfer",
    "ch02": "ch02_choosing",
    "ch03": "ch03_dataparallel",
    "ch04": "ch04_ddp",
    "ch05": "ch05_monitor",
    "ch06": "ch06_lightning",
    "ch07": "ch07_scaling",
    "ch08": "ch08_resume",
}
# how many exercises each chapter has (a test holds this to the modules, so a typo is caught without importing them)
COUNTS: dict[str, int] = {
    "ch00": 3,
    "ch01": 4,
    "ch02": 3,
    "ch03": 2,
    "ch04": 3,
    "ch05": 4,
    "ch06": 4,
    "ch07": 2,
    "ch08": 1,
}


def exercise_names() -> list[str]:
    """Every exercise, in chapter order: ``["ch00-ex1", "ch00-ex2", "ch01-ex1", ...]``."""
    return [f"{chapter}-ex{k}" for chapter, n in COUNTS.items() for k in range(1, n + 1)]


def _registry(chapter: str) -> dict[str, Exercise]:
    module = importlib.import_module(f"{__package__}.{CHAPTER_MODULES[chapter]}")
    return getattr(module, EXERCISES_HERE)


def find_exercise(name: str) -> Exercise:
    """The exercise called ``name`` (``ValueError`` naming the closest ones when there is none)."""
    name = text(name, "exercise", example='"ch01-ex1"').strip()
    known = exercise_names()
    if name not in known:
        close = difflib.get_close_matches(name.lower().replace(" ", ""), known, n=2, cutoff=0.6)
        hint = f" Did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
        raise ValueError(
            f"no exercise is called {shown(name, 40)}.{hint} Exercises are named by chapter and number, "
            f"as the check cell under each exercise writes them: {', '.join(known)}."
        )
    return _registry(name.split("-")[0])[name]


def check(exercise: str, answer: Any = ...) -> Feedback:
    """Check ``answer`` to ``exercise`` (``"ch01-ex1"``): what it confirmed, or which idea is missing and where the
    chapter teaches it. Never gives the answer away; an answer still ``...`` (or with a ``...`` in it) is reported
    as not answered yet."""
    found = find_exercise(exercise)
    if unanswered(answer):
        return Feedback(
            found.name,
            found.title,
            "not answered yet",
            f"Replace the ... with {found.expects}, then run this check again.",
            found.section,
        )
    try:
        confirmed = found.checker(answer)
    except Hint as hint:
        return Feedback(found.name, found.title, hint.verdict, hint.message, hint.section or found.section)
    return Feedback(found.name, found.title, CORRECT, confirmed)
