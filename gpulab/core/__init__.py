"""The ground floor: what every other subpackage stands on, with no GPU and no torch needed to read it.

``units`` formats bytes, seconds and rates; ``tables`` renders every result as text and HTML; ``settings`` reads the
course's switches (``GPULAB_FAST``); ``readings`` holds what was read from a GPU; ``visible_text`` reads
``CUDA_VISIBLE_DEVICES`` as CUDA does and ``visible`` maps it onto a machine's GPUs; ``shares`` splits a GPU's memory
between the kernels that share it, and ``memory_cap_text`` reads the cap a kernel is given (``GPULAB_MEMORY_CAP``);
``arguments`` validates what a learner passed, at the door;
``verdicts`` reads a measurement against its prediction or bound, and names readings that cannot be true; ``frames``
and ``widget_view`` serve the tracebacks and the widgets; ``lazy`` gives each subpackage its names on first use.
Everything here uses the standard library only (``tests/test_layers.py``): what touches torch or the process
(``compat``, ``cuda_start``) lives in ``gpulab.machine``, and a pure helper that one feature uses lives
beside it (each rank's device in ``gpulab.ranks``, the GPU cells' recordings in ``gpulab.checkup``). The chapters
reach these through ``gpulab.``'s verbs.
"""

from .lazy import export_lazily

# the shares of a GPU that kernels hold (notebooks/02_choosing_gpus.ipynb, the workshop guide)
export_lazily(
    __name__,
    {
        "shares_of": "shares",
        "share_cap_bytes": "shares",
    },
)
