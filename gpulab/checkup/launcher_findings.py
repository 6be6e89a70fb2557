"""What the doctor says of the two notebook launchers learners meet elsewhere: Lightning's ``ddp_notebook`` and
accelerate's ``notebook_launcher``, each read from a ``KernelState`` with the launcher's own condition quoted in a
comment (from ``doctor``, which grew past one screen of code). Taught in ``notebooks/04_ddp.ipynb``.
"""

from __future__ import annotations

import os

from ..machine.threads import COURSE_RANKS, lightning_threads_per_rank
from .facts import Finding
from .kernel_state import KernelState

__all__ = ["RESTART", "lightning_finding", "accelerate_finding"]

RESTART = "Restart the kernel (Kernel → Restart) and run the cells again without that line before the launch"


def lightning_finding(s: KernelState) -> Finding:
    """Whether Lightning's ``ddp_notebook`` would start, refuse, fail or hang in a kernel in state ``s``."""
    # lightning/fabric/strategies/launchers/multiprocessing.py (Lightning 2.6): ddp_notebook = ddp_fork; launch()
    # calls _check_bad_cuda_fork(), which refuses where torch.cuda.is_initialized() (older torch) or lets the ranks
    # fail with "Cannot re-initialize CUDA in forked subprocess"; each rank gets cores ÷ ranks OpenMP threads, and a
    # started pool does not survive the fork: 2+ threads hang (gpulab.fork_experiment).
    if not s.fork_available:
        return Finding(
            False,
            "Lightning ddp_notebook would refuse",
            "it forks, and this platform has no fork",
            "use gpulab.launch, or strategy='ddp' from a script.",
        )
    if s.cuda.initialized:
        return Finding(
            False,
            "Lightning ddp_notebook would fail",
            "CUDA is initialised in this kernel: its forked "
            "ranks stop with 'Cannot re-initialize CUDA in forked subprocess'",
            RESTART + ".",
        )
    per_rank = lightning_threads_per_rank(s.usable_cores, COURSE_RANKS)
    pool = s.extra_threads and os.environ.get("OMP_NUM_THREADS", "") != "1"
    here = f"with {COURSE_RANKS} ranks on {s.usable_cores} usable core(s) Lightning gives each forked rank {per_rank}"
    if pool and per_rank >= 2:
        return Finding(
            False,
            "Lightning ddp_notebook would hang",
            f"OpenMP's pool is running here, and {here} threads (cores ÷ ranks): their first parallel op hangs",
            "restart the kernel, set OMP_NUM_THREADS=1 and torch.set_num_threads(1) in the first cell.",
        )
    if pool:
        why = f"OpenMP's pool is running here, but {here} thread (cores ÷ ranks): no pool, no hang (chapter 06)"
        return Finding(True, "Lightning ddp_notebook would start", why)
    return Finding(True, "Lightning ddp_notebook would start", "nothing here makes its fork fail or hang")


def accelerate_finding(s: KernelState) -> Finding:
    """Whether accelerate's ``notebook_launcher`` would start, refuse, fail or hang in a kernel in state ``s``."""
    # accelerate/launchers.py, notebook_launcher with num_processes > 1: raises ValueError when
    # AcceleratorState._shared_state is not empty ("the Accelerator should only be initialized inside your training
    # function"), RuntimeError when bitsandbytes is imported (are_libraries_initialized), ValueError when
    # torch.cuda.is_initialized(); then forks on master_port 29500 unless use_port is given (PR #4059: torch ≥ 2.9's
    # LaunchConfig itself touched CUDA before that fix).
    if s.accelerator_made:
        return Finding(
            False,
            "accelerate notebook_launcher would refuse",
            "an Accelerator was created in this kernel (it must be created inside the training function)",
            RESTART + ".",
        )
    if s.bitsandbytes:
        return Finding(
            False,
            "accelerate notebook_launcher would refuse",
            "bitsandbytes is imported here, and it initialises CUDA",
            "restart the kernel; import bitsandbytes inside the training function.",
        )
    if s.cuda.initialized:
        return Finding(
            False,
            "accelerate notebook_launcher would refuse",
            f"CUDA is initialised in this kernel{': ' + str(s.cuda_started_by) if s.cuda_started_by else ''}",
            RESTART + ".",
        )
    if 29500 in s.ports:
        return Finding(
            False,
            "accelerate notebook_launcher would fail",
            "its default port 29500 is held by this kernel",
            "pass use_port='29501' (or free the port).",
        )
    if s.extra_threads and os.environ.get("OMP_NUM_THREADS", "") != "1":
        return Finding(
            False,
            "accelerate notebook_launcher may hang",
            "it forks this kernel, whose OpenMP pool is running",
            "restart the kernel and set OMP_NUM_THREADS=1 before any CPU work.",
        )
    return Finding(True, "accelerate notebook_launcher would start", "nothing here makes it refuse or hang")
