"""``torch.nn.DataParallel`` taken apart: its steps by hand, the weight each example gets, its speed, what it occupies.

``by_hand`` does one DataParallel step in its five steps (on CPU threads where there are no GPUs) and says the weight
each example's loss gets when the batch is cut into chunks, ``throughput`` times it against batch size, ``footprint``
measures which GPUs a run occupies, ``wrappers`` takes the model back out of the wrapper. Taught in
``notebooks/03_dataparallel.ipynb``.
"""

from ..core.lazy import export_lazily

export_lazily(
    __name__,
    {
        "data_parallel_step": "by_hand",
        "training_throughput": "throughput",
        "VARIANTS": "footprint",
        "context_footprint": "footprint",
        "load_unwrapped": "wrappers",
        "strip_wrapper_prefixes": "wrappers",
        "unwrap": "wrappers",
    },
)
