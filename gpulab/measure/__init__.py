"""Measuring PyTorch work on any device, the CPU included: timing, transfers, memory.

``timing`` times work correctly on a GPU (on torch.utils.benchmark.Timer: warm-up, repeats, spread);
``transfer`` measures copies across the CPU↔GPU boundary; ``sizing`` counts a model's memory on the ``meta``
device; ``autotune`` measures ``cudnn.benchmark``. Taught in ``notebooks/01_cpu_gpu_transfer.ipynb`` (``autotune``
in ``06_lightning``).
"""

from ..core.lazy import export_lazily

export_lazily(
    __name__,
    {
        "bandwidth_sweep": "transfer",
        "module_size": "sizing",
        "allocated_bytes": "sizing",
        "autotune_comparison": "autotune",
    },
)
