"""Keeps Lightning's "`srun` is available but not used" warning out of a notebook that runs under no SLURM job.

Lightning 2.x warns on stderr whenever an ``srun`` command is on ``PATH`` and the process is not a SLURM task
(``lightning/fabric/plugins/environments/slurm.py``, ``SLURMEnvironment._validate_srun_used``): when a ``Trainer``
is built, and again at ``fit()``. On a login node or any machine with SLURM's client installed, every notebook fit then
prints it, and its advice (prepend ``srun`` to the python command) cannot apply to a notebook kernel. It is a
``PossibleUserWarning``, a ``UserWarning``.

``quiet_srun_notice()`` drops exactly that message, matched by its first words, and only where ``srun`` is on
``PATH`` and the process is in no SLURM job (no ``SLURM_JOB_ID``): inside a job the warning may be right, and
``docs/clusters.md`` says what a notebook there sets itself. It adds a filter to this process (the kernel, and the
ranks it forks) and the same filter to ``PYTHONWARNINGS`` for the processes it starts (scripts, torchrun, fresh
interpreters), which cannot import gpulab. Every other warning stays. ``%load_ext gpulab`` calls it. Taught in
``notebooks/06_lightning.ipynb``.
"""

from __future__ import annotations

import os
import re
import shutil
import warnings
from collections.abc import MutableMapping

__all__ = ["SRUN_NOTICE", "PYTHONWARNINGS_ENTRY", "srun_notice_is_noise", "quiet_srun_notice"]

SRUN_NOTICE = "The `srun` command is available on your system but is not used"  # Lightning 2.0 … 2.6
# Python's -W grammar (action:message:category): the message is matched as the start of the warning's text
PYTHONWARNINGS_ENTRY = f"ignore:{SRUN_NOTICE}:UserWarning"
_PATTERN = re.escape(SRUN_NOTICE)


def srun_notice_is_noise(environ: MutableMapping[str, str], *, srun_on_path: bool) -> bool:
    """Whether Lightning's srun warning would say nothing true here: ``srun`` exists but no SLURM job runs this
    process (a job sets ``SLURM_JOB_ID`` for everything in it, its batch script, ``salloc``'s shell and each task)."""
    return srun_on_path and not environ.get("SLURM_JOB_ID")


def _filter_installed() -> bool:
    return any(
        action == "ignore" and getattr(message, "pattern", None) == _PATTERN for action, message, *_ in warnings.filters
    )


def quiet_srun_notice(
    *, environ: MutableMapping[str, str] | None = None, srun_on_path: bool | None = None
) -> list[str]:
    """Drop Lightning's srun warning in this process and the processes it starts, where it is noise (above); returns
    what it did, in words. ``environ`` defaults to ``os.environ``; ``srun_on_path`` to whether ``srun`` is found on
    its ``PATH``. Calling it again adds nothing."""
    env = os.environ if environ is None else environ
    found = shutil.which("srun", path=env.get("PATH")) is not None if srun_on_path is None else srun_on_path
    if not srun_notice_is_noise(env, srun_on_path=found):
        return []
    done = []
    if not _filter_installed():
        warnings.filterwarnings("ignore", message=_PATTERN, category=UserWarning)
        done.append(f"this process: Lightning's '{SRUN_NOTICE}' warning is dropped")
    entries = [e for e in env.get("PYTHONWARNINGS", "").split(",") if e]
    if PYTHONWARNINGS_ENTRY not in entries:
        env["PYTHONWARNINGS"] = ",".join([*entries, PYTHONWARNINGS_ENTRY])
        done.append("PYTHONWARNINGS: the processes it starts drop it too")
    return done
