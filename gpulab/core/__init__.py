"""The ground floor: what every other subpackage stands on, with no GPU and no torch needed to read it.

``units`` formats bytes, seconds and rates; ``tables`` renders every result as text and HTML; ``settings`` reads the
course's switches (``GPULAB_FAST``); ``readings`` holds what was read from a GPU; ``visible_text`` reads
``CUDA_VISIBLE_DEVICES`` as CUDA does and ``visible`` maps it onto a machine's GPUs; ``rank_devices`` decides the
backend and each rank's device; ``shares`` splits a GPU's memory between the kernels that share it, and
``memory_cap_text`` reads the cap a kernel is given (``GPULAB_MEMORY_CAP``); ``arguments`` validates what a learner
passed, at the door; ``renamed`` refuses old keyword spellings by name; ``verdicts`` reads a measurement against its
prediction or bound, and names readings that cannot be true; ``frames``, ``cuda_evidence`` and ``widget_view`` serve
the tracebacks, the CUDA state and the widgets; ``recorded_cells`` finds what a GPU printed for a cell that skips here
(the GPU edition's bundles); ``lazy`` gives each subpackage its names on first use. Everything here uses the standard
library only (``tests/test_layers.py``): what touches torch or the process (``compat``, ``cuda_start``)
lives in ``gpulab.machine``. The chapters reach these through ``gpulab.``'s verbs.
"""

from .lazy import export_lazily

# the verdicts a chapter cell prints about its own measurement (notebooks/05_live_monitor.ipynb, 07_scaling.ipynb)
export_lazily(
    __name__,
    {
        "Verdict": "verdicts",
        "NotMeasured": "verdicts",
        "crossover_verdict": "verdicts",
        "overhead_verdict": "verdicts",
        # the shares of a GPU that kernels hold (notebooks/02_choosing_gpus.ipynb)
        "shares_of": "shares",
        "share_cap_bytes": "shares",
    },
)
