"""Which held GPUs are this user's and which are others', in the words the picker, watch and the report show.

A GPU is ``yours`` when this process holds it, or when it is held for the server this process runs in
(``server_token``, read into ``Holder.this_server`` by ``holders``); every other holder is someone else.
"""

from __future__ import annotations

from .holders import THIS_NOTEBOOK, Holder

__all__ = ["yours_and_others"]


def _whose(h: Holder) -> str:
    ours = [s for _, _, s in h.shares if s.mine or s.this_server]
    if ours:  # a card held in shares: whose is the share held for this process or its server
        h = ours[0]
    if h.mine:
        return f"reserved by {THIS_NOTEBOOK}"
    user = h.details.get("for_user")
    server = h.details.get("server", "(default)")
    whose = f"{user}'s server" + ("" if server == "(default)" else f" {server!r}") if user else "this server"
    return f"reserved for {whose}, which this kernel runs in"


def yours_and_others(holders: dict[str, Holder]) -> tuple[dict[str, str], dict[str, str]]:
    """The held GPUs split as the free rule (``placement.selection.judge``) takes them: ``yours`` (held by this process,
    or for the server it runs in) and the others', each UUID with its words."""
    yours = {uuid: _whose(h) for uuid, h in holders.items() if h.mine or h.this_server}
    others = {uuid: str(h) for uuid, h in holders.items() if uuid not in yours}
    return yours, others
