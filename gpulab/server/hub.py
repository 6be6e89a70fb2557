"""JupyterHub's "every server reserves" model: a user's single-user server holds its GPUs from spawn to stop.

``gpu_hooks(n_gpus=1)`` returns a ``pre_spawn_hook`` / ``post_stop_hook`` pair for ``c.Spawner`` (any spawner:
LocalProcessSpawner, SystemdSpawner, DockerSpawner). Before the server starts, the Hub reserves free GPUs for it with
``reserve_gpus(details={"for_user": ..., "server": ...})`` and puts them into the server's ``CUDA_VISIBLE_DEVICES``
(UUIDs, so they name the same GPUs inside a container; for DockerSpawner also a ``device_requests`` entry). When the
server stops, the reservation is released. The server knows its own reservation: the Hub puts a fresh token into its
environment (``GPULAB_SERVER_TOKEN``) and the token's digest into the lock files
(``gpulab.reservations.server_token``), so inside that server ``reserve_gpus``, the picker, ``watch`` and the
environment report call those GPUs the student's own ("yours"), and ``reserve_gpus`` hands them over without a second
reservation.
JupyterHub has no GPU allocator of its own (dockerspawner #331, TLJH #318, zero-to-jupyterhub #3000): these two hooks
are the smallest thing its documented extension points need.

Who holds the lock, and when it ends:

* The **Hub process** holds each reservation (an ``flock`` on one file per GPU, as every gpulab reservation) from
  ``pre_spawn_hook`` until ``post_stop_hook``. The single-user server does not hold it: with DockerSpawner it is not
  even a child of the Hub, so only the Hub can hold a reservation for every kind of spawner. (A LocalProcessSpawner's
  server could inherit the locked descriptor and free its GPUs the instant it dies; that works for one spawner only, and
  every kernel the server starts would have to be kept from inheriting it. The price of the Hub holding it is one poll
  interval.) The lock files are opened close-on-exec, so no server or kernel inherits the Hub's locks.
* A server stopped from the Hub (the user's "Stop My Server", the admin page, the REST API, an idle culler) ends in
  ``User.stop``, which runs ``post_stop_hook``: released at once. JupyterHub also runs it when a spawn fails.
* A server that dies by itself (``kill -9``, out of memory, a crash) is noticed by the Hub's poll: every
  ``Spawner.poll_interval`` seconds (30 by default, ±10 % jitter) ``Spawner.poll_and_notify`` finds the process gone
  and calls the Hub's ``user_stopped``, which runs ``User.stop`` and so ``post_stop_hook``. The GPUs of a killed server
  therefore come back within one poll interval: ``tools/jupyterhub_config.py`` sets it to 10 s.
* A **Hub restart** ends the Hub process and with it every lock it held. By default (``JupyterHub.cleanup_servers =
  True``) the Hub stops all single-user servers as it shuts down (running ``post_stop_hook`` for each), so nothing
  runs on unheld GPUs. With ``cleanup_servers = False``, or when the Hub itself is killed (``kill -9``, a crash),
  servers outlive it. So ``gpu_hooks``, run as the new Hub reads its config, **reserves their GPUs again**
  (``reclaim_surviving_servers``): a GPU the old Hub last held for a user's server (its own files in the reservations
  folder say which) is held again for that server when a process of that server (``JUPYTERHUB_USER``,
  ``JUPYTERHUB_SERVER_NAME``) still runs with that GPU in its ``CUDA_VISIBLE_DEVICES``. Both must agree: the files
  are the Hub's own, which no student can write, and the process proves the server survived. A server that died
  while the Hub was down is stopped by the Hub's start-up check, whose ``post_stop_hook`` releases what was held
  again. A server running on GPUs nobody holds (seen only by root: the environments are private) is named "unheld"
  in ``python -m gpulab watch``.

Taught in the README's section for instructors.
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
from collections.abc import Callable, Mapping
from typing import Any

from tornado.web import HTTPError  # JupyterHub's own web framework, there wherever a Hub is

from ..core.arguments import shown, whole_number
from ..core.readings import GpuInfo, is_known
from ..core.shares import shares_of
from ..machine.resolve import as_reader
from ..placement.reservation import Reservation, reserve_gpus
from ..placement.selection import Choice, NoFreeGpu, Policy, rank_gpus
from ..placement.share_reservation import reserve_share
from ..reservations.folder import hold, reservations_dir, selection_lock, write_holder
from ..reservations.holders import left_behind
from ..reservations.server_token import SERVER_TOKEN_ENV, new_server_token, token_digest
from ..reservations.share_slots import hold_share, parse_share_key
from .hub_message import no_gpu_message
from .owners import HubServer, hub_servers
from .scheduler_spawners import scheduler_spawner

__all__ = [
    "gpu_hooks",
    "NoGpuForServer",
    "hub_policy",
    "reclaim_surviving_servers",
]

log = logging.getLogger("gpulab.hub")

# (user, server name) -> the reservation this Hub process holds for that server. Kept here, not on the spawner:
# JupyterHub may build a new Spawner object for the same server, and a Reservation nobody refers to is let go.
_RESERVATIONS: dict[tuple[str, str], Reservation] = {}
_RESERVATIONS_LOCK = threading.Lock()


class NoGpuForServer(HTTPError):
    """No GPUs free for a single-user server: HTTP 503, and ``jupyterhub_message`` is what the Hub's spawn page and
    REST API show. A tornado ``HTTPError``, because JupyterHub relays those to the user as they are, without logging
    a traceback as it does for an unexpected error."""

    def __init__(self, message: str) -> None:
        super().__init__(503, message.replace("%", "%%"))
        self.jupyterhub_message = message

    def __str__(self) -> str:
        return self.jupyterhub_message


def hub_policy(policy: object) -> Policy | None:
    """``policy`` as a ``Policy``: one, a dict of its fields (as a config file writes it), or None for the default."""
    if policy is None or isinstance(policy, Policy):
        return policy
    if isinstance(policy, Mapping):
        fields = list(Policy.__dataclass_fields__)
        unknown = [k for k in policy if k not in fields]
        if unknown:
            raise ValueError(
                f"policy: {shown(unknown[0])} is not a policy setting; the settings are "
                f"{', '.join(fields)}, e.g. policy={{'max_memory_used_fraction': 0.1}}."
            )
        return Policy(**policy)
    raise TypeError(
        f"policy={shown(policy)} is a {type(policy).__name__}; give a dict of policy settings, e.g. "
        "policy={'max_memory_used_fraction': 0.1, 'max_utilization_percent': 10}, a "
        "gpulab.placement.selection.Policy, or leave it out for the default."
    )


def gpu_hooks(
    n_gpus: int = 1,
    *,
    policy: Policy | Mapping[str, Any] | None = None,
    reservations: str | os.PathLike[str] | None = None,
    machine: str | None = None,
    shares: int = 1,
) -> tuple[Callable[[Any], Any], Callable[[Any], None]]:
    """``(pre_spawn_hook, post_stop_hook)`` reserving ``n_gpus`` free GPUs for each single-user server while it runs.

    In ``jupyterhub_config.py``: ``c.Spawner.pre_spawn_hook, c.Spawner.post_stop_hook = gpu_hooks(n_gpus=1)``.
    ``policy`` says what free means (a ``Policy`` or a dict of its fields); ``reservations`` is the reservations folder
    shared with every kernel on the machine (default ``$GPULAB_RESERVATIONS_DIR`` or ``/tmp/gpulab-reservations``);
    ``machine`` a described machine's name for rehearsals (default: NVML, or ``$GPULAB_SIMULATE_GPUS``). ``n_gpus=0``
    starts servers with no GPU at all (``CUDA_VISIBLE_DEVICES`` empty). ``shares`` above 1 lets that many servers
    share each GPU: each server holds one share of one card (``placement.share_reservation``), and its environment
    gets the share's memory cap (``GPULAB_MEMORY_CAP``), which each of its kernels enforces at CUDA's start. Wrong
    values are refused here, when the Hub reads its config, not at a student's first spawn.
    """
    n_gpus = whole_number(
        n_gpus,
        "n_gpus",
        minimum=0,
        what="how many GPUs each single-user server holds",
        example="gpu_hooks(n_gpus=1) for one GPU per server, n_gpus=0 for servers without a GPU",
    )
    shares = whole_number(
        shares,
        "shares",
        minimum=1,
        what="how many single-user servers share each GPU",
        example="gpu_hooks(n_gpus=1, shares=3) for three servers per GPU, shares=1 for a whole GPU each",
    )
    if shares > 1 and n_gpus != 1:
        raise ValueError(
            f"gpu_hooks(n_gpus={n_gpus}, shares={shares}): a server holds one share of one GPU, so shares go with "
            "n_gpus=1. Write gpu_hooks(n_gpus=1, shares=3)."
        )
    policy = hub_policy(policy)
    if machine is not None:
        if not isinstance(machine, str):
            raise TypeError(
                f"machine={shown(machine)} is a {type(machine).__name__}; the Hub passes the machine on to "
                'every server by name, so give a described machine\'s name (machine="idle-8") or a JSON '
                "file's path, or leave it out for this machine's GPUs."
            )
        as_reader(machine)  # an unknown preset is refused now, with the list of presets
    folder = reservations_dir(reservations, create=False)
    if n_gpus:
        reclaim_surviving_servers(machine, folder)

    async def pre_spawn_hook(spawner: Any) -> None:
        scheduler = scheduler_spawner(type(spawner))
        if scheduler is not None:  # the scheduler allocates on its own nodes: nothing here is the server's
            kind = type(spawner).__name__
            log.warning(
                "gpulab: %s leaves GPUs to %s: the GPU hooks reserve nothing (docs/clusters.md)", kind, scheduler
            )
            return
        key = (spawner.user.name, spawner.name)
        _release(key)  # a reservation left from a start that failed before post_stop_hook ran
        env = dict(spawner.environment)
        env["GPULAB_RESERVATIONS_DIR"] = str(folder)  # the server's own views read the Hub's reservations
        simulated = machine or os.environ.get("GPULAB_SIMULATE_GPUS")
        if simulated:
            env["GPULAB_SIMULATE_GPUS"] = simulated
        if n_gpus == 0:
            env["CUDA_VISIBLE_DEVICES"] = ""
            spawner.environment = env
            return
        details = {"for_user": spawner.user.name, "server": spawner.name or "(default)"}
        try:
            if shares > 1:
                reservation = await asyncio.to_thread(
                    reserve_share, shares, machine, policy, reservations=folder, details=details
                )
            else:
                reservation = await asyncio.to_thread(
                    reserve_gpus, n_gpus, machine, policy, reservations=folder, details=details
                )
        except NoFreeGpu:
            message = no_gpu_message(spawner.user.name, n_gpus, machine, policy, folder, shares=shares)
            raise NoGpuForServer(message) from None
        token = (
            new_server_token()
        )  # the server's processes know their reservation by it; the files hold only its digest
        for fd in reservation.lock_fds:
            write_holder(fd, details, token_digest(token))
        with _RESERVATIONS_LOCK:
            _RESERVATIONS[key] = reservation
        env[SERVER_TOKEN_ENV] = token
        env.update(reservation.env())  # CUDA_VISIBLE_DEVICES, and a share's memory cap
        spawner.environment = env
        if hasattr(spawner, "extra_host_config"):  # DockerSpawner: pass exactly these GPUs into the container
            host = dict(spawner.extra_host_config)
            host["device_requests"] = [
                {"driver": "nvidia", "device_ids": [g.uuid for g in reservation.gpus], "capabilities": [["gpu"]]}
            ]
            spawner.extra_host_config = host
        log.info(
            "gpulab: %s's server %r holds %s",
            key[0],
            key[1] or "(default)",
            reservation.share or "GPU(s) " + ", ".join(str(i) for i in reservation.physical_indices),
        )

    def post_stop_hook(spawner: Any) -> None:
        _release((spawner.user.name, spawner.name))

    return pre_spawn_hook, post_stop_hook


def _release(key: tuple[str, str]) -> None:
    with _RESERVATIONS_LOCK:
        reservation = _RESERVATIONS.pop(key, None)
    if reservation is not None:
        reservation.release()
        log.info(
            "gpulab: released GPU(s) %s of %s's server %r",
            ", ".join(str(i) for i in reservation.physical_indices),
            key[0],
            key[1] or "(default)",
        )


def reclaim_surviving_servers(
    machine: str | None = None,
    reservations: str | os.PathLike[str] | None = None,
    servers: Callable[[], list[HubServer]] = hub_servers,
) -> list[tuple[str, str]]:
    """Reserve again, in this Hub process, the GPUs of the single-user servers that outlived an earlier Hub; returns
    the ``(user, server name)`` of each server whose GPUs were held again.

    A GPU counts when both agree: nobody holds it now, this user's own file there (the earlier Hub's, which no student
    can write) says it was held for that user's server, and a process of that server still runs with that GPU in its
    ``CUDA_VISIBLE_DEVICES`` (``servers``: the processes, read from their environments). A share of a card held for
    a server counts the same way, and is held again as the same share where it is free (``_reclaim_shares``)."""
    reader = as_reader(machine)
    gpus = {g.uuid: g for g in (reader.info(i) for i in range(reader.count()))}
    folder = reservations_dir(reservations, create=False)
    left = left_behind(list(gpus), folder)
    shares = _reclaim_shares(gpus, folder, servers)
    if not left:
        return shares
    wanted: dict[tuple[str, str], list[str]] = {}
    digests: dict[
        tuple[str, str], str | None
    ] = {}  # the server's token digest: its processes keep their GPUs as theirs
    running = servers()
    for uuid, holder in left.items():
        user, server = holder.details.get("for_user"), holder.details.get("server")
        if not user or server is None:
            continue
        name = "" if server == "(default)" else server
        if any(p.user == user and p.name == name and uuid in p.uuids for p in running):
            wanted.setdefault((user, name), []).append(uuid)
            digests[(user, name)] = digests.get((user, name)) or holder.server_digest
    reclaimed = []
    for key, uuids in sorted(wanted.items()):
        fds: dict[str, int] = {}
        with selection_lock(reservations_dir(folder)):
            for uuid in uuids:
                fd = hold(folder, uuid, {"for_user": key[0], "server": key[1] or "(default)"}, digests.get(key))
                if fd is None:
                    log.warning("gpulab: GPU %s of %s's surviving server is held by another process now", uuid, key[0])
                else:
                    fds[uuid] = fd
        if not fds:
            continue
        chosen = tuple(gpus[u] for u in fds)
        with _RESERVATIONS_LOCK:
            _RESERVATIONS[key] = Reservation(Choice(chosen, tuple(rank_gpus(list(chosen)))), folder, fds)
        reclaimed.append(key)
        log.warning(
            "gpulab: %s's server %r outlived the earlier Hub on GPU(s) %s: reserved again for it",
            key[0],
            key[1] or "(default)",
            ", ".join(str(g.physical_index) for g in chosen),
        )
    return reclaimed + shares


def _reclaim_shares(
    gpus: Mapping[str, GpuInfo], folder: os.PathLike[str], servers: Callable[[], list[HubServer]]
) -> list[tuple[str, str]]:
    """Hold again, as ``reserve_share`` holds them, the shares the earlier Hub held for servers that still run on
    their card; the ``(user, server name)`` of each."""
    from pathlib import Path

    found = (p.name.removeprefix("gpu-").removesuffix(".lock") for u in gpus for p in Path(folder).glob(f"gpu-{u}.*"))
    left = left_behind([key for key in found if parse_share_key(key)], folder)
    running = servers() if left else []
    reclaimed = []
    for key, holder in sorted(left.items()):
        uuid, k, n = parse_share_key(key)  # type: ignore[misc]
        user, server, g = holder.details.get("for_user"), holder.details.get("server"), gpus[uuid]
        name = "" if server == "(default)" else server
        if not user or server is None or not is_known(g.memory_total_bytes) or (user, name) in _RESERVATIONS:
            continue
        if not any(p.user == user and p.name == name and uuid in p.uuids for p in running):
            continue
        with selection_lock(reservations_dir(folder)):
            got = hold_share(Path(folder), uuid, n, {"for_user": user, "server": server}, holder.server_digest, k)
        if got is None:
            log.warning("gpulab: GPU %s of %s's surviving server is held another way now", g.physical_index, user)
            continue
        card_fd, share_fd, k = got
        share = shares_of(g.physical_index, int(g.memory_total_bytes), n)[k - 1]
        fds = {uuid: share_fd, f"{uuid}.card": card_fd}
        with _RESERVATIONS_LOCK:
            _RESERVATIONS[(user, name)] = Reservation(
                Choice((g,), tuple(rank_gpus([g]))), Path(folder), fds, share=share
            )
        reclaimed.append((user, name))
        log.warning("gpulab: %s's server %r outlived the earlier Hub on %s: reserved again for it", user, server, share)
    return reclaimed
