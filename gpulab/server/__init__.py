"""The whole server as the room sees it: every GPU, who holds it (their processes and reservations), redrawn live.

``watch`` reads the server and shows it (``python -m gpulab watch``, or ``watch_gpus()`` in a notebook), ``render``
draws one reading as text and HTML, ``owners`` says whose process is which (Unix user, kernel). Taught in
``notebooks/02_choosing_gpus.ipynb``.
"""
