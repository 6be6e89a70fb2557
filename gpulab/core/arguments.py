"""Validating what a learner passed to a public function, once, at the door (pure).

Learners type into the helpers live, in front of a room. A wrong argument must stop the call at once with a message
that says what was wrong, what was expected and what to type instead — never surface later as an ``AttributeError``
from deep inside a helper, or after the work it was meant to watch has run. Each public function calls these
validators first; the messages name the argument as the learner wrote it. Taught by every chapter's first mistakes.

One exception class per kind of mistake, everywhere in gpulab: a value of the wrong kind (text for a number, a
fraction or ``True`` for a count, a set where order matters) raises ``TypeError``; a value of the right kind that is
out of range or not among the choices (``0`` ranks, a negative time, ``NaN``) raises ``ValueError``. Each message says
what was passed, what the argument is for and what it takes, with an example. Whole numbers accept what Python counts
as one (``int``, numpy's integers: ``operator.index``), never ``bool``; real numbers accept ``numbers.Real`` (numpy's
floats too). A hand-written ``isinstance`` test elsewhere would drift from these (``tests/core/test_arguments.py``
walks the package for them).
"""

from __future__ import annotations

import inspect
import math
import numbers
import operator
import os
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from .readings import GpuInfo

__all__ = [
    "is_whole_number",
    "is_real_number",
    "whole_number",
    "whole_numbers",
    "positive_number",
    "seconds",
    "choice",
    "text",
    "flag",
    "function",
    "no_argument_function",
    "environment",
    "gpu_list",
    "index_list",
    "path_or_none",
    "shown",
]


def shown(value: Any, limit: int = 60) -> str:
    """``repr(value)`` cut to ``limit`` characters, so that a 5,000-character mistake does not fill the screen."""
    r = repr(value)
    return r if len(r) <= limit else f"{r[: limit - 1]}… ({len(r)} characters)"


def _kind(value: Any) -> str:
    return f"{type(value).__name__} {shown(value)}"


def is_whole_number(value: Any) -> bool:
    """Whether ``value`` is a whole number as every validator here counts one: an ``int`` or numpy integer, not ``bool``
    (for code that answers a wrong kind otherwise than by raising: an exercise's feedback, a choice between forms)."""
    if isinstance(value, bool):
        return False
    try:
        operator.index(value)
    except TypeError:
        return False
    return True


def is_real_number(value: Any) -> bool:
    """Whether ``value`` is a real number (``int``, ``float``, numpy's), not ``bool``; it may be ``NaN`` or infinite."""
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def _about(name: str, what: str) -> str:
    return f"{name} ({what})" if what else name


def _range(minimum: int, maximum: int | None) -> str:
    return f"whole number ≥ {minimum}" if maximum is None else f"whole number from {minimum} to {maximum}"


def whole_number(
    value: Any, name: str, *, minimum: int = 0, maximum: int | None = None, example: str = "", what: str = ""
) -> int:
    """``value`` as an ``int`` (numpy ints too): ``TypeError`` for another kind (``bool``, ``float``, text),
    ``ValueError`` outside ``minimum``..``maximum``. ``what`` says what the number counts, ``example`` a call."""
    hint = f" (e.g. {example})" if example else ""
    try:
        if isinstance(value, bool):
            raise TypeError
        n = operator.index(value)
    except TypeError:
        raise TypeError(
            f"{name}={shown(value)} is a {type(value).__name__}; {_about(name, what)} takes a "
            f"{_range(minimum, maximum)}{hint}."
        ) from None
    if n < minimum or (maximum is not None and n > maximum):
        raise ValueError(f"{name}={n}: {_about(name, what)} must be a {_range(minimum, maximum)}{hint}.")
    return n


def _real(value: Any) -> float | None:
    """``value`` as a ``float`` (an integer too large for one as infinity); None for a ``bool`` or a non-number."""
    if not is_real_number(value):
        return None
    try:
        return float(value)
    except OverflowError:
        return math.inf


def positive_number(value: Any, name: str, *, what: str = "", zero_ok: bool = False, example: str = "") -> float:
    """A finite real number > 0 (≥ 0 with ``zero_ok``) as ``float``: bytes, FLOP/s, seconds measured, a share.
    ``TypeError`` for another kind (``bool``, text), ``ValueError`` for ``NaN``, an infinity or one out of range."""
    bound = "≥ 0" if zero_ok else "> 0"
    hint = f" (e.g. {example})" if example else ""
    x = _real(value)
    if x is None:
        raise TypeError(
            f"{name}={shown(value)} is a {type(value).__name__}; {_about(name, what)} takes a finite "
            f"number {bound}{hint}."
        )
    if not math.isfinite(x) or x < 0 or (x == 0 and not zero_ok):
        raise ValueError(f"{name}={shown(value)}: {_about(name, what)} must be a finite number {bound}{hint}.")
    return x


MAX_SECONDS = 365 * 24 * 3600.0  # longer is a typo; much longer overflows select()/poll() timers


def seconds(value: Any, name: str, *, allow_zero: bool = True, example: str = "") -> float:
    """A finite, non-negative (or positive) number of seconds as ``float``."""
    hint = f", e.g. {name}={example}" if example else ""
    kind = "non-negative" if allow_zero else "positive"
    s = _real(value)
    if s is None:
        raise TypeError(
            f"{name}={shown(value)} is a {type(value).__name__}; {name} takes a {kind} number of seconds{hint}."
        )
    if not math.isfinite(s) or s < 0 or (s == 0 and not allow_zero):
        raise ValueError(f"{name}={shown(value)}: {name} must be a {kind} number of seconds, and finite{hint}.")
    if s > MAX_SECONDS:
        raise ValueError(
            f"{name}={shown(value)} s is more than a year; the operating system's timers stop at about "
            f"{MAX_SECONDS:.0e} s. Give a number of seconds you mean to wait{hint}."
        )
    return s


def choice(value: Any, name: str, choices: Sequence[Any], *, what: str = "") -> Any:
    """The one of ``choices`` that ``value`` equals (``True`` never counts as ``1``): ``ValueError`` listing them for
    another value of their kind, ``TypeError`` for a value of another kind."""
    for c in choices:
        try:
            if isinstance(c, bool) == isinstance(value, bool) and bool(c == value):
                return c
        except (TypeError, ValueError):  # an array, or a type that refuses to compare
            pass
    same_kind = not isinstance(value, bool) and any(
        isinstance(value, type(c)) or isinstance(value, numbers.Real) and isinstance(c, numbers.Real) for c in choices
    )
    listed = ", ".join(repr(c) for c in choices)
    raise (ValueError if same_kind else TypeError)(
        f"{name}={shown(value)}: {_about(name, what)} is one of {listed}; e.g. {name}={choices[0]!r}."
    )


def text(value: Any, name: str, *, example: str = "") -> str:
    """``value`` if it is text (a ``str``), else ``TypeError`` naming ``name`` (and ``example`` when given)."""
    if not isinstance(value, str):
        hint = f" (e.g. {name}={example})" if example else ""
        raise TypeError(f"{name}={shown(value)} is a {type(value).__name__}; {name} takes text, a str{hint}.")
    return value


def flag(value: Any, name: str) -> bool:
    """``value`` if it is ``True`` or ``False``, else ``TypeError``: 1, "yes" or None are not a flag."""
    if not isinstance(value, bool):
        raise TypeError(f"{name}={shown(value)}: {name} takes True or False, not a {type(value).__name__}.")
    return value


def function(value: Any, name: str, *, example: str) -> Any:
    """``value`` if it can be called, else ``TypeError`` with ``example`` (``train``, not ``train()``)."""
    if not callable(value):
        raise TypeError(
            f"{name}={shown(value)} is a {type(value).__name__}, not something to call; {name} takes a "
            f"function, e.g. {name}={example}."
        )
    return value


def no_argument_function(value: Any, name: str, *, example: str) -> Any:
    """A function that can be called with no arguments (it will be): ``lambda: x @ x``, not ``torch.matmul``."""
    function(value, name, example=example)
    try:
        inspect.signature(value).bind()
    except TypeError:
        needs = [
            p.name
            for p in inspect.signature(value).parameters.values()
            if p.default is p.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
        ]
        label = getattr(value, "__name__", type(value).__name__)
        raise TypeError(
            f"{name}={label} is called with no arguments, but it needs {', '.join(needs)}. Wrap the call "
            f"in a lambda that supplies them, e.g. {name}={example}."
        ) from None
    except ValueError:  # no signature to read (some built-ins): it is called as it is
        pass
    return value


def environment(env: Any, name: str = "env") -> Mapping[str, str] | None:
    """An environment mapping of text to text (``None`` passes through): ``{"CUDA_VISIBLE_DEVICES": "2,3"}``."""
    if env is None:
        return None
    if isinstance(env, str):
        raise TypeError(
            f"{name}={shown(env)}: {name} is the whole environment of the process, a dict of variables, "
            f"not one value. Write {name}={{'CUDA_VISIBLE_DEVICES': {shown(env)}}}."
        )
    if not isinstance(env, Mapping):
        raise TypeError(
            f"{name}={_kind(env)}: {name} takes a dict of environment variables, e.g. "
            f"{name}={{'CUDA_VISIBLE_DEVICES': '2,3'}} (or os.environ)."
        )
    for k, v in env.items():
        if not isinstance(k, str):
            raise TypeError(
                f"{name} has the key {shown(k)}, a {type(k).__name__}: variable names are text, e.g. "
                "'CUDA_VISIBLE_DEVICES'."
            )
        if not isinstance(v, str):
            fix = ",".join(map(str, v)) if isinstance(v, (list, tuple)) else str(v)
            raise TypeError(
                f"{name}[{k!r}]={shown(v)} is a {type(v).__name__}: environment values are text, as in a "
                f"shell. Write {name}={{{k!r}: {fix!r}}}."
            )
    return env


def gpu_list(gpus: Any, name: str = "gpus", *, processes: bool = False) -> tuple[GpuInfo, ...]:
    """GPUs as read: ``GpuInfo``s, an ``Inventory`` (``gpulab.devices()``) or a reader (anything with ``count`` and
    ``info``, e.g. ``SimulatedGpuReader("workshop-8")``), read here without creating a CUDA context; ``processes``:
    a reader is asked for each GPU's processes too (whoever judges a GPU free needs them)."""
    if hasattr(gpus, "gpus") and not isinstance(gpus, (str, bytes)):  # an Inventory
        gpus = gpus.gpus
    elif (
        callable(getattr(gpus, "info", None)) and callable(getattr(gpus, "count", None)) and not isinstance(gpus, tuple)
    ):
        return tuple(gpus.info(i, processes=processes) for i in range(gpus.count()))
    if isinstance(gpus, str):
        raise TypeError(
            f"{name}={gpus!r}: {name} takes the GPUs themselves, not a name. For the described machine "
            f"{gpus!r} write {name}=gpulab.devices({gpus!r}); for this machine, gpulab.devices()."
        )
    if not isinstance(gpus, Iterable) or isinstance(gpus, (bytes, Mapping)):
        raise TypeError(
            f"{name}={_kind(gpus)}: {name} takes the GPUs as read by gpulab.devices() (or "
            "gpulab.devices('workshop-8') for a described machine)."
        )
    out = tuple(gpus)
    bad = [g for g in out if not isinstance(g, GpuInfo)]
    if bad:
        raise TypeError(
            f"{name} holds {_kind(bad[0])}, not a GPU reading: pass gpulab.devices() or "
            "gpulab.devices().gpus (GpuInfo records), not numbers or names."
        )
    return out


def whole_numbers(
    values: Any, name: str, *, minimum: int = 0, example: str, what: str, empty_ok: bool = True
) -> tuple[int, ...]:
    """A list of whole numbers ≥ ``minimum``, in order: refuses one bare number, a set, text and fractions (and an
    empty list unless ``empty_ok``)."""
    if isinstance(values, (str, bytes)) or not isinstance(values, Sequence):
        if isinstance(values, int) and not isinstance(values, bool):
            raise TypeError(
                f"{name}={values}: {name} takes a list of {what}; for this one alone write {name}=[{values}]."
            )
        unordered = isinstance(values, (set, frozenset))
        order = " (a set has no order, but the order matters here)" if unordered else ""
        raise TypeError(f"{name}={_kind(values)}: {name} takes a list of {what}{order}, e.g. {name}={example}.")
    out = []
    for v in values:
        try:
            if isinstance(v, bool):
                raise TypeError
            n = operator.index(v)
        except TypeError:
            raise TypeError(f"{name} holds {_kind(v)}: {what} are whole numbers, e.g. {name}={example}.") from None
        if n < minimum:
            raise ValueError(f"{name} holds {n}: {what} are ≥ {minimum}, e.g. {name}={example}.")
        out.append(n)
    if not out and not empty_ok:
        raise ValueError(
            f"{name}={_kind(values)} is empty: {name} takes at least one of the {what}, e.g. {name}={example}."
        )
    return tuple(out)


def index_list(values: Any, name: str, *, example: str = "[2, 3]") -> tuple[int, ...]:
    """Physical GPU numbers in order (the first becomes ``cuda:0``): refuses one bare number, sets and fractions."""
    if isinstance(values, int) and not isinstance(values, bool):
        raise TypeError(
            f"{name}={values}: {name} takes a list of physical GPU numbers, in order. For GPU {values} "
            f"alone write {name}=[{values}]."
        )
    if isinstance(values, (set, frozenset)):
        raise TypeError(
            f"{name}={_kind(values)}: {name} takes a list of physical GPU numbers in order (a set has no "
            f"order, but the first GPU becomes cuda:0), e.g. {name}={example}."
        )
    return whole_numbers(values, name, example=example, what="physical GPU numbers (nvidia-smi's, from 0)")


def path_or_none(value: Any, name: str) -> str | os.PathLike[str] | None:
    """``value`` if it is a path (``str`` or ``os.PathLike``) or None (the default folder), else ``TypeError``."""
    if value is not None and not isinstance(value, (str, os.PathLike)):
        raise TypeError(
            f"{name}={_kind(value)}: {name} takes a directory path (a str or pathlib.Path), or None for the default."
        )
    return value
