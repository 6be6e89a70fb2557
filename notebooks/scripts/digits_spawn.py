"""digits_ddp.py started from Python with torch.multiprocessing.spawn instead of torchrun (the form of PyTorch's
tutorial script multigpu.py): the script starts its own processes and tells each one its place.

    python digits_spawn.py                         # one process per GPU, or 2 on the CPU (gloo)

`diff digits_spawn.py digits_ddp.py` shows what torchrun does for you. spawn imports the function it runs from this
file in each new process, so it works from a script, not from a function defined in a notebook cell. Taught in
notebooks/04_ddp.ipynb.
"""

import argparse
import os

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn.functional as F
from sklearn.datasets import load_digits
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

TEST_SIZE = 297  # the last 297 of the 1,797 images are the test set; training takes from the first 1,500


def load_data(train_size):
    x, y = load_digits(return_X_y=True)  # 8×8 images, pixels 0..16, labels 0..9
    x, y = torch.tensor(x / 16, dtype=torch.float32), torch.tensor(y)
    train = TensorDataset(x[:train_size], y[:train_size])
    test = TensorDataset(x[-TEST_SIZE:], y[-TEST_SIZE:])
    return train, test


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10))

    def forward(self, x):
        return self.layers(x)


def accuracy(model, data, device):
    x, y = data.tensors
    with torch.no_grad():
        return (model(x.to(device)).argmax(1) == y.to(device)).float().mean().item()


def setup(local_rank, world_size):
    """NCCL with one GPU per process where there are enough GPUs; gloo on the CPU otherwise."""
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")  # where the processes meet: torchrun would set these
    os.environ.setdefault("MASTER_PORT", "29511")
    if torch.cuda.device_count() >= world_size:
        torch.cuda.set_device(local_rank)  # before init_process_group, so that NCCL uses this GPU, not cuda:0
        dist.init_process_group("nccl", rank=local_rank, world_size=world_size)
        return torch.device("cuda", local_rank)
    dist.init_process_group("gloo", rank=local_rank, world_size=world_size)
    return torch.device("cpu")


def main(local_rank, world_size, args):
    device = setup(local_rank, world_size)
    rank = dist.get_rank()
    torch.manual_seed(args.seed)
    train, test = load_data(args.train_size)
    sampler = DistributedSampler(train, shuffle=True, seed=args.seed)  # this rank's 1/WORLD_SIZE of the items
    loader = DataLoader(train, batch_size=args.batch_size, sampler=sampler)
    model = Net().to(device)
    model = DDP(model, device_ids=[local_rank]) if device.type == "cuda" else DDP(model)
    opt = torch.optim.SGD(model.parameters(), lr=args.lr)

    for epoch in range(args.epochs):
        sampler.set_epoch(epoch)  # a new order every epoch; without it every epoch repeats epoch 0's
        for x, y in loader:
            x, y = x.to(device), y.to(device)
            opt.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()  # DDP averages the gradients over all processes here
            opt.step()
        if rank == 0:
            print(f"epoch {epoch}: last batch's loss {loss.item():.3f}")

    if rank == 0:  # one process writes; .module: the model inside DDP, saved without the "module." prefix
        torch.save(model.module.state_dict(), args.out)
        print(f"test accuracy {accuracy(model.module, test, device):.3f}, weights saved to {args.out}")
    dist.destroy_process_group()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="Train a digits classifier with DDP, started by mp.spawn.")
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--batch-size", type=int, default=32, help="per process: the global batch is this × WORLD_SIZE")
    parser.add_argument("--lr", type=float, default=0.1)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--train-size", type=int, default=1500)
    parser.add_argument("--out", default="digits.pt")
    args = parser.parse_args()
    world_size = torch.cuda.device_count() or 2  # one process per GPU; 2 on the CPU
    mp.spawn(main, args=(world_size, args), nprocs=world_size)  # calls main(i, world_size, args) in process i
