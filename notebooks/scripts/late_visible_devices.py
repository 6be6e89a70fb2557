"""CUDA_VISIBLE_DEVICES set after CUDA has started changes nothing in this process (chapter 02), in plain PyTorch.

    python scripts/late_visible_devices.py

CUDA reads the variable once, when it starts. The script starts CUDA, hides every GPU, and looks again: still the same
GPUs. Without a GPU the first CUDA line fails, and the script says what a GPU machine shows.
"""

import os

import torch

print("GPUs PyTorch counts:", torch.cuda.device_count())
try:
    x = torch.ones(2).cuda()  # CUDA starts here, and reads CUDA_VISIBLE_DEVICES
except (RuntimeError, AssertionError) as exc:  # no GPU, or a CPU-only build of torch
    print("no GPU here:", str(exc).split(". ")[0].rstrip(".") + ".")
    print("On a GPU machine, the lines below show every GPU still in use after CUDA_VISIBLE_DEVICES=''.")
else:
    os.environ["CUDA_VISIBLE_DEVICES"] = ""  # hide every GPU... too late: CUDA has read it
    print(
        "after CUDA_VISIBLE_DEVICES='':",
        torch.cuda.device_count(),
        "GPU(s) | a new tensor goes to",
        torch.ones(1).cuda().device,
    )
    print("Set the variable before the first CUDA call: on the command line, or first thing in the program.")
