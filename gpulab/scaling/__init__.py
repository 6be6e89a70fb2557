"""When does a second device pay? ``cost`` predicts a DDP step from a FLOP rate and a link (pure), ``published``
holds the GPU setups' published figures (pure), ``steps`` measures a step's split into compute, all-reduce and
waiting on real ranks, ``sweep`` runs the sweep and the machine's own limit. Taught in ``notebooks/07_scaling.ipynb``.
"""
