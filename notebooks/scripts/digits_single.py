"""Train a small classifier on scikit-learn's digits on one device: a GPU if there is one, otherwise the CPU.

    python digits_single.py                        # 5 epochs, saves digits.pt
    python digits_single.py --epochs 2 --out /tmp/digits.pt

digits_ddp.py is the same script for several processes under torchrun; `diff digits_single.py digits_ddp.py` shows
everything DDP changes. Taught in notebooks/04_ddp.ipynb.
"""

import argparse

import torch
import torch.nn.functional as F
from sklearn.datasets import load_digits
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

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


def main():
    parser = argparse.ArgumentParser(description="Train a digits classifier on one device.")
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--lr", type=float, default=0.1)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--train-size", type=int, default=1500)
    parser.add_argument("--out", default="digits.pt")
    args = parser.parse_args()

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(args.seed)
    train, test = load_data(args.train_size)
    loader = DataLoader(train, batch_size=args.batch_size, shuffle=True)
    model = Net().to(device)
    opt = torch.optim.SGD(model.parameters(), lr=args.lr)

    for epoch in range(args.epochs):
        for x, y in loader:
            x, y = x.to(device), y.to(device)
            opt.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
        print(f"epoch {epoch}: last batch's loss {loss.item():.3f}")

    torch.save(model.state_dict(), args.out)
    print(f"test accuracy {accuracy(model, test, device):.3f}, weights saved to {args.out}")


if __name__ == "__main__":
    main()
