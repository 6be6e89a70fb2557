"""What this machine has, read without starting CUDA: its GPUs (NVML, or a described machine), host and software.

``nvml`` is the one module that talks to NVML; ``simulated`` describes GPUs for machines that have none (always labelled
SIMULATED), and ``described`` checks such a description as it loads; ``resolve`` turns what a learner wrote for
``machine=`` into a reader; ``inventory`` lists every GPU and the CPU side (``gpulab.devices()``); ``host`` reads cores
and RAM (cgroup-aware); ``software`` the versions; ``cuda`` how many GPUs CUDA would give this process and whether CUDA
has started here; ``memory_cap`` caps a kernel that shares its GPU as CUDA starts in it; ``probe_noise`` and
``srun_notice`` keep two kinds of noise that say nothing about the learner's code out of a notebook (driver probes
where no driver exists, Lightning's srun advice where no SLURM job runs). Taught in ``notebooks/00_setup.ipynb``.
"""

from ..core.lazy import export_lazily

export_lazily(
    __name__,
    {
        "devices": "inventory",
        "host_info": "host",
        "SimulatedGpuReader": "simulated",
        "cuda_gpu_count": "cuda",
        "cuda_state": "cuda",
        "add_cap_note": "memory_cap",
    },
)
