"""The first moment of a provisioned kernel: reserve its GPUs, set its environment, then become the kernel (a probe).

``python -m gpulab.server.reservation_start --report-fd N [options] -- <kernel command>`` is what the kernel provisioner
(``server.provisioner``) starts instead of the kernelspec's command. This process calls ``reserve_gpus`` (the same
policy, lock files and details as a notebook cell), puts ``CUDA_VISIBLE_DEVICES``, ``MASTER_PORT`` and
``GPULAB_MASTER_PORTS`` into its environment, tells the provisioner what it got on the report pipe, and then
``exec``s the kernel command. With ``--shares N`` (a kernelspec installed with ``--shares``) it holds one share of one
GPU instead (``reserve_share``) and adds the share's memory cap, ``GPULAB_MEMORY_CAP``. ``exec`` keeps the process id
and the open lock files, so:

- the kernel process itself holds the ``flock``: the reservation ends exactly when the kernel ends (shutdown, restart,
  crash, ``kill -9``), with no poller, and ``/proc/locks`` names the kernel's pid;
- inside the kernel, ``gpulab.environment_report()`` and the picker see the reservation as "reserved by this notebook"
  (the lock's pid is the kernel's own), with no extra code in the kernel;
- no user code runs before ``CUDA_VISIBLE_DEVICES`` is set.

Why not reserve in the Jupyter server and pass the descriptors to the kernel (``pass_fds``)? It works for the
lifetime, but Linux keeps the *locking* process's pid in ``/proc/locks``: every reservation would name the server, and
the kernel would not know its own reservation. Taught in ``notebooks/workshop_guide.ipynb``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

__all__ = ["main", "START_MODULE"]

START_MODULE = "gpulab.server.reservation_start"


def _report(fd: int, message: dict) -> None:
    os.write(fd, (json.dumps(message) + "\n").encode())
    os.close(fd)


def _arguments(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog=f"python -m {START_MODULE}")
    parser.add_argument("--report-fd", type=int, required=True)
    parser.add_argument("--n-gpus", type=int, default=1, help="how many GPUs to reserve")
    parser.add_argument("--shares", type=int, default=1, help="kernels per GPU: >1 reserves one share of a GPU")
    parser.add_argument("--policy", default="{}", help="JSON: Policy's fields")
    parser.add_argument("--wait-s", type=float, default=0.0)
    parser.add_argument("--prefer", default="", help="UUIDs to pick first, comma-separated")
    parser.add_argument("--details", default="{}", help="JSON: the reservation's details")
    parser.add_argument("--reservations", default=None)
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    if args.command[:1] == ["--"]:
        args.command = args.command[1:]
    if not args.command:
        parser.error("no kernel command after --")
    return args


def main(argv: list[str] | None = None) -> int:
    """Reserve the GPUs, set the environment, report to the provisioner and become the kernel command; returns an exit
    status only when that fails."""
    args = _arguments(sys.argv[1:] if argv is None else argv)
    try:
        from ..placement.reservation import reserve_gpus
        from ..placement.selection import NoFreeGpu, Policy
        from ..ranks.ports import PORTS_VAR, format_ports, reservation_ports

        how = {
            "policy": Policy(**json.loads(args.policy)),
            "reservations": args.reservations,
            "wait_s": args.wait_s,
            "prefer": [u for u in args.prefer.split(",") if u],
            "details": json.loads(args.details),
        }
        if args.shares > 1:  # one share of one GPU, with its memory cap
            from ..placement.share_reservation import reserve_share

            reservation = reserve_share(args.shares, **how)
        else:
            reservation = reserve_gpus(args.n_gpus, **how)
    except NoFreeGpu as exc:
        _report(args.report_fd, {"ok": False, "kind": "busy", "error": str(exc)})
        return 3
    except Exception as exc:  # any other reason (a bad directory, NVML): said to the provisioner, which says it
        _report(args.report_fd, {"ok": False, "kind": type(exc).__name__, "error": str(exc)})
        return 2
    ports = reservation_ports(reservation.physical_indices)
    details = {**json.loads(args.details), "ports": format_ports(ports)}
    from ..reservations.folder import write_holder

    for fd in reservation.lock_fds:  # the reservation's details, now with its port range
        write_holder(fd, details)
        os.set_inheritable(fd, True)  # exec keeps them open: the kernel process holds the locks
    env = {**reservation.env(), "MASTER_PORT": str(ports.start), PORTS_VAR: format_ports(ports)}
    os.environ.update(env)
    _report(
        args.report_fd,
        {
            "ok": True,
            "uuids": [g.uuid for g in reservation.gpus],
            "physical": list(reservation.physical_indices),
            "ports": format_ports(ports),
            "pid": os.getpid(),
            "env": env,
            **({"share": [reservation.share.share, reservation.share.shares]} if reservation.share else {}),
        },
    )
    sys.stdout.flush()
    sys.stderr.flush()
    os.execvp(args.command[0], args.command)  # never returns; the Reservation object is never collected
    return 0  # pragma: no cover


if __name__ == "__main__":
    sys.exit(main())
