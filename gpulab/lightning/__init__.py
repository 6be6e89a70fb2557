"""Lightning's device flags, then and now, and gpulab's monitor inside a Lightning fit.

``call.py`` reads a ``Trainer(...)`` call as an article wrote it and writes one back; ``flag_history.py`` holds what
happened to each old flag and when (checked against Lightning's own sources and changelog); ``flags.py`` translates an
old call into today's, with ``device_flags.py`` and ``strategy.py`` for those two choices and ``draft.py`` for the
translation being built; ``translation.py`` is the result a learner reads. ``trainer_args.py`` builds real
``Trainer`` arguments from a translation. Three modules import Lightning: ``callback.py`` (the monitor callback),
``classifier.py`` (the digits model as a LightningModule) and ``fork_fit.py`` (the child side of ``fork_hang.py``,
which reproduces the ``ddp_fork`` hang after OpenMP in interpreters it can kill); ``step_relay.py`` carries a forked
rank 0's steps to the notebook's monitor. Taught in ``notebooks/06_lightning.ipynb``.
"""

from ..core.lazy import export_lazily

export_lazily(
    __name__,
    {
        "translate_trainer": "flags",
        "flag_history_table": "flag_history",
        "trainer_kwargs": "trainer_args",
        "fork_experiment": "fork_hang",
        "FAST_PLAN": "fork_hang",
        "FULL_PLAN": "fork_hang",
        "MonitorCallback": "callback",
    },
)
