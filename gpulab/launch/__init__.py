"""Running one model on several devices: DataParallel by hand, the notebook launcher, distributed helpers.

``launcher.launch`` runs a notebook function on N ranks (``worker`` is what runs inside each, ``server`` where they
come from, ``relay`` their output, ``failures`` their errors). Taught in ``notebooks/03_*`` and ``04_ddp.ipynb``.
"""
