"""Starting 2 gloo ranks from a notebook-like process: gpulab.launch next to torchrun, mp.spawn, Lightning's
ddp_notebook and accelerate's notebook_launcher, measured side by side in one run.

    .venv/bin/python benchmarks/bench_launch.py [--samples 3] [--repeats 10] [--hang-timeout 30] [--ours-only]
                                                [--accelerate-dir DIR]

Every sample runs in a fresh Python (a "kernel") so that nothing one launcher leaves behind helps or hurts another.
All launchers run the same rank body: start the process group if the launcher did not, a barrier, then the time is
written down ("ready"), then a 1000×1000 matmul at 2 threads per rank (the op that hangs in a badly forked rank).
Columns:
- ready: from the launch call to the last rank past its barrier (median over samples);
- total: from the launch call until the call returned (median);
- after parent matmul: the same launch in a kernel that first ran a 1000×1000 matmul at 2 threads and with
  OMP_NUM_THREADS=2 — "hung" if it did not finish within --hang-timeout (the process group is then killed).
Then ours alone: repeat launches, a rank that raises (from the raise to the notebook's RankFailed), and the CPU the
launching process spends while 2 ranks sleep for 10 s (it blocks on the ranks' sentinels; goal < 2 % of a core).
"ours, repeat" is the median of --repeats launches in one kernel after a first one; "ours, first" includes the fork
server's import of torch; "ours, first after warm-up" calls warm_up_launcher() and launches 3 s later (a learner
reading the next cell). accelerate is not a gpulab dependency: install it for this benchmark alone with
``pip install --target DIR --no-deps accelerate huggingface_hub safetensors`` and pass --accelerate-dir DIR.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from gpulab.core.tables import text_table  # noqa: E402

RANK_BODY = """
import os, time, torch, torch.distributed as dist

def body(outdir, *_):
    if not dist.is_initialized():
        dist.init_process_group("gloo")  # env:// from the variables the launcher set
    dist.barrier()
    ready = time.time()
    torch.set_num_threads(2)
    x = torch.randn(1000, 1000)
    x @ x
    with open(os.path.join(outdir, f"rank{dist.get_rank()}"), "w") as f:
        f.write(f"{ready} {torch.get_num_threads()}")

def spawn_entry(index, outdir, world_size):
    os.environ.update(RANK=str(index), LOCAL_RANK=str(index), WORLD_SIZE=str(world_size))
    body(outdir)

if __name__ == "__main__":  # torchrun runs this file
    import sys
    body(sys.argv[1])
"""

KERNEL = """
import json, os, socket, sys, tempfile, time, torch
sys.path.insert(0, {here!r})
if {matmul!r}:
    torch.set_num_threads(2)
    a = torch.randn(1000, 1000); a @ a  # the notebook's own CPU work, before the launch
from bench_ranks import body

def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]

{setup}

for i in range({launches}):
    outdir = tempfile.mkdtemp()
    t = time.time()
{launch}
    end = time.time()
    readies = [float(open(os.path.join(outdir, f)).read().split()[0]) for f in sorted(os.listdir(outdir))]
    if i >= {skip} and len(readies) == 2:
        print("RESULT", json.dumps({{"ready_s": max(readies) - t, "total_s": end - t}}), flush=True)
"""

CONTENDERS = {
    "gpulab.launch": (
        "import gpulab.ranks.launcher as L\ndef notebook_fn(outdir):\n    body(outdir)\n",
        "    L.launch(notebook_fn, 2, args=(outdir,), threads_per_rank=2)",
    ),
    "torchrun": (
        "import subprocess\n",
        "    subprocess.run([sys.executable, '-m', 'torch.distributed.run', '--standalone', "
        "'--nproc-per-node=2', os.path.join({here!r}, 'bench_ranks.py'), outdir], check=True, "
        "capture_output=True)",
    ),
    "mp.spawn": (
        "import torch.multiprocessing as mp\nfrom bench_ranks import spawn_entry\n",
        "    os.environ.update(MASTER_ADDR='127.0.0.1', MASTER_PORT=str(free_port()))\n"
        "    mp.spawn(spawn_entry, args=(outdir, 2), nprocs=2)",
    ),
    "Lightning ddp_notebook": (
        "from lightning.fabric import Fabric\ndef notebook_fn(fabric, outdir):\n    body(outdir)\n",
        "    Fabric(accelerator='cpu', devices=2, strategy='ddp_notebook').launch(notebook_fn, outdir)",
    ),
    "accelerate notebook_launcher": (
        "from accelerate import notebook_launcher\ndef notebook_fn(outdir):\n    body(outdir)\n",
        "    notebook_launcher(notebook_fn, (outdir,), num_processes=2, use_port=str(free_port()))",
    ),
}

OURS_ALONE = '''
import json, os, statistics, tempfile, threading, time
import psutil
import gpulab.ranks.launcher as L
from gpulab.ranks.failures import RankFailed

def trivial():
    return int(os.environ["RANK"])

def raising(stamp):
    import torch.distributed as dist
    if dist.get_rank() == 1:
        with open(stamp, "w") as f:
            f.write(repr(time.time()))
        raise ValueError("boom")
    dist.barrier()

def sleeping(seconds):
    time.sleep(seconds)

def parent_cpu_while_ranks_sleep(seconds=10.0, skip=2.0):
    """The launching process's own CPU time (every thread of it), as a share of one core, while 2 ranks sleep."""
    me, out = psutil.Process(), {{}}
    def sample():
        time.sleep(skip)
        a, t = me.cpu_times(), time.monotonic()
        time.sleep(seconds - 2 * skip)
        b, u = me.cpu_times(), time.monotonic()
        out["share"] = ((b.user - a.user) + (b.system - a.system)) / (u - t)
    th = threading.Thread(target=sample)
    th.start()
    L.launch(sleeping, 2, args=(seconds,))
    th.join()
    return out["share"]

L.launch(trivial, 2)
stats = []
for _ in range({repeats}):
    L.launch(trivial, 2)
    stats.append(L.last_launch())
failed = []
stamp = os.path.join(tempfile.mkdtemp(), "raised")
for _ in range(3):
    t = time.perf_counter()
    try:
        L.launch(raising, 2, args=(stamp,))
    except RankFailed as e:
        caught = time.time()
        failed.append((time.perf_counter() - t, e.rank, caught - float(open(stamp).read())))
cpu = [parent_cpu_while_ranks_sleep() for _ in range(2)]
print(json.dumps({{"ready_s": statistics.median(s.ready_s for s in stats),
                  "total_s": statistics.median(s.total_s for s in stats),
                  "ports": len({{s.master_port for s in stats}}), "failure_s": max(f[0] for f in failed),
                  "raise_to_report_s": max(f[2] for f in failed), "parent_cpu": max(cpu),
                  "failed_rank": sorted({{f[1] for f in failed}})}}))
'''

NOTEBOOK_FN_CHECK = """
import torch.multiprocessing as mp
def notebook_fn(index):
    pass
mp.spawn(notebook_fn, nprocs=1)
"""


def run_kernel(
    here: str,
    name: str,
    *,
    matmul: bool,
    launches: int = 1,
    skip: int = 0,
    timeout: float,
    extra_env: dict[str, str],
    setup_extra: str = "",
) -> list[dict] | None:
    """Run one fresh kernel; its RESULT lines, or None if it hung (its whole process group is then killed)."""
    setup, launch = CONTENDERS[name]
    code = KERNEL.format(
        here=here,
        matmul=matmul,
        setup=setup + setup_extra,
        launches=launches,
        skip=skip,
        launch=launch.format(here=here),
    )
    env = {**os.environ, **extra_env, "OMP_NUM_THREADS": "2"}
    proc = subprocess.Popen(
        [sys.executable, "-c", code],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        start_new_session=True,
    )
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        return None
    if proc.returncode != 0:
        raise RuntimeError(f"{name} failed:\n{err[-3000:]}")
    return [json.loads(line.split(" ", 1)[1]) for line in out.splitlines() if line.startswith("RESULT ")]


def median(results: list[dict], key: str) -> str:
    return f"{statistics.median(r[key] for r in results):.3f} s" if results else "n/a"


def compare(args: argparse.Namespace, env: dict[str, str]) -> None:
    here = tempfile.mkdtemp(prefix="bench-launch-")
    Path(here, "bench_ranks.py").write_text(RANK_BODY)
    spawn_fails = subprocess.run([sys.executable, "-c", NOTEBOOK_FN_CHECK], capture_output=True, text=True, timeout=120)
    spawn_note = "no: " + next(
        (ln.strip().split(" on <module")[0] for ln in spawn_fails.stderr.splitlines() if "Can't get attribute" in ln),
        f"exit {spawn_fails.returncode}",
    )
    notebook_fn = {
        "gpulab.launch": "yes (by value)",
        "torchrun": "no (a script file)",
        "mp.spawn": spawn_note,
        "Lightning ddp_notebook": "yes (fork)",
        "accelerate notebook_launcher": "yes (fork)",
    }
    rows = []
    timeout = args.hang_timeout + 60  # the clean runs may be slow on a loaded machine; they never hang by design

    def survival(name: str, **kw) -> str:
        res = run_kernel(here, name, matmul=True, timeout=args.hang_timeout + 15, extra_env=env, **kw)
        return (
            f"hung (killed at {args.hang_timeout + 15:.0f} s)" if res is None else f"ok, ready {median(res, 'ready_s')}"
        )

    firsts = [
        r
        for _ in range(args.samples)
        for r in run_kernel(here, "gpulab.launch", matmul=False, timeout=timeout, extra_env=env)
    ]
    rows.append(
        [
            "gpulab.launch, first",
            notebook_fn["gpulab.launch"],
            median(firsts, "ready_s"),
            median(firsts, "total_s"),
            survival("gpulab.launch"),
        ]
    )
    warm = "from gpulab.ranks.fork_server import warm_up_launcher\nwarm_up_launcher(); time.sleep(3)\n"
    warmed = [
        r
        for _ in range(args.samples)
        for r in run_kernel(here, "gpulab.launch", matmul=False, timeout=timeout, extra_env=env, setup_extra=warm)
    ]
    rows.append(
        [
            "gpulab.launch, first after warm-up",
            "yes (by value)",
            median(warmed, "ready_s"),
            median(warmed, "total_s"),
            "(as above)",
        ]
    )
    repeats = run_kernel(
        here, "gpulab.launch", matmul=False, launches=args.repeats + 1, skip=1, timeout=timeout, extra_env=env
    )
    rows.append(
        [
            f"gpulab.launch, repeat (median of {args.repeats})",
            "yes (by value)",
            median(repeats, "ready_s"),
            median(repeats, "total_s"),
            survival("gpulab.launch", launches=args.repeats + 1, skip=1),
        ]
    )
    for name in ["torchrun", "mp.spawn", "Lightning ddp_notebook", "accelerate notebook_launcher"]:
        if name.startswith("accelerate") and not args.accelerate_dir:
            rows.append([name, notebook_fn[name], "not run", "not run", "pass --accelerate-dir"])
            continue
        results = [
            r
            for _ in range(args.samples)
            for r in (run_kernel(here, name, matmul=False, timeout=timeout, extra_env=env) or [])
        ]
        rows.append([name, notebook_fn[name], median(results, "ready_s"), median(results, "total_s"), survival(name)])
    print(
        text_table(
            [
                "launcher (2 gloo ranks)",
                "runs a notebook function",
                "ready",
                "total",
                "after parent matmul, 2 threads/rank",
            ],
            rows,
        )
    )
    base = statistics.median(r["total_s"] for r in repeats)
    print(f"\nours (repeat) total = {base:.3f} s; each other launcher's total ÷ ours:")
    for row in rows[3:]:
        if row[3].endswith(" s"):
            print(f"  {row[0]}: {float(row[3][:-2]) / base:.1f}×")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=3, help="fresh kernels per launcher (default 3)")
    parser.add_argument("--repeats", type=int, default=10, help="repeat launches of ours in one kernel (default 10)")
    parser.add_argument("--hang-timeout", type=float, default=30.0, help="seconds before a launch counts as hung")
    parser.add_argument("--accelerate-dir", default=None, help="a --target folder where accelerate is installed")
    parser.add_argument("--ours-only", action="store_true", help="only gpulab.launch alone: repeats, a raise, CPU")
    args = parser.parse_args()
    env = {"PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), args.accelerate_dir, os.environ.get("PYTHONPATH")]))}
    if not args.ours_only:
        compare(args, env)
    alone = subprocess.run(
        [sys.executable, "-c", OURS_ALONE.format(repeats=args.repeats)],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, **env},
    )
    if alone.returncode != 0:
        raise RuntimeError(alone.stderr[-3000:])
    o = json.loads(alone.stdout.splitlines()[-1])
    print(
        f"\ngpulab.launch alone, {args.repeats} repeat launches of a trivial function (return the rank): "
        f"ready {o['ready_s']:.3f} s, total {o['total_s']:.3f} s (medians), {o['ports']} different ports; "
        f"a rank that raises: reported as rank {o['failed_rank']} after at most {o['failure_s']:.2f} s (3 tries), "
        f"at most {o['raise_to_report_s']:.2f} s after its raise (goal ≤ 0.5 s)"
    )
    print(
        f"the launching process while 2 ranks sleep 10 s: {100 * o['parent_cpu']:.2f} % of one core "
        f"(the larger of 2 runs, seconds 2-8; goal < 2 %)"
    )
    print(
        textwrap.dedent(f"""
        machine: {os.cpu_count()} cores; python {sys.version.split()[0]}; samples {args.samples} fresh kernels each""")
    )


if __name__ == "__main__":
    main()
