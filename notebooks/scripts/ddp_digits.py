"""Train the course's digits model with DistributedDataParallel, one process per device, started by torchrun.

    torchrun --nproc-per-node=2 notebooks/scripts/ddp_digits.py --epochs 5            # one machine, 2 processes
    torchrun --nnodes=2 --node-rank=N --nproc-per-node=1 --rdzv-backend=c10d \\
             --rdzv-endpoint=HEAD:29500 --rdzv-id=JOB notebooks/scripts/ddp_digits.py  # on each of 2 machines

Everything a process needs to know about its place comes from the variables torchrun sets: LOCAL_RANK (which
device on this machine), RANK and WORLD_SIZE (its place among all processes), MASTER_ADDR / MASTER_PORT (where to
meet). There is no --local_rank argument: that was how the deprecated ``python -m torch.distributed.launch`` told a
script its device. The same file runs on GPUs (NCCL, when every process has a GPU of its own) and otherwise on the
CPU (gloo): 2 processes on one GPU, or two nodes sharing one GPU, train on the CPU rather than fail.
Rank 0 prints why it chose its backend, then one JSON line with the result. Taught in ``notebooks/04_ddp.ipynb``.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler

from gpulab.ranks.agree import agree_on_devices, this_rank_gpu
from gpulab.workload import accuracy, load_digits, mlp


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--batch-size", type=int, default=32, help="per process; the global batch is this × WORLD_SIZE")
    parser.add_argument("--lr", type=float, default=0.05, help="for one process; scaled by WORLD_SIZE (see below)")
    parser.add_argument("--checkpoint", default=os.path.join(tempfile.gettempdir(), "ddp_digits.pt"))
    args = parser.parse_args()

    local_rank = int(os.environ["LOCAL_RANK"])  # set by torchrun for each process it starts
    # gloo first: it needs only the CPU, so it starts anywhere, and through it the ranks compare their GPUs. A count
    # on each node cannot see that two nodes share one GPU; the GPUs' UUIDs, gathered from every rank, can.
    dist.init_process_group("gloo")  # reads RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT
    rank, world_size = dist.get_rank(), dist.get_world_size()
    plan = agree_on_devices(this_rank_gpu(local_rank))  # NCCL only if every rank has a GPU of its own
    device, group = torch.device(plan.devices[rank]), None  # group None: the gloo group above
    if plan.backend == "nccl":
        torch.cuda.set_device(device)  # before the NCCL group: NCCL then uses this GPU, not cuda:0 for all
        group = dist.new_group(backend="nccl")  # every rank calls it: they all decided the same
    else:
        torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
    if rank == 0:
        print(plan.reason, flush=True)

    data = load_digits()
    sampler = DistributedSampler(data.train, shuffle=True, seed=0)  # each process gets its own 1/WORLD_SIZE
    loader = DataLoader(data.train, batch_size=args.batch_size, sampler=sampler, pin_memory=device.type == "cuda")
    model = DDP(mlp().to(device), device_ids=[device.index] if device.type == "cuda" else None, process_group=group)
    # The global batch is batch_size × world_size: scale the one-process learning rate with it (linear scaling).
    opt = torch.optim.SGD(model.parameters(), lr=args.lr * world_size, momentum=0.9)

    samples, t0 = 0, time.perf_counter()
    for epoch in range(args.epochs):
        sampler.set_epoch(epoch)  # without it every epoch visits the data in the same order
        for xb, yb in loader:
            xb, yb = xb.to(device, non_blocking=True), yb.to(device, non_blocking=True)
            opt.zero_grad(set_to_none=True)
            torch.nn.functional.cross_entropy(model(xb), yb).backward()  # gradients averaged across processes here
            opt.step()
            samples += len(xb)
    seconds = time.perf_counter() - t0

    counts = torch.tensor([samples, seconds], dtype=torch.float64, device=device)
    dist.all_reduce(counts, group=group)  # total samples, summed seconds

    if rank == 0:  # one writer; the others wait at the barrier until the file is complete
        torch.save(model.module.state_dict(), args.checkpoint)  # .module: without DDP's "module." prefix
    # The barrier is also the last collective, on purpose: it carries no tensor of ours. gloo's worker thread lets
    # go of the all_reduce's tensor while this thread waits here. Let go while Python shuts down, it aborts the
    # process ("terminate called without an active exception"), and torchrun reports a failed rank.
    dist.barrier()
    restored = mlp()
    restored.load_state_dict(torch.load(args.checkpoint, map_location="cpu"))  # wherever it was saved from
    if rank == 0:
        print(
            json.dumps(
                {
                    "world_size": world_size,
                    "backend": plan.backend,
                    "epochs": args.epochs,
                    "samples_per_s": counts[0].item() / (counts[1].item() / world_size),
                    "test_accuracy": accuracy(restored, data.test),
                    "checkpoint": args.checkpoint,
                }
            )
        )
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
