"""Choosing GPUs and holding them: which are free, which one a line of PyTorch lands on, and
``CUDA_VISIBLE_DEVICES`` set while it still matters.

``setter`` sets the variable only while CUDA has not read it; ``device_rules`` predicts where each statement lands
(``explain``; ``explanation`` holds its result and ``cuda_errors`` the errors PyTorch would raise); ``allowed`` decides
which GPUs this process may choose among (``CUDA_VISIBLE_DEVICES``, a SLURM job's or Kubernetes pod's allocation; pure);
``selection`` decides which of them are free (pure); ``reservation`` holds them against other kernels, in the store of
``gpulab.reservations``; ``picker`` is the widget that does all of it by ticking boxes. Taught in
``notebooks/02_choosing_gpus.ipynb``.
"""

from ..core.lazy import export_lazily

export_lazily(
    __name__,
    {
        "set_visible_devices": "setter",
        "patched_environ": "setter",
        "choose_gpus": "selection",
        "NoFreeGpu": "selection",
        "reserve_gpus": "reservation",
        "GpuPicker": "picker",
    },
)
