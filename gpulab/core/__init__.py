"""The ground floor: what every other subpackage stands on, with no GPU and no torch needed to read it.

``units`` formats bytes, seconds and rates; ``tables`` renders every result as text and HTML; ``settings`` reads the
course's switches (``GPULAB_FAST``); ``readings`` holds what was read from a GPU; ``visible`` reads
``CUDA_VISIBLE_DEVICES`` as CUDA does; ``rank_devices`` decides the backend and each rank's device; ``arguments``
checks what a learner passed, at the door; ``renamed`` refuses old keyword spellings by name; ``frames``,
``cuda_evidence`` and ``widget_view`` serve the tracebacks, the CUDA state and the widgets; ``lazy`` gives each
subpackage its names on first use. ``compat`` (torch's private APIs), ``cuda_start`` (who started CUDA) and
``threads`` (threads Python did not start) touch the process. The chapters reach these through ``gpulab.``'s verbs.
"""
