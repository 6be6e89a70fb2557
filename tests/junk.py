"""What a hurried learner might type where a gpulab argument goes, and the check that a refusal is one of ours.

``JUNK`` draws values of every kind (numbers of the wrong size or type, text, presets, lists, dicts, sets, bytes,
objects). ``assert_ours(exc)`` passes only for an exception of a documented type raised by a ``raise`` statement in
gpulab itself — a refusal with our message — and fails for anything escaping from inside a helper or a library
(an ``AttributeError``, a ``TypeError`` from ``int()``, a ``RecursionError``, torch's own errors).
"""

from __future__ import annotations

import linecache
import traceback
from pathlib import Path

from hypothesis import strategies as st

GPULAB = Path(__file__).resolve().parents[1] / "gpulab"
DOCUMENTED = (TypeError, ValueError, RuntimeError, IndexError, OSError)


class _Thing:
    """An object of no useful kind (what a learner passes by mistake: a model, a module, a class instance)."""

    def __repr__(self) -> str:
        return "<a thing>"


JUNK = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-5, 300),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12),
    st.binary(max_size=6),
    st.sampled_from(
        [
            "workshop-8",
            "two-gpus-mig",
            "",
            "free:2",
            "2,3",
            "0x1",
            "2;3",
            "cuda:1",
            "cpu",
            "gpu",
            "-1",
            "GPU-",
            "9" * 5000,
            2**70,
            -(2**70),
            float("nan"),
            (),
            [],
            {},
            set(),
            frozenset({1}),
            _Thing(),
            int,
            object,
            Path("workshop-8"),
        ]
    ),
    st.lists(st.one_of(st.integers(-3, 12), st.floats(-2, 12), st.text(max_size=4), st.none()), max_size=4),
    st.dictionaries(st.text(max_size=5), st.one_of(st.text(max_size=5), st.integers(), st.none()), max_size=3),
    st.tuples(st.integers(-2, 9), st.text(max_size=3)),
    st.sets(st.integers(0, 9), max_size=3),
)


def raised_by_gpulab(exc: BaseException) -> tuple[bool, str]:
    """Whether the innermost frame is a ``raise`` statement in gpulab's source, and where that frame is."""
    last = traceback.extract_tb(exc.__traceback__)[-1]
    source = linecache.getline(last.filename, last.lineno).strip()
    inside = Path(last.filename).resolve().is_relative_to(GPULAB)
    return inside and source.startswith("raise"), f"{last.filename}:{last.lineno}: {source}"


def assert_ours(exc: BaseException) -> None:
    """Fail unless ``exc`` is a documented exception raised, with our message, by gpulab itself."""
    ours, where = raised_by_gpulab(exc)
    assert isinstance(exc, DOCUMENTED) and ours, f"{type(exc).__name__}: {str(exc)[:300]} escaped from {where}"
    assert len(str(exc)) > 30, f"too terse to help: {exc!r}"
