"""Setting ``CUDA_VISIBLE_DEVICES`` from Python only while it still matters, and putting the environment back.

CUDA reads the variable once, when its driver starts in the process (``cuInit``): the first tensor on a GPU, but also
``torch.cuda.is_available()`` (it asks the CUDA runtime for a device count). After that, writing ``os.environ`` changes
nothing for this process (PyTorch issues 9158, 23544, 40618, 80876); ``import torch`` alone, which loads the driver
library on a GPU machine, does not start it. ``set_visible_devices`` therefore refuses, with the way out, where
``cuda_state()`` has evidence that CUDA read the variable; where it cannot tell, it sets the variable and warns
(``CudaStartUnverified``) instead of refusing. ``patched_environ`` sets and restores variables exactly (tests, demos).
Taught in ``notebooks/02_choosing_gpus.ipynb``.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterator, Mapping, MutableMapping, Sequence
from contextlib import AbstractContextManager, contextmanager

from ..core.arguments import is_whole_number, shown
from ..core.visible_text import VisibleSpec, format_visible_devices, parse_visible_devices
from ..machine.cuda import CudaState, cuda_state

__all__ = [
    "CudaAlreadyStarted",
    "CudaStartUnverified",
    "set_visible_devices",
    "write_visible_devices",
    "refusal",
    "unverified",
    "patched_environ",
    "apply_environ",
]

_ORDERS = ("PCI_BUS_ID", "FASTEST_FIRST")


class CudaAlreadyStarted(RuntimeError):
    """Raised instead of writing a ``CUDA_VISIBLE_DEVICES`` that CUDA would never read."""


class CudaStartUnverified(UserWarning):
    """Warned after writing ``CUDA_VISIBLE_DEVICES`` where gpulab could not tell whether CUDA had already read it."""


def set_visible_devices(gpus: Sequence[int | str] | str | None, *, order: str | None = "PCI_BUS_ID") -> VisibleSpec:
    """Set ``CUDA_VISIBLE_DEVICES`` (and ``CUDA_DEVICE_ORDER``) for this process, if CUDA has not read them yet.

    ``gpus``: physical indices or UUIDs in the order ``cuda:0, cuda:1, …`` should get them (``[2, 3]``), the raw
    string, ``[]``/``""`` to hide every GPU, or ``None`` to unset the variable (every GPU visible). ``order`` defaults
    to ``PCI_BUS_ID`` so that indices mean what nvidia-smi shows; ``None`` leaves ``CUDA_DEVICE_ORDER`` alone.
    Raises ``CudaAlreadyStarted`` (nothing changed) once CUDA has read the variable here, ``ValueError`` for a list CUDA
    would cut short; warns ``CudaStartUnverified`` (and sets it) where that cannot be told. Returns the parsed value.
    Processes started afterwards inherit it.
    """
    if order is not None and order not in _ORDERS:
        raise ValueError(
            f"CUDA_DEVICE_ORDER must be one of {', '.join(_ORDERS)}, not {shown(order)}; PCI_BUS_ID "
            "makes GPU indices match nvidia-smi."
        )
    if gpus is None:
        value = None
    elif isinstance(gpus, str):
        value = gpus if gpus.strip() in ("", "-1") else format_visible_devices(gpus.split(","))
    elif isinstance(gpus, Sequence) and not isinstance(gpus, bytes):
        value = format_visible_devices(list(gpus))
    elif is_whole_number(gpus):
        raise TypeError(
            f"set_visible_devices({gpus}) is ambiguous: for physical GPU {gpus} alone write "
            f"set_visible_devices([{gpus}]); to have {gpus} free GPU(s) chosen for you, use "
            f"gpulab.reserve_gpus({gpus}) and then .apply()."
        )
    else:
        unordered = (
            " (a set has no order, but the first GPU becomes cuda:0)" if isinstance(gpus, (set, frozenset)) else ""
        )
        raise TypeError(
            f"set_visible_devices takes a list of GPUs in the order cuda:0, cuda:1, … should get them"
            f"{unordered}, e.g. [2, 3]; or the variable's text '2,3'; or None to unset it. Got a "
            f"{type(gpus).__name__} {shown(gpus)}."
        )
    spec, unsure = write_visible_devices(value, order)
    if unsure is not None:
        warnings.warn(unsure, CudaStartUnverified, stacklevel=3)  # the caller of the wrapper
    return spec


def write_visible_devices(value: str | None, order: str | None) -> tuple[VisibleSpec, str | None]:
    """Write a validated ``value`` (``None``: unset) unless CUDA has read the variable here (``CudaAlreadyStarted``).

    Returns the parsed value and, where gpulab cannot tell whether CUDA read it, what to say about that (``None``
    otherwise): the picker shows it, ``set_visible_devices`` warns it."""
    state = cuda_state()
    read = state.variable_read
    if read is True:
        raise CudaAlreadyStarted(refusal(value, state))
    if order is not None:
        os.environ["CUDA_DEVICE_ORDER"] = order
    if value is None:
        os.environ.pop("CUDA_VISIBLE_DEVICES", None)
    else:
        os.environ["CUDA_VISIBLE_DEVICES"] = value
    return parse_visible_devices(value), (unverified(value, state) if read is None else None)


def refusal(value: str | None, state: CudaState) -> str:
    """Why ``set_visible_devices`` will not write ``value`` once CUDA has started (``state`` names the line that
    started it, when gpulab was imported first)."""
    current = os.environ.get("CUDA_VISIBLE_DEVICES")
    return (
        f"not setting CUDA_VISIBLE_DEVICES={value!r}: {state} This process keeps the GPUs it started with "
        f"(CUDA_VISIBLE_DEVICES={current!r} then). Restart the kernel and run this cell first, before any cell "
        "that imports a model or asks torch.cuda anything; or set the variable where the program is started "
        "(`CUDA_VISIBLE_DEVICES=2,3 python train.py`)."
    )


def unverified(value: str | None, state: CudaState) -> str:
    """What ``set_visible_devices`` says after setting ``value`` where it could not tell whether CUDA had read it."""
    return (
        f"set CUDA_VISIBLE_DEVICES={value!r}, but could not verify that CUDA had not read it already: {state} "
        "If a line before this one started CUDA, this process keeps the GPUs it started with; to be sure, "
        "restart the kernel and run this cell first. Processes started from here get the new value either way."
    )


def patched_environ(**values: str | None) -> AbstractContextManager[None]:
    """Set (or, with ``None``, remove) environment variables inside a ``with`` block, then restore them exactly.

    For tests and demonstrations that run child processes. It does not make CUDA re-read anything in this process.
    Values are validated here, when it is called, so a wrong one stops the cell before the block runs.
    """
    for k, v in values.items():
        if v is not None and not isinstance(v, str):
            fix = ",".join(map(str, v)) if isinstance(v, (list, tuple)) else str(v)
            raise TypeError(
                f"patched_environ({k}={shown(v)}): environment values are text, as in a shell; write "
                f"{k}={fix!r}, or {k}=None to remove the variable inside the block."
            )
    return _patched(values)


@contextmanager
def _patched(values: Mapping[str, str | None]) -> Iterator[None]:
    saved = {k: os.environ.get(k) for k in values}
    try:
        apply_environ(values)
        yield
    finally:
        apply_environ(saved)


def apply_environ(values: Mapping[str, str | None], environ: MutableMapping[str, str] = os.environ) -> None:
    """Write each variable into ``environ`` (default: this process's), removing those whose value is ``None``."""
    for k, v in values.items():
        if v is None:
            environ.pop(k, None)
        else:
            environ[k] = v
