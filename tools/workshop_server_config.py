"""Jupyter server settings for a workshop server whose GPUs are shared: the course's settings
(``tools/jupyter_server_config.py``, loaded first) and jupyter-server's culling of idle kernels.

Load it where students' kernels hold GPUs that others wait for: ``jupyter lab --config=tools/workshop_server_config.py``
on a shared server with the gpulab kernelspec, and in JupyterHub's single-user servers (``tools/jupyterhub_config.py``
passes it). Never for a learner's own JupyterLab: ``make lab`` loads ``jupyter_server_config.py`` alone, which does
not cull, since an idle kernel there is a learner who stepped away, with every variable and a trained model in it.

Idle GPUs come back. A kernel started from a gpulab kernelspec holds its GPUs until it ends; jupyter-server's own culler
ends kernels nobody has used for a while, and with them their reservations (gpulab adds no reaper of its own).
Workshop default: a kernel idle for 30 minutes is shut down, checked every minute, even while its notebook is still
open in a browser tab (cull_connected: a tab left open on a laptop must not keep a GPU from the room), but never while a
cell is running (cull_busy off: a long training run is not idle). The student's notebook stays; its kernel restarts with
a free GPU when they come back. ``GPULAB_CULL_IDLE_S`` in the server's environment changes the 30 minutes (0 turns
culling off).
"""

import os
from pathlib import Path

c = get_config()  # noqa: F821 - provided by the config loader

COURSE = Path(__file__).resolve().parent / "jupyter_server_config.py"
if not COURSE.is_file():  # traitlets' load_subconfig would skip a missing file without a word
    raise FileNotFoundError(
        f"{COURSE} is missing: {Path(__file__).name} adds culling to the course's settings in that file. Copy "
        "jupyter_server_config.py into the same folder as this file."
    )
load_subconfig(COURSE.name, path=str(COURSE.parent))  # noqa: F821 - provided by the config loader

CULL_IDLE_S_VAR = "GPULAB_CULL_IDLE_S"
try:
    CULL_IDLE_S = int(os.environ.get(CULL_IDLE_S_VAR, "1800"))
except ValueError:
    raise ValueError(
        f"{CULL_IDLE_S_VAR}={os.environ[CULL_IDLE_S_VAR]!r} is not a number of seconds: it says how long an idle "
        f"kernel keeps its GPUs before the server shuts it down. Write e.g. {CULL_IDLE_S_VAR}=1800 (30 minutes), or 0 "
        "for no culling."
    ) from None
if CULL_IDLE_S > 0:
    c.MappingKernelManager.cull_idle_timeout = CULL_IDLE_S
    c.MappingKernelManager.cull_interval = min(60, CULL_IDLE_S)
    c.MappingKernelManager.cull_connected = True
    c.MappingKernelManager.cull_busy = False
