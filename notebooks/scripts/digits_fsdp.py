"""digits_ddp.py with FSDP instead of DDP: each rank keeps only its shard of every parameter, of its gradient and of
the optimizer's state, and gathers a layer's full weights just before it computes with them.
`diff digits_ddp.py digits_fsdp.py` shows everything that changes.

    torchrun --nproc-per-node=gpu digits_fsdp.py    # one process per GPU of this machine (NCCL)
    torchrun --nproc-per-node=2 digits_fsdp.py      # 2 processes; on the CPU (gloo) where there are fewer GPUs

fully_shard (FSDP2, torch.distributed.fsdp) is applied to each Linear layer, then to the whole model; the optimizer
is built after, on the sharded parameters. Rank 0 saves the full weights, gathered from every rank's shard.
Taught in notebooks/08_precision_restarts_fsdp.ipynb.
"""

import argparse
import os

import torch
import torch.distributed as dist
import torch.nn.functional as F
from sklearn.datasets import load_digits
from torch import nn
from torch.distributed.checkpoint.state_dict import StateDictOptions, get_model_state_dict
from torch.distributed.fsdp import fully_shard
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
    if torch.cuda.device_count() >= int(os.environ["LOCAL_WORLD_SIZE"]):
        torch.cuda.set_device(local_rank)  # before init_process_group, so that NCCL uses this GPU, not cuda:0
        dist.init_process_group("nccl")
        return torch.device("cuda", local_rank)
    dist.init_process_group("gloo")
    return torch.device("cpu")


def main():
    parser = argparse.ArgumentParser(description="Train a digits classifier with FSDP, under torchrun.")
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--batch-size", type=int, default=32, help="per process: the global batch is this × WORLD_SIZE")
    parser.add_argument("--lr", type=float, default=0.1)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--train-size", type=int, default=1500)
    parser.add_argument("--out", default="digits.pt")
    args = parser.parse_args()

    local_rank = int(os.environ["LOCAL_RANK"])  # set by torchrun for each process it starts
    device = setup(local_rank)
    rank = dist.get_rank()
    torch.manual_seed(args.seed)
    train, test = load_data(args.train_size)
    sampler = DistributedSampler(train, shuffle=True, seed=args.seed)  # this rank's 1/WORLD_SIZE of the items
    loader = DataLoader(train, batch_size=args.batch_size, sampler=sampler)
    model = Net().to(device)
    for layer in model.layers:
        if isinstance(layer, nn.Linear):
            fully_shard(layer)  # one unit per layer: its full weights exist only while it computes
    fully_shard(model)  # the rest, and the root that starts the first all-gather
    opt = torch.optim.SGD(model.parameters(), lr=args.lr)  # after sharding: it sees (and keeps state for) shards

    for epoch in range(args.epochs):
        sampler.set_epoch(epoch)  # a new order every epoch; without it every epoch repeats epoch 0's
        for x, y in loader:
            x, y = x.to(device), y.to(device)
            opt.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()  # FSDP reduce-scatters the gradients: each rank gets its shard's average
            opt.step()
        if rank == 0:
            print(f"epoch {epoch}: last batch's loss {loss.item():.3f}")

    # Every rank takes part (the shards are gathered); rank 0 gets the full tensors on the CPU, the others nothing.
    full = get_model_state_dict(model, options=StateDictOptions(full_state_dict=True, cpu_offload=True))
    if rank == 0:  # the same file digits_ddp.py writes: a plain Net loads it
        torch.save(full, args.out)
        plain = Net()
        plain.load_state_dict(full)
        print(f"test accuracy {accuracy(plain, test, torch.device('cpu')):.3f}, weights saved to {args.out}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
