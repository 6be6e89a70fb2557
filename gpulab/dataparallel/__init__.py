"""``torch.nn.DataParallel`` taken apart: its devices, its steps by hand, the gradients it gives, its speed, what it
occupies.

``device_ids`` decides which GPUs DataParallel uses from the GPU count alone (pure), ``by_hand`` does one
DataParallel step in its five steps (on CPU threads where there are no GPUs), ``gradient_comparison`` compares its
gradients with one full-batch pass, ``throughput`` times it against batch size, ``footprint`` measures which GPUs a run
occupies, ``wrappers`` takes the model back out of the wrapper. Taught in ``notebooks/03_dataparallel.ipynb``.
"""

from ..core.lazy import export_lazily

export_lazily(
    __name__,
    {
        "data_parallel_step": "by_hand",
        "scatter_batch": "by_hand",
        "dataparallel_devices": "device_ids",
        "dataparallel_table": "device_ids",
        "compare_gradients": "gradient_comparison",
        "full_batch_gradients": "gradient_comparison",
        "gradients": "gradient_comparison",
        "training_throughput": "throughput",
        "VARIANTS": "footprint",
        "context_footprint": "footprint",
        "load_unwrapped": "wrappers",
        "strip_wrapper_prefixes": "wrappers",
        "unwrap": "wrappers",
    },
)
