"""Which strategy: ``strategy=``, and the old homes of that choice, ``accelerator="ddp"`` and ``distributed_backend=``
(pure). Also today's defaults for several devices, in a script and in a notebook (where Lightning refuses the
strategies that re-launch a script and forks instead). Taught in ``notebooks/06_lightning.ipynb``.
"""

from __future__ import annotations

from .call import TranslationError
from .draft import Draft, fmt, removal
from .flag_history import ACCELERATORS, FLAG_HISTORY, STRATEGIES

__all__ = ["translate_strategy", "OLD_STRATEGY_NAMES", "NOT_IN_NOTEBOOK"]

NOT_IN_NOTEBOOK = ("ddp", "ddp_spawn")  # with or without a _find_unused_parameters_* suffix
OLD_STRATEGY_NAMES = (
    "dp",
    "ddp",
    "ddp2",
    "ddp_cpu",
    "ddp_spawn",
    "tpu_spawn",
    "deepspeed",
    "horovod",
    "ddp_sharded",
    "ddp_sharded_spawn",
    "ddp_fully_sharded",
)
_SOURCE_HISTORY = {"accelerator": "accelerator='ddp'", "distributed_backend": "distributed_backend"}


def translate_strategy(w: Draft) -> None:
    """Today's ``strategy=`` from wherever the old call chose it (or the old default for several devices)."""
    sources = [
        (flag, w.old[flag]) for flag in ("strategy", "distributed_backend") if w.old.get(flag) not in (None, "auto")
    ]
    accelerator = w.old.get("accelerator")
    if isinstance(accelerator, str) and accelerator.lower() not in ACCELERATORS | {"auto", "gpu"}:
        if accelerator.lower() not in OLD_STRATEGY_NAMES:
            raise TranslationError(
                f"accelerator={accelerator!r} is not a device type (today: auto, cpu, gpu, cuda, "
                "mps, tpu) nor a strategy name old releases accepted there."
            )
        sources.append(("accelerator", accelerator))
    if len(sources) > 1:
        named = " and ".join(fmt(f, v) for f, v in sources)
        raise TranslationError(
            f"{named} name the strategy twice: Lightning refused that (1.5: 'You have passed "
            "`Trainer(strategy=...)` but have also passed `Trainer(accelerator=...)`') or used one "
            "of them silently. Keep one, as strategy=."
        )
    count = w.device_count
    several = count is None or count > 1
    default = "ddp_notebook" if w.notebook else "ddp"
    if not sources:
        if several and w.old_device_flag:  # a call written for 1.x got 1.x's default; today's may differ
            w.front["strategy"] = default
            where = (
                "in a notebook 2.x picks ddp_fork (the same as ddp_notebook)"
                if w.notebook
                else "2.x picks ddp, which re-runs the script once per device"
            )
            w.change(
                "(no strategy)",
                f"strategy={default!r}",
                "default changed",
                f"several devices and no strategy: 1.x chose ddp_spawn (each process re-imports the script; "
                f"without `if __name__ == '__main__':` that ended in 'process 0 terminated with exit code 1'); "
                f"{where}",
            )
        return
    flag, value = sources[0]
    old = fmt(flag, value)
    removed_in = FLAG_HISTORY[_SOURCE_HISTORY[flag]].removed_in if flag in _SOURCE_HISTORY else None
    if not isinstance(value, str):  # a Strategy object: today's API already
        w.front["strategy"] = value
        return
    name = value.lower()
    if name == "dp":
        removed_in = removal("strategy='dp'")
        if several:
            w.front["strategy"] = default
            w.change(
                old,
                f"strategy={default!r}",
                "removed",
                "DataParallel (one process driving every GPU) is gone; DDP runs one process per device and each "
                "loads its own batch_size (DP split one batch), so the batch per step grows with the GPUs",
                removed_in,
            )
        else:
            w.change(
                old, "(dropped)", "removed", "DataParallel over one device (or none) is plain training", removed_in
            )
        return
    if name not in STRATEGIES:
        raise TranslationError(
            f"{old}: Lightning 2.6 has no {name!r} strategy, and the translator does not know what "
            f"replaced it. Today's DDP family: ddp (scripts), ddp_spawn, ddp_notebook (notebooks)."
        )
    new = name
    base, sep, suffix = name.partition("_find_unused")
    if w.notebook and base in NOT_IN_NOTEBOOK:
        new = "ddp_notebook" + sep + suffix
    w.front["strategy"] = new
    if flag != "strategy":
        w.change(
            old,
            f"strategy={new!r}",
            "removed",
            "a strategy, not a device: strategy= took this role in 1.5 and "
            "the device comes from accelerator=/devices=" + ("; ddp_notebook in a notebook" if new != name else ""),
            removed_in,
        )
    elif new != name:
        w.change(
            old,
            f"strategy={new!r}",
            "in a notebook",
            f"Lightning refuses {name} in a notebook ('not compatible with an interactive environment'): it "
            "starts processes by re-running a script or by spawn; ddp_notebook forks the notebook's process",
        )
    elif base == "ddp":
        w.change(
            old,
            old,
            "unchanged",
            "one process per device; Lightning starts the others by running your script "
            "again (one `python train.py` starts them all)",
        )
    elif base == "ddp_spawn":
        w.change(
            old,
            old,
            "unchanged",
            "processes made by spawn re-import the script: it needs `if __name__ == "
            "'__main__':` (Lightning 2 says so; 1.x ended in 'process 0 terminated with exit code 1')",
        )
    if base.startswith("ddp") and count == 1:
        w.notes.append(
            "DDP with a single device runs, but only adds start-up and synchronisation: drop strategy= for one GPU."
        )
