"""How quiet this machine is now: the machine it is, its load average and the ceiling 2 processes reach (a probe).

A chapter whose lessons read timings prints this once, at its top, so that a learner knows what kind of run they are
reading; ``tools/execute_notebooks.py`` reads the same line from the chapter it ran and refuses to save a run that was
not quiet. The measure is chapter 07's ceiling (``probes.machine_ceiling``: 2 independent single-threaded processes ÷
1), which another program holding a core pulls down, and the load average beside it. Taught in
``notebooks/07_scaling.ipynb``.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

from ..core.verdicts import Verdict
from ..machine.host import host_info
from .probes import Ceiling, machine_ceiling
from .run_verdicts import DISTURBED_ABOVE, QUIET_CEILING, quiet_verdict

__all__ = ["Quietness", "how_quiet", "read_quietness", "QUIET_LINE"]

QUIET_LINE = "this run's machine:"  # how the line starts, for tools/execute_notebooks.py to find it
_VERDICT = re.compile(re.escape(QUIET_LINE) + r".*?ceiling (?P<ceiling>[\d.]+)×.*?(?P<word>quiet|not quiet)\b")


@dataclass(frozen=True)
class Quietness:
    """The machine a run is on and how quiet it was: its CPU, usable cores, load average and 2-process ceiling."""

    cpu_model: str
    usable_cores: int
    load_1min: float
    ceiling: Ceiling

    @property
    def disturbed(self) -> bool:
        """A ceiling above 2× (beyond the timer's noise): another program slowed the 1-process run, so not quiet."""
        return self.ceiling.speedup > DISTURBED_ABOVE

    @property
    def verdict(self) -> Verdict:
        """Quiet when 2 processes reached ``QUIET_CEILING`` × one or more, and the 1-process run was undisturbed."""
        if self.disturbed:
            return Verdict(
                False,
                "a quiet machine",
                f"ceiling {self.ceiling.speedup:.2f}×, above the 2× two processes can reach: another program slowed "
                f"the 1-process run (load average {self.load_1min:.2f} on {self.usable_cores} core(s))",
            )
        return quiet_verdict(self.ceiling.speedup, self.load_1min, self.usable_cores)

    def __str__(self) -> str:
        word = "quiet" if self.verdict.held else "not quiet"
        if self.disturbed:
            why = "above 2×: another program slowed the 1-process run, so this run's timings are disturbed"
        elif self.verdict.held:
            why = f"a quiet machine reads {QUIET_CEILING}× or more"
        else:
            why = (
                f"below the {QUIET_CEILING}× of a quiet machine: other programs held a core, so this run's timings "
                "are slower and more scattered than the machine allows"
            )
        return (
            f"{QUIET_LINE} {self.cpu_model}, {self.usable_cores} usable core(s); load average {self.load_1min:.2f}; "
            f"ceiling {self.ceiling.speedup:.2f}× → {word} ({why})"
        )


def how_quiet() -> Quietness:
    """Measure now: ``machine_ceiling()`` (about a second) and the 1-minute load average."""
    host = host_info()
    return Quietness(host.cpu_model, host.usable_cores, os.getloadavg()[0], machine_ceiling())


def read_quietness(text: str) -> tuple[float, bool] | None:
    """The ceiling and the quiet/not-quiet word from a printed ``Quietness`` line in ``text`` (None: no such line)."""
    m = _VERDICT.search(text)
    return (float(m.group("ceiling")), m.group("word") == "quiet") if m else None
