"""Watch memory, utilisation and speed while code runs: ``with gpulab.monitor("title") as mon: ...``.

``live_monitor.py`` holds the ``Monitor`` a learner uses, ``options.py`` its validated options, ``watched.py`` the
loop it watches (``mon.wrap(loader)``) and ``frontend.py`` whether a live figure would be seen; ``sampler.py`` the
reading thread; ``ring_buffer.py`` the readings it keeps; ``summary.py`` what is left in the cell. ``figure.py`` is the
figure (what each panel shows, with ``style``, ``panels``, ``limits``, ``decimate`` and ``png`` as its pure helpers),
``blit.py`` draws it live cheaply, and ``view.py`` shows it live in JupyterLab. ``recorded.py`` keeps a run from a
real GPU machine and draws it again anywhere. Taught in ``notebooks/05_live_monitor.ipynb``.
"""

from ..core.lazy import export_lazily

export_lazily(
    __name__,
    {
        "monitor": "live_monitor",
        "Monitor": "live_monitor",
        "record_run": "recorded",
        "latest_recorded_run": "recorded",
    },
)
