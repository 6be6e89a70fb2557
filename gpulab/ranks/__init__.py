"""Ranks from a notebook cell: ``gpulab.launch(train, world_size=2)`` and ``%%ranks 2``, and whether DDP is faster here.

``launcher`` runs a notebook function on N ranks: ``launch_plan`` decides and validates what a launch will do (backend,
each rank's device from ``plan``, threads, environment, ports) before anything starts, and ``runner`` carries the plan
out (``worker`` is what runs inside each rank, ``fork_server`` where ranks come from, ``rank_output`` their output in
the cell, ``failures`` their errors); ``own_device`` runs a function on the device the plan gave its rank. ``cells``
does the same for a cell's code, ``speed`` measures samples/s of one process against DDP on 1 and 2 ranks; ``orphans``
ends a helper interpreter's process group when the kernel that started it dies (the fork experiment's). Taught in
``notebooks/04_ddp.ipynb``.
"""

from ..core.lazy import export_lazily

export_lazily(
    __name__,
    {
        "launch": "launcher",
        "last_launch": "launcher",
        "RankFailed": "failures",
        "warm_up_launcher": "fork_server",
        "rank_speedup": "speed",
    },
)
