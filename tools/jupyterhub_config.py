"""JupyterHub for a GPU workshop: every student gets their own free GPU, in one of two models.

Choose the model with the environment variable ``GPULAB_HUB_MODEL`` when starting the Hub (or edit ``MODEL`` below):

``kernel`` (the default) — **every kernel reserves.** Single-user servers start as usual and hold no GPU. A student
    picks the gpulab kernel in JupyterLab's launcher ("Python 3 · 1 free GPU (gpulab)"); starting it reserves a free GPU
    for that kernel alone and shutting it down (or the server's culling of an idle kernel, or a crash) gives it back.
    Set up once, in the Python environment the single-user servers run (as root, or the owner of that environment)::

        pip install -c constraints-server.txt -e '.[lightning,lab,hub]'     # from a checkout of this repository
        python -m gpulab kernelspec install --n-gpus 1 --sys-prefix    # the kernelspec, for every user

    Each single-user server loads ``tools/workshop_server_config.py`` (the course's settings and culling of idle
    kernels: a forgotten kernel gives its GPU back; ``GPULAB_CULL_IDLE_S`` when starting the Hub sets the idle time,
    1800 s by default). Students who should not bypass the reservation can be kept to the gpulab kernel with
    ``c.KernelSpecManager.allowed_kernelspecs`` in that file (the plain "Python 3" kernel sees every GPU).

``server`` — **every server reserves.** The Hub reserves ``GPUS_PER_SERVER`` free GPUs before a student's server starts
    and gives them back when it stops (``gpulab.server.hub.gpu_hooks``). Every kernel of that server sees only those
    GPUs. Use it when a server should own its GPUs for the whole session, e.g. with DockerSpawner (see the end of
    this file). A server that dies (``kill -9``, out of memory) gives its GPUs back within ``c.Spawner.poll_interval``
    seconds, when the Hub's poll notices; a Hub restart stops every server first (``cleanup_servers``, kept True),
    and a Hub started again after a crash reserves again the GPUs of the servers that outlived it.

When no GPU is free, the student's spawn page (server model) or JupyterLab's kernel error (kernel model) names who
holds each GPU and what to do. ``python -m gpulab watch`` in a terminal shows the room: every GPU, its reservation, and
the user, server or kernel behind it.

Start it with ``jupyterhub -f tools/jupyterhub_config.py`` (``GPULAB_SIMULATE_GPUS=idle-8`` rehearses on a described
8-GPU server). Choose an authenticator for your site (JupyterHub's default, PAM, uses the machine's Unix accounts:
each student's server then runs as that user, which the reservations' "who" relies on).
"""

import os
import sys
from pathlib import Path

c = get_config()  # noqa: F821 - provided by the config loader

MODEL = os.environ.get("GPULAB_HUB_MODEL", "kernel")
GPUS_PER_SERVER = 1  # server model: GPUs each single-user server reserves
TOOLS = Path(__file__).resolve().parent

# The single-user server is this environment's (the one gpulab and its kernelspec are installed in), whatever the
# students' PATH says.
c.Spawner.cmd = [sys.executable, "-m", "jupyterhub.singleuser"]
c.Spawner.default_url = "/lab"
# The course's server settings for a shared server: culling of idle kernels (a learner's own JupyterLab has none),
# JupyterLab's kernel state with the live monitor.
c.Spawner.args = [f"--config={TOOLS / 'workshop_server_config.py'}"]
# Every server and kernel reads the same reservations (and, in a rehearsal, the same described machine) as the Hub, and
# culls after the idle time the Hub was started with.
c.Spawner.environment = {
    k: os.environ[k]
    for k in ("GPULAB_RESERVATIONS_DIR", "GPULAB_SIMULATE_GPUS", "GPULAB_CULL_IDLE_S")
    if k in os.environ
}

# How soon the Hub notices a server that died by itself (JupyterHub's default is 30 s). In the server model this is
# how long a killed server's GPUs stay reserved; each poll is one waitpid (or one container inspection) per server.
c.Spawner.poll_interval = 10
# A Hub that stops stops every server with it (JupyterHub's default, said here because the server model relies on it):
# the Hub's reservations end with the Hub process. (Servers that outlive a Hub killed by a crash get their GPUs
# reserved again by the next Hub, which gpu_hooks does as it reads this file.)
c.JupyterHub.cleanup_servers = True
# JupyterHub's proxy: the one `make install` put beside the venv (npm), if there is one; otherwise the
# configurable-http-proxy on the PATH (npm install -g configurable-http-proxy).
CHP = TOOLS.parent / ".venv" / "node" / "node_modules" / ".bin" / "configurable-http-proxy"
if CHP.exists():
    c.ConfigurableHTTPProxy.command = [str(CHP)]

if MODEL == "server":
    from gpulab.server.hub import gpu_hooks

    c.Spawner.pre_spawn_hook, c.Spawner.post_stop_hook = gpu_hooks(n_gpus=GPUS_PER_SERVER)
    # Optional: what free means, e.g. gpu_hooks(n_gpus=1, policy={"max_memory_used_fraction": 0.05}).
    # A server left open holds its GPUs all day. JupyterHub's idle culler (pip install jupyterhub-idle-culler) stops
    # servers idle for an hour, which gives their GPUs back:
    #   c.JupyterHub.load_roles = [{"name": "idle-culler", "services": ["idle-culler"],
    #       "scopes": ["list:users", "read:users:activity", "read:servers", "delete:servers"]}]
    #   c.JupyterHub.services = [{"name": "idle-culler",
    #       "command": [sys.executable, "-m", "jupyterhub_idle_culler", "--timeout=3600"]}]
elif MODEL != "kernel":
    raise ValueError(
        f"GPULAB_HUB_MODEL={MODEL!r} is not a model of tools/jupyterhub_config.py: use 'kernel' (every "
        "kernel reserves its GPU: the gpulab kernelspec) or 'server' (every single-user server reserves "
        "its GPUs, from the Hub)."
    )

# DockerSpawner, server model: gpu_hooks also writes the reserved GPUs into the container's device_requests (by UUID),
# so exactly those GPUs are passed into it, and CUDA_VISIBLE_DEVICES (UUIDs too) names the same ones inside.
# Mount the reservations folder read-only so `python -m gpulab watch` works in the container:
#   c.JupyterHub.spawner_class = "dockerspawner.DockerSpawner"
#   c.DockerSpawner.image = "your-course-image"   # with the NVIDIA container toolkit on the host
#   c.DockerSpawner.volumes = {"/tmp/gpulab-reservations": {"bind": "/tmp/gpulab-reservations", "mode": "ro"}}
#   c.Spawner.cmd = ["jupyterhub-singleuser"]   # the image's own, not this environment's
#   c.Spawner.args = []
