"""The deprecated way, as older tutorials wrote it: told its device by a --local_rank argument. Do not copy this.

    python -m torch.distributed.launch --nproc_per_node=2 notebooks/scripts/launch_legacy.py

``torch.distributed.launch`` passed each process ``--local_rank=N``. Since PyTorch 2.0 it passes ``--local-rank=N``
(a hyphen), which this parser does not know, and it warns that it is deprecated in favour of torchrun, which passes
nothing and sets LOCAL_RANK instead (see digits_ddp.py). Kept to show those messages in ``notebooks/04_ddp.ipynb``.
"""

import argparse

parser = argparse.ArgumentParser()
parser.add_argument("--local_rank", type=int, default=0)
args = parser.parse_args()

import torch.distributed as dist  # noqa: E402  (after the arguments, so that a refused argument fails fast)

dist.init_process_group(backend="gloo")
print(f"rank {dist.get_rank()} of {dist.get_world_size()} uses device {args.local_rank}")
dist.destroy_process_group()
