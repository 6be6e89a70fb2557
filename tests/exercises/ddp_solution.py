"""The answer to chapter 04's last exercise: digits_single.py turned into a DDP script (run by the checker's tests).

The wrong answers in ddp_wrong.py are this file with one piece taken out or changed.
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

TEST_SIZE = 297


def load_data(train_size):
    x, y = load_digits(return_X_y=True)
    x, y = torch.tensor(x / 16, dtype=torch.float32), torch.tensor(y)
    return TensorDataset(x[:train_size], y[:train_size]), TensorDataset(x[-TEST_SIZE:], y[-TEST_SIZE:])


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10))

    def forward(self, x):
        return self.layers(x)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--lr", type=float, default=0.1)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--train-size", type=int, default=1500)
    parser.add_argument("--out", default="digits.pt")
    args = parser.parse_args()

    local_rank = int(os.environ["LOCAL_RANK"])
    if torch.cuda.device_count() >= int(os.environ["LOCAL_WORLD_SIZE"]):
        torch.cuda.set_device(local_rank)
        dist.init_process_group("nccl")
        device = torch.device("cuda", local_rank)
    else:
        dist.init_process_group("gloo")
        device = torch.device("cpu")
    rank = dist.get_rank()
    torch.manual_seed(args.seed)
    train, test = load_data(args.train_size)
    sampler = DistributedSampler(train, shuffle=True, seed=args.seed)
    loader = DataLoader(train, batch_size=args.batch_size, sampler=sampler)
    model = Net().to(device)
    model = DDP(model, device_ids=[local_rank]) if device.type == "cuda" else DDP(model)
    opt = torch.optim.SGD(model.parameters(), lr=args.lr)

    for epoch in range(args.epochs):
        sampler.set_epoch(epoch)
        for x, y in loader:
            x, y = x.to(device), y.to(device)
            opt.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
        if rank == 0:
            print(f"epoch {epoch}: last batch's loss {loss.item():.3f}")

    if rank == 0:
        torch.save(model.module.state_dict(), args.out)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
