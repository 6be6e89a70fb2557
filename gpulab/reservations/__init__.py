"""The reservations: which GPUs are held, by whom, on this machine (a store that placement, checkup and server share).

A reservation is an exclusive ``flock`` on one file per GPU in a folder every user can write (``folder``), or on one
file per share of a GPU, beside the card's own file held shared (``share_slots``: an instructor lets kernels share
cards; whole GPUs and shares never meet on one card); whoever
holds it writes their name and public details into a file of its own that everyone reads, and its private details
(a notebook's path, a server's name) into one that only its user, root and the instructor group read; anyone can ask
who holds what (``holders``). Only the names
below are for the rest of gpulab: ``gpulab.placement.reservation`` reserves GPUs with them (``reserve_gpus``), the
environment report and the picker show who holds a GPU, and the workshop server's views, kernels and Hub list, start
and release reservations. Only the standard library is used, so a student's own Python can read them too.
"""

from .folder import (
    DEFAULT_INSTRUCTOR_GROUP,
    INSTRUCTOR_GROUP_VAR,
    PUBLIC_DETAILS,
    hold,
    let_go,
    lock_path,
    require_flock,
    reservations_dir,
    selection_lock,
    write_holder,
)
from .holders import THIS_NOTEBOOK, Holder, current_holders, left_behind, reservation_holders
from .server_token import SERVER_TOKEN_ENV, new_server_token, this_server_digest, token_digest
from .share_slots import held_shares, hold_share, parse_share_key, share_key, share_lock_path
from .yours import yours_and_others

__all__ = [
    "reservations_dir",
    "lock_path",
    "require_flock",
    "selection_lock",
    "hold",
    "let_go",
    "write_holder",
    "PUBLIC_DETAILS",
    "INSTRUCTOR_GROUP_VAR",
    "DEFAULT_INSTRUCTOR_GROUP",
    "THIS_NOTEBOOK",
    "Holder",
    "reservation_holders",
    "current_holders",
    "left_behind",
    "hold_share",
    "held_shares",
    "share_key",
    "parse_share_key",
    "share_lock_path",
    "SERVER_TOKEN_ENV",
    "new_server_token",
    "token_digest",
    "this_server_digest",
    "yours_and_others",
]
