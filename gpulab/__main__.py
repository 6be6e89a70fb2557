"""``python -m gpulab <command>``: the course's command line (thin wrapper over the package's functions).

    python -m gpulab env        the classroom environment report
    python -m gpulab devices    the GPUs (physical numbering) and the CPU, like a short nvidia-smi
    python -m gpulab visible    what cuda:k means under the current CUDA_VISIBLE_DEVICES
    python -m gpulab watch      every GPU of the server, who is on it, redrawn in place (Ctrl-C stops)
"""
from __future__ import annotations

import argparse
import os
import sys


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m gpulab", description="Helpers for the gpulab GPU course.")
    sub = parser.add_subparsers(dest="command", metavar="command")
    sub.add_parser("env", help="the classroom environment report (GPUs, CUDA, packages, checklist)")
    p_dev = sub.add_parser("devices", help="the GPUs NVML sees (nvidia-smi numbering) and the CPU")
    p_dev.add_argument("--no-processes", action="store_true", help="skip the per-GPU process list (faster)")
    sub.add_parser("visible", help="the cuda:k -> physical GPU map implied by CUDA_VISIBLE_DEVICES")
    p_watch = sub.add_parser("watch", help="every GPU, its memory and use, and who is on it, redrawn in place")
    p_watch.add_argument("--interval", type=float, default=2.0, metavar="S", help="seconds between views (2)")
    p_watch.add_argument("--frames", type=int, default=None, metavar="N", help="stop after N views")
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 2
    try:
        if args.command == "env":
            from .checkup.report import environment_report

            print(environment_report())
        elif args.command == "devices":
            from .machine.inventory import devices

            print(devices(processes=not args.no_processes))
        elif args.command == "visible":
            from .machine.inventory import devices
            from .core.visible import visible_map

            print(visible_map(devices(processes=False).gpus))
        elif args.command == "watch":
            from .server.watch import watch_terminal

            watch_terminal(interval_s=args.interval, frames=args.frames)
    except ValueError as exc:  # e.g. a bad GPULAB_SIMULATE_GPUS or GPULAB_FAST: the message says what to do
        print(f"gpulab: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # `python -m gpulab devices | head` stopped reading: not an error worth a traceback
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # so the exit's flush cannot fail again
        return 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
