"""``python -m gpulab <command>``: the course's command line (thin wrapper over the package's functions).

python -m gpulab env        the classroom environment report
python -m gpulab devices    the GPUs (physical numbering) and the CPU, like a short nvidia-smi
python -m gpulab visible    what cuda:k means under the current CUDA_VISIBLE_DEVICES
python -m gpulab watch      every GPU of the server, who is on it, redrawn in place (Ctrl-C stops)
python -m gpulab release N  free GPU N: shut down your kernel that holds it, through its server (yours only; root: any)
python -m gpulab kernelspec install --n-gpus 1   a Jupyter kernel that starts holding a free GPU
python -m gpulab kernelspec list | remove NAME
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    """Run one ``python -m gpulab`` command (``argv``: its words, ``sys.argv[1:]`` when None); returns the exit
    status."""
    parser = argparse.ArgumentParser(prog="python -m gpulab", description="Helpers for the gpulab GPU course.")
    sub = parser.add_subparsers(dest="command", metavar="command")
    sub.add_parser("env", help="the classroom environment report (GPUs, CUDA, packages, checklist)")
    p_dev = sub.add_parser("devices", help="the GPUs NVML sees (nvidia-smi numbering) and the CPU")
    p_dev.add_argument("--no-processes", action="store_true", help="skip the per-GPU process list (faster)")
    sub.add_parser("visible", help="the cuda:k -> physical GPU map implied by CUDA_VISIBLE_DEVICES")
    p_watch = sub.add_parser("watch", help="every GPU, its memory and use, and who is on it, redrawn in place")
    p_watch.add_argument("--interval", type=float, default=2.0, metavar="S", help="seconds between views (2)")
    p_watch.add_argument("--frames", type=int, default=None, metavar="N", help="stop after N views")
    p_rel = sub.add_parser("release", help="free a GPU by stopping your own process (kernel) that holds it")
    p_rel.add_argument("gpu", type=int, metavar="GPU", help="the GPU's physical number, as watch shows it")
    p_rel.add_argument("--share", type=int, default=None, metavar="K", help="of a shared card, share K only")
    p_ks = sub.add_parser("kernelspec", help="install, list or remove the Jupyter kernels that hold free GPUs")
    ks = p_ks.add_subparsers(dest="action", metavar="action")
    p_in = ks.add_parser("install", help="install a kernelspec started by gpulab's kernel provisioner")
    p_in.add_argument(
        "--n-gpus",
        type=int,
        default=1,
        metavar="N",
        help="how many GPUs each kernel holds (1; 0: a kernel with no GPU)",
    )
    p_in.add_argument(
        "--policy",
        default=None,
        metavar="K=V,...",
        help="what counts as free, e.g. max_memory_used_fraction=0.5,max_utilization_percent=50",
    )
    p_in.add_argument(
        "--shares",
        type=int,
        default=1,
        metavar="N",
        help="how many kernels share each GPU, each with its memory cap (1: a whole GPU per kernel)",
    )
    p_in.add_argument("--wait", type=float, default=0.0, metavar="S", help="seconds a start waits for a GPU (0)")
    p_in.add_argument("--name", default=None, help="the kernelspec's name (default gpulab-N-gpu)")
    where = p_in.add_mutually_exclusive_group()
    where.add_argument("--user", action="store_true", help="for you only (~/.local/share/jupyter)")
    where.add_argument("--prefix", default=None, help="under PREFIX/share/jupyter/kernels")
    where.add_argument("--sys-prefix", action="store_true", help="into this Python environment")
    ks.add_parser("list", help="gpulab's installed kernelspecs")
    p_rm = ks.add_parser("remove", help="remove one of gpulab's kernelspecs")
    p_rm.add_argument("name")
    args = parser.parse_args(argv)
    if args.command == "kernelspec" and args.action is None:
        p_ks.print_help()
        return 2
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
            from .core.visible import visible_map
            from .machine.inventory import devices

            print(visible_map(devices(processes=False).gpus))
        elif args.command == "watch":
            from .server.watch import watch_terminal

            watch_terminal(interval_s=args.interval, frames=args.frames)
        elif args.command == "release":
            from .machine.resolve import as_reader
            from .server.release import release_gpu

            reader = as_reader(None)  # the standard library only: a student's own Python can run it
            print(release_gpu([reader.info(i) for i in range(reader.count())], args.gpu, share=args.share))
        elif args.command == "kernelspec":
            return _kernelspec(args)
    except ModuleNotFoundError as exc:  # a Python without gpulab's packages (e.g. python3 in the course's folder)
        from .core.dependencies import missing_dependency, missing_dependency_message

        module = missing_dependency(exc)
        if module is None:
            raise
        root = Path(__file__).resolve().parents[1]
        print(missing_dependency_message(module, sys.executable, root, args.command), file=sys.stderr)
        return 1
    except PermissionError as exc:  # ReleaseRefused, or a kernelspec folder this user cannot write
        print(f"gpulab: {exc}", file=sys.stderr)
        return 1
    except ValueError as exc:  # e.g. a bad GPULAB_SIMULATE_GPUS or GPULAB_FAST: the message says what to do
        print(f"gpulab: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # `python -m gpulab devices | head` stopped reading: not an error worth a traceback
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # so the exit's flush cannot fail again
        return 0
    return 0


def _kernelspec(args: argparse.Namespace) -> int:
    from .server import kernelspec

    if args.action == "install":
        prefix = sys.prefix if args.sys_prefix else args.prefix
        where, spec = kernelspec.install_kernelspec(
            args.n_gpus,
            policy=args.policy,
            name=args.name,
            wait_s=args.wait,
            user=args.user,
            prefix=prefix,
            shares=args.shares,
        )
        what = f"one of {args.shares} shares of a GPU" if args.shares > 1 else f"{args.n_gpus or 'no'} GPU(s)"
        print(
            f"installed kernelspec {os.path.basename(where)!r} in {where}: JupyterLab's launcher shows "
            f'"{spec["display_name"]}". Each kernel started from it holds {what} until it shuts down, restarts or dies.'
        )
    elif args.action == "list":
        found = kernelspec.gpulab_kernelspecs()
        if not found:
            print("no gpulab kernelspec is installed: python -m gpulab kernelspec install --n-gpus 1")
        for name, info in sorted(found.items()):
            print(f"{name:<20} {info['spec']['display_name']:<36} {info['resource_dir']}")
    else:
        print(f"removed {kernelspec.remove_kernelspec(args.name)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
