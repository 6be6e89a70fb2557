"""``torch.nn.DataParallel`` taken apart: its devices, its steps by hand, the gradients it gives, its speed, what it
occupies.

``devices`` decides which GPUs DataParallel uses from the GPU count alone (pure), ``by_hand`` does one DataParallel
step in its five steps (on CPU threads where there are no GPUs), ``gradients`` checks it against one full-batch pass,
``throughput`` times it against batch size, ``footprint`` measures which GPUs a run occupies, ``unwrap`` takes the
model back out of the wrapper. Taught in ``notebooks/03_dataparallel.ipynb``.
"""
from ..core.lazy import export_lazily

export_lazily(__name__, {
    "data_parallel_step": "by_hand", "scatter_batch": "by_hand",
    "dataparallel_devices": "devices", "dataparallel_table": "devices",
    "compare_gradients": "gradients", "full_batch_gradients": "gradients", "gradients": "gradients",
    "training_throughput": "throughput", "VARIANTS": "footprint", "context_footprint": "footprint",
    "load_unwrapped": "unwrap", "strip_wrapper_prefixes": "unwrap", "unwrap": "unwrap",
})
