"""The reservations: which GPUs are held, by whom, on this machine (a store that placement, checkup and server share).

A reservation is an exclusive ``flock`` on one file per GPU in a folder every user can write (``folder``), or on one
file per share of a GPU, beside the card's own file held shared (``share_slots``: an instructor lets kernels share
cards; whole GPUs and shares never meet on one card); whoever holds it writes their name and public details into a
file of its own that everyone reads, and its private details (a notebook's path, a server's name) into one that only
its user, root and the instructor group read. Anyone can ask who holds what (``holders``); ``server_token`` marks
the reservations the Hub holds for a server, and ``yours`` says which held GPUs are this user's. No chapter calls
these, so the package exports nothing: the rest of gpulab imports each name from the module that defines it, and only
the names in that module's ``__all__`` (``from gpulab.reservations.holders import reservation_holders``;
``tests/test_layers.py``). ``gpulab.placement.reservation`` reserves GPUs with them (``reserve_gpus``), the
environment report and the picker show who holds a GPU, and the workshop server's views, kernels and Hub list, start
and release reservations. Only the standard library is used, so a student's own Python can read them too.
"""

__all__: list[str] = []
