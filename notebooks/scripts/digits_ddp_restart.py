"""The starting point of chapter 08's exercise: digits_ddp_resume.py without its snapshot. It trains, and it already
has what a restart needs around the snapshot (an optimizer with momentum, a store per attempt, a --snapshot argument);
the exercise adds the snapshot, written by rank 0 at the end of each epoch and read by every rank when it starts.

    torchrun --nproc-per-node=2 --max-restarts=1 digits_ddp_restart.py

Without the snapshot a restarted world trains from scratch. Taught in notebooks/08_precision_restarts_fsdp.ipynb.
"""

import argparse
import os

import torch
import torch.distributed as dist
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


def setup(local_rank):
    """NCCL with one GPU per process where there are enough GPUs; gloo on the CPU otherwise."""
    # torchrun keeps one key-value store for the whole job, restarts included, and the ranks of a restarted world can
    # read the dead world's addresses from it (gloo: "connectFullMesh failed ... Connection refused"; see
    # pytorch/pytorch#135712). A prefix named after the attempt gives each world keys of its own.
    store, rank, world_size = next(dist.rendezvous("env://"))  # what init_process_group("gloo") does by itself
    store = dist.PrefixStore(f"attempt_{os.environ.get('TORCHELASTIC_RESTART_COUNT', '0')}", store)
    if torch.cuda.device_count() >= int(os.environ["LOCAL_WORLD_SIZE"]):
        torch.cuda.set_device(local_rank)  # before init_process_group, so that NCCL uses this GPU, not cuda:0
        dist.init_process_group("nccl", store=store, rank=rank, world_size=world_size)
        return torch.device("cuda", local_rank)
    dist.init_process_group("gloo", store=store, rank=rank, world_size=world_size)
    return torch.device("cpu")


def main():
    parser = argparse.ArgumentParser(description="Train a digits classifier with DDP, resuming from a snapshot.")
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--batch-size", type=int, default=32, help="per process: the global batch is this × WORLD_SIZE")
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--train-size", type=int, default=1500)
    parser.add_argument("--out", default="digits.pt")
    parser.add_argument("--snapshot", default="snapshot.pt", help="written at each epoch's end, read at start")
    args = parser.parse_args()

    local_rank = int(os.environ["LOCAL_RANK"])  # set by torchrun for each process it starts
    device = setup(local_rank)
    rank = dist.get_rank()
    torch.manual_seed(args.seed)
    train, test = load_data(args.train_size)
    sampler = DistributedSampler(train, shuffle=True, seed=args.seed)  # this rank's 1/WORLD_SIZE of the items
    loader = DataLoader(train, batch_size=args.batch_size, sampler=sampler)
    model = Net().to(device)
    opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)  # momentum: state that a snapshot must keep
    # exercise: load the snapshot here if it exists (every rank), and start at the epoch after the last one it saw
    model = DDP(model, device_ids=[local_rank]) if device.type == "cuda" else DDP(model)

    for epoch in range(args.epochs):
        sampler.set_epoch(epoch)  # a new order every epoch; without it every epoch repeats epoch 0's
        for x, y in loader:
            x, y = x.to(device), y.to(device)
            opt.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()  # DDP averages the gradients over all processes here
            opt.step()
        # exercise: write the snapshot here (the model, the optimizer, the epochs run), from rank 0 only
        if rank == 0:
            print(f"epoch {epoch}: last batch's loss {loss.item():.3f}", flush=True)

    if rank == 0:  # one process writes; .module: the model inside DDP, saved without the "module." prefix
        torch.save(model.module.state_dict(), args.out)
        print(f"test accuracy {accuracy(model.module, test, device):.3f}, weights saved to {args.out}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
