"""``torch.nn.DataParallel`` taken apart: its devices, its steps by hand, the gradients it gives, its speed, what it
occupies.

``devices`` decides which GPUs DataParallel uses from the GPU count alone (pure), ``by_hand`` does one DataParallel
step in its five steps (on CPU threads where there are no GPUs), ``gradients`` checks it against one full-batch pass,
``throughput`` times it against batch size, ``footprint`` measures which GPUs a run occupies, ``unwrap`` takes the
model back out of the wrapper. Taught in ``notebooks/03_dataparallel.ipynb``.
"""
