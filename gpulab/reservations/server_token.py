"""Whose a held GPU is, seen from this process: its own reservation, or the one held for its server (a probe).

In JupyterHub's server model (``gpulab.server.hub``) the Hub's process holds each server's reservation, not the
server: a kernel in that server would otherwise find its own GPUs held by a stranger. So the Hub gives every server
it starts a random token, puts it into the server's environment as ``GPULAB_SERVER_TOKEN`` (every kernel and
terminal of that server inherits it) and writes only the token's SHA-256 digest into the lock files. A holder whose
digest is this process's holds this server's reservation: its GPUs are this user's (``yours``), without a second
reservation. The digest tells a reader of the files nothing they could claim another server's GPUs with.

This module knows tokens only; ``holders`` reads the digest from the files, ``yours`` splits the holders by it.
"""

from __future__ import annotations

import hashlib
import os
import secrets

__all__ = ["SERVER_TOKEN_ENV", "new_server_token", "token_digest", "this_server_digest"]

SERVER_TOKEN_ENV = "GPULAB_SERVER_TOKEN"


def new_server_token() -> str:
    """A fresh, unguessable token for one server's reservation (the Hub makes one per server start)."""
    return secrets.token_hex(16)


def token_digest(token: str) -> str:
    """What the lock files record of a server's token: its SHA-256, in hex."""
    return hashlib.sha256(token.encode()).hexdigest()


def this_server_digest() -> str | None:
    """The digest of the token of the server this process runs in (``$GPULAB_SERVER_TOKEN``), or None."""
    token = os.environ.get(SERVER_TOKEN_ENV, "").strip()
    return token_digest(token) if token else None
