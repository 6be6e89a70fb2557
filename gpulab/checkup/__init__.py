"""Will the chapters run here: the environment report, and the checklist of what would stop them and its fixes.

``report`` gathers the facts (the machine, torch, reservations, ``CUDA_VISIBLE_DEVICES``) and shows them,
``diagnosis`` decides each finding from those facts alone (``facts`` holds both as data, ``build_findings`` the
rules on torch's build and the driver), ``chapters`` reads what each chapter needs.
Taught in ``notebooks/00_setup.ipynb``.
"""
