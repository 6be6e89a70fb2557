"""What a checker says about a learner's answer (pure): the verdict, the idea it confirmed or the one that is missing,
and the chapter section to read again. Taught by the exercises at the end of every chapter (notebooks/00–07).

A checker is a function ``answer -> str``: it returns what a right answer confirmed, or raises ``Hint`` (a wrong
answer), ``WrongType`` (an answer of the wrong kind) or ``NotAnswered`` (the skeleton is still there). Hints name the
idea and the section, never the answer itself.
"""

from __future__ import annotations

import html
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..core.arguments import shown

__all__ = [
    "Feedback",
    "Exercise",
    "Hint",
    "WrongType",
    "NotAnswered",
    "call_learner",
    "exercise",
    "kind",
    "unanswered",
    "EXERCISES_HERE",
]

CORRECT, WRONG, WRONG_TYPE, NOT_ANSWERED = "correct", "not yet", "wrong type", "not answered yet"


class Hint(Exception):
    """A wrong answer: ``message`` says which idea is missing, ``section`` where the chapter teaches it."""

    verdict = WRONG

    def __init__(self, message: str, section: str | None = None) -> None:
        super().__init__(message)
        self.message, self.section = message, section


class WrongType(Hint):
    """The answer is not the kind of thing the exercise asks for (a number where a string goes, ...)."""

    verdict = WRONG_TYPE


class NotAnswered(Hint):
    """The answer is still the skeleton's ``...`` (or a function whose body is still ``...``)."""

    verdict = NOT_ANSWERED


@dataclass(frozen=True)
class Exercise:
    """One exercise: its name (``"ch01-ex1"``), a title, what the answer is, where the chapter teaches it."""

    name: str
    title: str
    expects: str  # "a function weighted_loss(model, criterion, x, y, device)", "a string", ...
    section: str
    checker: Callable[[Any], str]


def exercise(
    registry: dict[str, Exercise], name: str, title: str, *, expects: str, section: str
) -> Callable[[Callable[[Any], str]], Callable[[Any], str]]:
    """Decorator that files a checker in a chapter module's ``registry``."""

    def register(checker: Callable[[Any], str]) -> Callable[[Any], str]:
        if name in registry:
            raise ValueError(f"exercise {name!r} is defined twice")
        registry[name] = Exercise(name, title, expects, section, checker)
        return checker

    return register


EXERCISES_HERE = "EXERCISES"  # the name of the registry every chapter module defines


@dataclass(frozen=True)
class Feedback:
    """The checker's verdict on one answer; prints as text, renders as a coloured box in JupyterLab."""

    exercise: str
    title: str
    verdict: str  # "correct", "not yet", "wrong type" or "not answered yet"
    message: str
    section: str | None = None

    @property
    def passed(self) -> bool:
        """Whether the answer was right (the verdict is ``correct``)."""
        return self.verdict == CORRECT

    def _headline(self) -> str:
        mark = "✔" if self.passed else ("…" if self.verdict == NOT_ANSWERED else "✘")
        return f"{mark} {self.exercise} · {self.title}: {self.verdict}"

    def _where(self) -> str | None:
        return None if self.passed or not self.section else f"read again: {self.section}"

    def __str__(self) -> str:
        lines = [self._headline(), "  " + self.message]
        if self._where():
            lines.append("  " + self._where())
        return "\n".join(lines)

    def __repr__(self) -> str:
        return str(self)

    def _repr_html_(self) -> str:
        colour = {CORRECT: "#2e7d32", NOT_ANSWERED: "#616161"}.get(self.verdict, "#c62828")
        where = f"<div style='font-size:90%;color:#555'>{html.escape(self._where())}</div>" if self._where() else ""
        return (
            f"<div style='border-left:4px solid {colour};padding:4px 10px'>"
            f"<div style='font-weight:bold;color:{colour}'>{html.escape(self._headline())}</div>"
            f"<div>{html.escape(self.message)}</div>{where}</div>"
        )


def unanswered(answer: Any) -> bool:
    """The skeleton is still there: ``...`` itself, or a dict, list, tuple or set with a ``...`` in it."""
    if answer is ...:
        return True
    if isinstance(answer, dict):
        return any(v is ... for v in answer.values())
    return isinstance(answer, (list, tuple, set, frozenset)) and any(v is ... for v in answer)


def _skeleton() -> None: ...


def empty_body(function: Any) -> bool:
    """A function whose body is still only ``...`` (or ``pass``, or comments): Python compiles each of these to the
    same code as the skeleton's, which does nothing and returns None."""
    code = getattr(function, "__code__", None)
    return code is not None and code.co_code == _skeleton.__code__.co_code and not code.co_names


def kind(value: Any) -> str:
    """``an int (61)``, ``a str ('6 1')``: what the learner gave, for a wrong-type message."""
    name = type(value).__name__
    return f"{'an' if name[:1].lower() in 'aeiou' else 'a'} {name} ({shown(value, 40)})"


def first_line(exc: BaseException, limit: int = 200) -> str:
    """The first line of ``exc``'s message, cut to ``limit`` characters: enough for a hint."""
    text = str(exc).strip().splitlines()
    line = text[0] if text else ""
    return line if len(line) <= limit else line[: limit - 1] + "…"


def call_learner(
    function: Any,
    *args: Any,
    name: str,
    expects: str,
    explain: Callable[[Exception], Hint | None] | None = None,
    none_ok: bool = False,
) -> Any:
    """Call the learner's ``function``; an error in it becomes a ``Hint`` (``explain`` may name the idea behind it).

    A result of ``None`` means the body is still the skeleton's ``...``: ``NotAnswered`` (unless ``none_ok``: the
    function works in place).
    """
    if function is ...:
        raise NotAnswered(f"Replace the ... with {expects}, then run the check again.")
    if not callable(function):
        raise WrongType(f"{name} should be {expects}; you gave {kind(function)}.")
    try:
        result = function(*args)
    except Exception as exc:  # the learner's code failed: say how, and what idea it points to
        hint = explain(exc) if explain else None
        if hint is not None:
            raise hint from None
        raise Hint(f"your {name} raised {type(exc).__name__}: {first_line(exc)}") from None
    if result is None and empty_body(function):
        raise NotAnswered(
            f"your {name} is still the skeleton (its body is ...): write its body, then run the check again."
        )
    if result is None and not none_ok:
        raise NotAnswered(
            f"your {name} returned None: write its body (it should return something), then run the check again."
        )
    return result
