"""Whether anyone would see a live figure: the monitor draws live only in a kernel that a Jupyter server started."""

from __future__ import annotations

import os
import sys

from ..core.settings import env_flag


def frontend_available() -> bool:
    """Whether a live widget would be seen: an IPython kernel started by a Jupyter server (JupyterLab, Notebook).

    Headless runners (nbval, nbconvert, nbclient) start kernels without a server, so they get the static figure only.
    ``GPULAB_MONITOR_LIVE=1`` / ``0`` overrides the guess (VS Code, Colab).
    """
    forced = env_flag("GPULAB_MONITOR_LIVE", None, meaning="to draw the live figure, 0 for the final one only")
    if forced is not None:
        return forced
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None
    return shell is not None and hasattr(shell, "kernel") and bool(os.environ.get("JPY_SESSION_NAME"))
