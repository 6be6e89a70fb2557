"""Watch memory, utilisation and speed while code runs: ``with gpulab.monitor("title") as mon: ...``.

``monitor.py`` holds the ``Monitor`` a learner uses; ``sampler.py`` the reading thread; ``history.py`` its ring buffer;
``summary.py`` what is left in the cell; ``view.py`` the figure (with ``limits``, ``decimate`` and ``png`` as its pure
helpers). Taught in ``notebooks/05_live_monitor.ipynb``.
"""
from .monitor import Monitor, frontend_available, monitor
from .summary import MonitorSummary, PeakMemory

__all__ = ["monitor", "Monitor", "MonitorSummary", "PeakMemory", "frontend_available"]
