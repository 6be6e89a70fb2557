"""When does a second device pay? A DDP step predicted, measured and taken apart, on this machine and on GPUs.

``cost`` predicts a DDP step from a FLOP rate and a link (pure); ``published`` holds the GPU setups' published
figures (pure); ``steps`` measures a step's split into compute and tail, and its all-reduce and exposed part, in
ranks; ``probes`` runs those measurements on ranks and measures this machine's own ceiling on speed-up, gloo's link
and what DDP pays to meet; ``sweep`` runs the sweep of work per step on 1 and 2 ranks beside the model's predictions;
``on_gpus`` compares the model with a real NCCL run on two GPUs; ``quiet`` says how quiet the machine is (the line at
the top of a chapter that reads timings) and ``run_verdicts`` judges a run by its ceiling and its crossover (pure).
Taught in ``notebooks/07_scaling.ipynb``.
"""

from ..core.lazy import export_lazily

export_lazily(
    __name__,
    {
        "allreduce_s": "cost",
        "SETUPS": "published",
        "predicted_speedups": "published",
        "ddp_sync_s": "probes",
        "gloo_link": "probes",
        "machine_ceiling": "probes",
        "splits": "probes",
        "StepPlan": "steps",
        "scaling_sweep": "sweep",
        "steps_for": "sweep",
        "compare_on_gpus": "on_gpus",
        "how_quiet": "quiet",
        "crossover_verdict": "run_verdicts",
    },
)
