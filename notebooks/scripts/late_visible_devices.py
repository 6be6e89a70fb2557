"""Chapter 02: CUDA_VISIBLE_DEVICES set after CUDA has started, and the line that started it.

``python scripts/late_visible_devices.py``. On a GPU machine the line marked "CUDA starts here" starts CUDA and
``set_visible_devices`` refuses, naming that line. On a machine without a GPU the same line tries to start CUDA and
fails; gpulab records the attempt all the same, and the script prints the refusal a GPU machine gives, built from that
record and labelled as such.
"""

from dataclasses import replace

import torch

import gpulab
from gpulab.placement.setter import refusal

# In a notebook: the cell that moved the model to the GPU, run before the cell that picks the GPUs.
print("GPUs:", gpulab.cuda_gpu_count())
try:
    x = torch.ones(2).cuda()  # CUDA starts here
except (RuntimeError, AssertionError) as exc:  # no GPU (or no CUDA build): the attempt still happened
    print("no GPU here:", str(exc).split(". ")[0].rstrip(".") + ".")
state = gpulab.cuda_state()
print("cuda_state():", state)
if not state.variable_read and state.started_by is not None:
    gpu = replace(state, initialized=True, started_by=replace(state.started_by, error=None))
    print(
        "\nOn a GPU machine that line starts CUDA, and the next line raises CudaAlreadyStarted (this message is "
        "built from the same record, as a GPU machine words it):"
    )
    print("  Refused:", refusal("1", gpu), "\n")
try:
    gpulab.set_visible_devices([1])  # too late?
    print("Here set_visible_devices([1]) is accepted: CUDA never started in this process.")
except gpulab.CudaAlreadyStarted as exc:
    print("Refused:", exc)
