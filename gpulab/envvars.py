"""Setting ``CUDA_VISIBLE_DEVICES`` from Python only while it still matters, and putting the environment back.

CUDA reads the variable once, when its driver starts in the process: the first tensor on a GPU, but also
``torch.cuda.is_available()`` (it asks the CUDA runtime for a device count). After that, writing ``os.environ`` changes
nothing for this process (PyTorch issues 9158, 23544, 40618, 80876). ``set_visible_devices`` therefore refuses, with
the way out, once CUDA has started here; ``patched_environ`` sets and restores variables exactly (tests, demos).
Taught in ``notebooks/02_choosing_gpus.ipynb``.
"""
from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from .visible import VisibleSpec, format_visible_devices, parse_visible_devices

__all__ = ["CudaState", "cuda_state", "CudaAlreadyStarted", "set_visible_devices", "patched_environ",
           "driver_in_maps", "ShellRun", "run_shell"]

_ORDERS = ("PCI_BUS_ID", "FASTEST_FIRST")


@dataclass(frozen=True)
class CudaState:
    """Has CUDA started in this process, and has it therefore already read ``CUDA_VISIBLE_DEVICES``?"""

    torch_imported: bool
    initialized: bool  # torch.cuda.is_initialized(): a CUDA context exists in this process
    driver_loaded: bool  # libcuda is mapped: something (is_available, device_count, a library) started the driver

    @property
    def variable_read(self) -> bool:
        """True once CUDA has read the variable here; from then on changing it has no effect in this process."""
        return self.initialized or self.driver_loaded

    def __str__(self) -> str:
        if self.initialized:
            return ("CUDA is initialised in this process (torch.cuda.is_initialized() is True): CUDA_VISIBLE_DEVICES "
                    "was read when it started, and changing it now has no effect here.")
        if self.driver_loaded:
            return ("The CUDA driver (libcuda) is loaded in this process, so CUDA has already read "
                    "CUDA_VISIBLE_DEVICES (torch.cuda.is_available() is enough to do that); changing it now has no "
                    "effect here.")
        return ("CUDA has not started in this process" + ("" if self.torch_imported else " (torch is not even imported)")
                + ": CUDA_VISIBLE_DEVICES can still be changed, and the first CUDA call will read it.")

    def _repr_html_(self) -> str:
        import html

        return f"<p>{html.escape(str(self))}</p>"


def driver_in_maps(maps_text: str) -> bool:
    """True if a ``/proc/<pid>/maps`` listing shows the CUDA driver library (``libcuda.so``) mapped in (pure)."""
    return any(line.rstrip().rsplit("/", 1)[-1].startswith("libcuda.so") for line in maps_text.splitlines())


def cuda_state() -> CudaState:
    """Ask, without starting anything, whether CUDA has started in this process (the guard's only probe)."""
    torch = sys.modules.get("torch")
    initialized = bool(torch is not None and torch.cuda.is_initialized())
    try:
        maps = Path("/proc/self/maps").read_text()
    except OSError:  # not Linux: only torch's own flag can tell
        maps = ""
    return CudaState(torch is not None, initialized, driver_in_maps(maps))


class CudaAlreadyStarted(RuntimeError):
    """Raised instead of writing a ``CUDA_VISIBLE_DEVICES`` that CUDA would never read."""


def set_visible_devices(devices: Sequence[int | str] | str | None, *, order: str | None = "PCI_BUS_ID") -> VisibleSpec:
    """Set ``CUDA_VISIBLE_DEVICES`` (and ``CUDA_DEVICE_ORDER``) for this process, if CUDA has not read them yet.

    ``devices``: physical indices or UUIDs in the order ``cuda:0, cuda:1, …`` should get them (``[2, 3]``), the raw
    string, ``[]``/``""`` to hide every GPU, or ``None`` to unset the variable (every GPU visible). ``order`` defaults
    to ``PCI_BUS_ID`` so that indices mean what nvidia-smi shows; ``None`` leaves ``CUDA_DEVICE_ORDER`` alone.
    Raises ``CudaAlreadyStarted`` (nothing changed) once CUDA has started here, ``ValueError`` for a list CUDA would
    cut short. Returns the parsed value. Processes started afterwards inherit it.
    """
    if order is not None and order not in _ORDERS:
        raise ValueError(f"CUDA_DEVICE_ORDER must be one of {', '.join(_ORDERS)}, not {order!r}; PCI_BUS_ID makes "
                         "GPU indices match nvidia-smi.")
    if devices is None:
        value = None
    elif isinstance(devices, str):
        value = devices if devices.strip() in ("", "-1") else format_visible_devices(devices.split(","))
    else:
        value = format_visible_devices(list(devices))
    state = cuda_state()
    if state.variable_read:
        current = os.environ.get("CUDA_VISIBLE_DEVICES")
        raise CudaAlreadyStarted(
            f"not setting CUDA_VISIBLE_DEVICES={value!r}: {state} This process keeps the GPUs it started with "
            f"(CUDA_VISIBLE_DEVICES={current!r} then). Restart the kernel and run this cell first, before any cell "
            "that imports a model or asks torch.cuda anything; or set the variable where the program is started "
            "(`CUDA_VISIBLE_DEVICES=2,3 python train.py`)."
        )
    if order is not None:
        os.environ["CUDA_DEVICE_ORDER"] = order
    if value is None:
        os.environ.pop("CUDA_VISIBLE_DEVICES", None)
    else:
        os.environ["CUDA_VISIBLE_DEVICES"] = value
    return parse_visible_devices(value)


@contextmanager
def patched_environ(**values: str | None) -> Iterator[None]:
    """Set (or, with ``None``, remove) environment variables inside a ``with`` block, then restore them exactly.

    For tests and demonstrations that run child processes. It does not make CUDA re-read anything in this process.
    """
    saved = {k: os.environ.get(k) for k in values}
    try:
        _apply_environ(values)
        yield
    finally:
        _apply_environ(saved)


def _apply_environ(values: dict[str, str | None]) -> None:
    """Write each variable, removing those whose value is ``None``."""
    for k, v in values.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v


@dataclass(frozen=True)
class ShellRun:
    """A shell script that really ran, and what it printed: how a started program inherits the environment."""

    script: str
    output: str
    returncode: int

    def __str__(self) -> str:  # bash -v echoed each line of the script before running it, so the two interleave
        return self.output.rstrip() + (f"\n(exit status {self.returncode})" if self.returncode else "")

    def _repr_html_(self) -> str:
        import html

        return f"<pre>{html.escape(str(self))}</pre>"


def run_shell(script: str, *, cwd: str | os.PathLike[str] | None = None, env: Mapping[str, str | None] | None = None,
              timeout_s: float = 60.0) -> ShellRun:
    """Run ``script`` with bash in a fresh process, as from a terminal where ``CUDA_VISIBLE_DEVICES`` is unset.

    Each line of the script is echoed (``bash -v``) before its output, so the result reads like a terminal session.
    ``env`` adds (or, with ``None``, removes) variables; ``python`` is this kernel's interpreter. Output is stdout
    and stderr together, in order.
    """
    base = {k: v for k, v in os.environ.items() if not k.startswith("CUDA_")}
    base["PATH"] = os.path.dirname(sys.executable) + os.pathsep + base.get("PATH", "")
    for k, v in (env or {}).items():
        if v is None:
            base.pop(k, None)
        else:
            base[k] = v
    done = subprocess.run(["bash", "-c", "set -v\n" + script.strip()], cwd=cwd, env=base, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, timeout=timeout_s)
    return ShellRun(script, done.stdout, done.returncode)
