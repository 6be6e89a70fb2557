"""The whole server as the room sees it: every GPU, who holds it (their processes and reservations), redrawn live;
and the workshop server's kernels, each started holding its own free GPUs.

``watch`` reads the server and shows it (``python -m gpulab watch``, or ``watch_gpus()`` in a notebook), ``render``
draws one reading as text and HTML, ``owners`` says whose process is which (Unix user, kernel), ``reservation_list``
lists each reservation's holder (user, kernel, notebook, idle time), ``release`` ends one's own. ``provisioner`` is the
jupyter_client kernel provisioner that gives each kernel free GPUs, through ``reservation_start``; ``kernelspec``
installs the kernelspecs that use it (``python -m gpulab kernelspec install``); ``hub`` holds JupyterHub's hooks for
its "every server reserves" model (``gpu_hooks``), which step aside where a scheduler places the servers
(``scheduler_spawners``: batchspawner, KubeSpawner). Taught in
``notebooks/workshop_guide.ipynb``.
"""

from ..core.lazy import export_lazily

export_lazily(
    __name__,
    {
        "watch_gpus": "watch",
        "read_server": "watch",
        "release_gpu": "release",
        "install_kernelspec": "kernelspec",
        "reservation_rows": "reservation_list",
        "gpu_hooks": "hub",
    },
)
