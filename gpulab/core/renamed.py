"""Keywords that gpulab renamed: an old spelling stops the call with the new one named (pure).

Each parameter name means one kind of value across the public API: ``machine=`` says which machine (a reader, a
preset name such as ``'workshop-8'`` or a JSON file, resolved by ``gpulab.machine.resolve.as_reader``), ``gpus=``
says which GPUs (physical indices, UUIDs, or the ``GpuInfo``s already read), ``n_gpus=`` how many, and
``reservations=`` which folder holds the reservations. Older versions spelled these ``reader=``, ``directory=`` and
``devices=``; a notebook written for them gets a ``TypeError`` that says what to write now, instead of Python's bare
"unexpected keyword argument".

The number of ranks a launch starts is ``world_size=``, torch.distributed's own word (``dist.get_world_size()``,
``$WORLD_SIZE``); it was ``nprocs=``.
"""

from __future__ import annotations

import difflib
import functools
import inspect
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["renamed_keywords", "MEANINGS"]

F = TypeVar("F", bound=Callable[..., Any])

MEANINGS = {
    "machine": "which machine: a reader, a preset name such as 'workshop-8', or a JSON file",
    "gpus": "which GPUs: physical indices, as nvidia-smi numbers them, UUIDs, or the GpuInfos gpulab.devices() read",
    "reservations": "the folder that holds the GPU reservations, /tmp/gpulab-reservations by default",
    "world_size": "how many processes (ranks) to start, torch.distributed's WORLD_SIZE",
    "n_gpus": "how many GPUs, a count; gpus= always names which GPUs",
}


def renamed_keywords(**renames: str) -> Callable[[F], F]:
    """``@renamed_keywords(reader="machine")``: calling with ``reader=`` raises ``TypeError`` naming ``machine=``.

    A keyword the function never had is refused too, with the closest one it has ("did you mean gpus=?") where
    Python would only say "unexpected keyword argument". The wrapped function keeps its signature
    (``inspect.signature``, Tab completion and Jupyter's ``?`` show the new names only).
    """

    def wrap(fn: F) -> F:
        label = fn.__qualname__.removesuffix(".__init__")
        known: list[str] = []

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            __tracebackhide__ = True  # IPython: the learner's cell, then the message; not this wrapper
            for old, new in renames.items():
                if old in kwargs:
                    raise TypeError(
                        f"{label}() has no {old}= any more: write {new}= ({MEANINGS[new]}). "
                        f"gpulab gives each kind of value one name in every function, so {old}= was "
                        f"renamed {new}=; the value you passed can stay as it is."
                    )
            if not known:
                known.extend(_keywords(fn))
            unknown = [k for k in kwargs if k not in known]
            if unknown and "**" not in known:
                close = difflib.get_close_matches(unknown[0], known, n=1)
                raise TypeError(
                    f"{label}() has no option {unknown[0]!r}"
                    + (f"; did you mean {close[0]}=?" if close else ".")
                    + f" Its options are {', '.join(k for k in known if k not in ('self', 'title'))}."
                )
            return fn(*args, **kwargs)

        return wrapper  # type: ignore[return-value]

    return wrap


def _keywords(fn: Callable[..., Any]) -> list[str]:
    """The names ``fn`` takes by keyword, and ``"**"`` when it takes any."""
    out = []
    for p in inspect.signature(fn).parameters.values():
        if p.kind is p.VAR_KEYWORD:
            out.append("**")
        elif p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY):
            out.append(p.name)
    return out
