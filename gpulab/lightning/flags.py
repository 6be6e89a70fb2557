"""Translate a Trainer call from an article (Lightning 1.x flags) into today's (pure: no Lightning import).

``translate_trainer('pl.Trainer(gpus=[0, 2], accelerator="ddp", precision=32)')`` or
``translate_trainer(gpus=2, strategy="dp")`` → a ``Translation``: today's ``accelerator`` / ``devices`` / ``strategy``
/ ``precision`` / ``callbacks``, one reason per change and the release that removed the old form (``flag_history.py``).
A call that never worked (``gpus=-2``, ``accelerator="ddp"`` together with ``strategy=``, ``auto_select_gpus=True``
with ``gpus=0``, ...) raises ``TranslationError`` saying why. ``notebook=True`` translates for a notebook, where
Lightning refuses the strategies that re-launch a script. Taught in ``notebooks/06_lightning.ipynb``.
"""

from __future__ import annotations

from collections.abc import Mapping

from ..core.arguments import choice
from .call import Code, TranslationError, parse_trainer_call, render_call, render_value
from .device_flags import translate_devices
from .draft import Draft, fmt, removal
from .flag_history import ACCELERATORS, PRECISION_ALIASES, PRECISIONS, STRATEGIES, TRAINER_PARAMETERS
from .strategy import NOT_IN_NOTEBOOK, translate_strategy
from .translation import Translation

__all__ = ["translate_trainer", "TranslationError", "error_today"]

OLD_ONLY = ("gpus", "auto_select_gpus", "log_gpu_memory", "num_processes", "distributed_backend")


def error_today(old: Mapping[str, object], *, notebook: bool = False) -> str | None:
    """The first error Lightning 2.6's ``Trainer(**old)`` raises while reading these flags (None: it accepts them;
    building can still fail later on a machine that lacks the GPUs asked for)."""
    for name in old:  # Python reports the first unknown keyword, in the order the call gives them
        if name not in TRAINER_PARAMETERS:
            return f"TypeError: Trainer.__init__() got an unexpected keyword argument '{name}'"
    strategy = old.get("strategy")
    if isinstance(strategy, str) and strategy.lower() not in STRATEGIES | {"auto"}:
        return f"ValueError: You selected an invalid strategy name: `strategy={strategy.lower()!r}`."
    accelerator = old.get("accelerator")
    if isinstance(accelerator, str) and accelerator not in ACCELERATORS | {"auto", "gpu"}:
        return f"ValueError: You selected an invalid accelerator name: `accelerator={accelerator!r}`."
    precision = old.get("precision")
    if precision is not None and precision not in PRECISIONS:
        return f"ValueError: Precision {precision!r} is invalid."
    if notebook and isinstance(strategy, str) and strategy.lower().split("_find_unused")[0] in NOT_IN_NOTEBOOK:
        return (
            f"MisconfigurationException: `Trainer(strategy={strategy.lower()!r})` is not compatible with an "
            "interactive environment."
        )
    return None


def _auto_select(w: Draft) -> None:
    if "auto_select_gpus" not in w.old:
        return
    value, gpus = w.old["auto_select_gpus"], w.old.get("gpus")
    old, removed_in = fmt("auto_select_gpus", value), removal("auto_select_gpus")
    if value in (None, False):
        w.change(old, "(dropped)", "removed", "False was the default: nothing to replace", removed_in)
        return
    if value is not True:
        raise TranslationError(f"{old}: auto_select_gpus took True or False.")
    if type(gpus) is int and gpus == 0:
        raise TranslationError(
            "auto_select_gpus=True with gpus=0 never worked: Lightning raised 'auto_select_gpus="
            "True, gpus=0 is not a valid configuration'. For the CPU drop both flags."
        )
    if type(gpus) is not int:
        why = (
            "without gpus= it did nothing"
            if gpus is None
            else f"it only picked GPUs for an int count, and gpus={render_value(gpus)} is not one "
            "(it names them already)"
        )
        w.change(old, "(dropped)", "removed", f"1.x ignored it: {why}", removed_in)
        return
    finder = Code.call("lightning.pytorch.accelerators", "find_usable_cuda_devices", gpus)
    w.front["devices"] = finder
    all_note = (
        " — for -1 every GPU that accepts one (1.x raised 'No GPUs available.' if any refused)" if gpus == -1 else ""
    )
    w.change(
        old,
        f"devices={finder.text}",
        "removed",
        "tries a tiny tensor on each visible GPU and keeps those that accept it" + all_note + "; only a GPU in "
        "exclusive compute mode refuses while another process uses it, and two kernels can pick the same GPU",
        removed_in,
    )


def _precision(w: Draft) -> None:
    if "precision" not in w.old or w.old["precision"] is None:
        return
    value = w.old["precision"]
    old = fmt("precision", value)
    try:
        value = choice(value, "precision", PRECISIONS)
    except (TypeError, ValueError):
        raise TranslationError(
            f"{old} never worked: Lightning takes 64, 32, 16, 'bf16' or, since 2.0, the names "
            "'32-true', '16-mixed', 'bf16-mixed', '16-true', 'bf16-true', '64-true'."
        ) from None
    new = PRECISION_ALIASES.get(value, value)  # type: ignore[call-overload]
    w.front["precision"] = new
    reasons = {
        "32-true": "full precision (float32), the default: not mixed precision — that is '16-mixed' or 'bf16-mixed'",
        "16-mixed": "mixed precision: float16 autocast with gradient scaling (what 16 always meant); 2.0 named it and "
        "the bare 16 now warns",
        "bf16-mixed": "mixed precision with bfloat16 (no gradient scaling needed)",
        "64-true": "double precision everywhere",
    }
    reason = reasons.get(new, "today's spelling already")
    if new == "16-mixed" and w.front.get("accelerator") == "cpu":
        reason += "; on a CPU Lightning swaps in 'bf16-mixed' and warns"
    w.change(old, fmt("precision", new), "unchanged" if new == value else "respelled", reason)


def _log_gpu_memory(w: Draft) -> list[Code] | None:
    if "log_gpu_memory" not in w.old:
        return None
    value = w.old["log_gpu_memory"]
    old, removed_in = fmt("log_gpu_memory", value), removal("log_gpu_memory")
    if value is None:
        w.change(old, "(dropped)", "removed", "None was the default: nothing was logged", removed_in)
        return None
    if value not in ("all", "min_max"):
        raise TranslationError(f"{old}: log_gpu_memory took None, 'all' or 'min_max'.")
    if w.old.get("logger") is False:
        w.change(
            old,
            "(dropped)",
            "removed",
            "with logger=False nothing was logged; DeviceStatsMonitor would refuse "
            "to run ('Cannot use `DeviceStatsMonitor` callback with `Trainer(logger=False)`')",
            removed_in,
        )
        return None
    monitor = Code.call("lightning.pytorch.callbacks", "DeviceStatsMonitor")
    what = "every GPU's memory from nvidia-smi" if value == "all" else "the smallest and largest GPU memory use"
    w.change(
        old,
        f"callbacks=[{monitor.text}]",
        "removed",
        f"1.x logged {what}; DeviceStatsMonitor logs each process's own device (torch allocator figures; CPU "
        "and RAM via psutil on a CPU), no utilisation — gpulab's MonitorCallback draws both, for every GPU",
        removed_in,
    )
    return [monitor]


def _benchmark(w: Draft) -> None:
    value = w.old.get("benchmark")
    if value is None:
        return
    reason = (
        (
            "cuDNN times several convolution algorithms for each new input shape and keeps the fastest: faster "
            "when shapes repeat, slower when they keep changing; no effect on a CPU"
        )
        if value
        else ("cuDNN autotuning off, also torch's default; leaving the flag out (2.x) keeps whatever torch is set to")
    )
    w.change(fmt("benchmark", value), fmt("benchmark", value), "unchanged", reason)


def translate_trainer(call: str | None = None, /, *, notebook: bool = False, **kwargs: object) -> Translation:
    """Today's Trainer arguments for an old call: a string of code (``'pl.Trainer(gpus=2)'``) or keyword arguments.

    ``notebook=True``: for a notebook, where Lightning refuses ``ddp``/``ddp_spawn`` and forks instead.
    Raises ``TranslationError`` for calls that never worked or that the translator cannot read.
    """
    if call is not None and kwargs:
        raise TypeError("pass either the call as a string or its keyword arguments, not both.")
    old = dict(kwargs) if call is None else parse_trainer_call(call).kwargs
    unknown = [k for k in old if k not in TRAINER_PARAMETERS and k not in OLD_ONLY]
    if unknown:
        raise TranslationError(
            f"{', '.join(unknown)}: not a Trainer argument in Lightning 2.6, and not one whose history this translator "
            f"knows ({', '.join(OLD_ONLY)}). Lightning's upgrade guide lists the rest: "
            "https://lightning.ai/docs/pytorch/stable/upgrade/migration_guide.html"
        )
    w = Draft(old, notebook)
    translate_devices(w)
    translate_strategy(w)
    _auto_select(w)
    _precision(w)
    added = _log_gpu_memory(w)
    _benchmark(w)
    handled = set(OLD_ONLY) | {"accelerator", "devices", "strategy", "precision"}
    rest = {k: v for k, v in old.items() if k not in handled}
    if added:
        existing = rest.get("callbacks")
        if existing is None:
            rest["callbacks"] = added
        elif isinstance(existing, list):
            rest["callbacks"] = [*existing, *added]
        else:
            rest["callbacks"] = [existing, *added]
    order = ("accelerator", "devices", "strategy", "precision")
    new = {k: w.front[k] for k in order if k in w.front} | rest
    return Translation(
        render_call(old), old, new, tuple(w.changes), tuple(w.notes), error_today(old, notebook=notebook), notebook
    )
