"""Translate a Trainer call from an article (Lightning 1.x flags) into today's (pure: no Lightning import).

``translate_trainer('pl.Trainer(gpus=[0, 2], accelerator="ddp", precision=32)')`` or
``translate_trainer(gpus=2, strategy="dp")`` → a ``Translation``: today's ``accelerator`` / ``devices`` / ``strategy``
/ ``precision`` / ``callbacks``, one reason per change and the release that removed the old form (``history.py``).
A call that never worked (``gpus=-2``, ``accelerator="ddp"`` together with ``strategy=``, ``auto_select_gpus=True``
with ``gpus=0``, ...) raises ``TranslationError`` saying why. ``notebook=True`` translates for a notebook, where
Lightning refuses the strategies that re-launch a script. Taught in ``notebooks/06_lightning.ipynb``.
"""
from __future__ import annotations

from collections.abc import Mapping

from .call import Code, TranslationError, parse_trainer_call, render_call, render_value
from .history import ACCELERATORS, FLAG_HISTORY, PRECISION_ALIASES, PRECISIONS, STRATEGIES, TRAINER_PARAMETERS
from .translation import Change, Translation

__all__ = ["translate_trainer", "TranslationError", "error_today"]

OLD_ONLY = ("gpus", "auto_select_gpus", "log_gpu_memory", "num_processes", "distributed_backend")
GPU_ACCELERATORS = ("gpu", "cuda")
_MISSING = object()
_NOT_IN_NOTEBOOK = ("ddp", "ddp_spawn")  # with or without a _find_unused_parameters_* suffix


def _fmt(name: str, value: object) -> str:
    return f"{name}={render_value(value)}"


def _removed(key: str) -> str:
    return FLAG_HISTORY[key].removed_in


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
    if notebook and isinstance(strategy, str) and strategy.lower().split("_find_unused")[0] in _NOT_IN_NOTEBOOK:
        return (f"MisconfigurationException: `Trainer(strategy={strategy.lower()!r})` is not compatible with an "
                "interactive environment.")
    return None


class _Work:
    """The translation being built: new keyword arguments, changes and notes."""

    def __init__(self, old: Mapping[str, object], notebook: bool) -> None:
        self.old, self.notebook = dict(old), notebook
        self.front: dict[str, object] = {}  # accelerator, devices, strategy, precision: first in today's call
        self.callbacks_added: list[Code] = []
        self.changes: list[Change] = []
        self.notes: list[str] = []
        self.gpu_request: object = None  # None: CPU; int n > 0; -1 (all); list of indices
        self.cpu_processes = 1

    def change(self, old: str, new: str, status: str, reason: str, removed_in: str | None = None) -> None:
        self.changes.append(Change(old, new, status, reason, removed_in))

    @property
    def device_count(self) -> int | None:
        """Processes the run starts: None when the call asks for every GPU (-1)."""
        request = self.gpu_request
        if request is None:
            return self.cpu_processes
        if isinstance(request, list):
            return len(request)
        return None if request == -1 else int(request)  # type: ignore[call-overload]


def _parse_gpus(value: object) -> object:
    """``gpus=`` as Lightning 1.5-1.9 read it → None (CPU), n > 0, -1 or a list of indices; never-valid → error."""
    if value is None or value == 0 and not isinstance(value, bool) or value in ("0", "[]") or value == []:
        return None
    if isinstance(value, bool):
        raise TranslationError(f"gpus={value}: a bool never meant anything to Lightning (it raised 'Device IDs (GPU/"
                               "TPU) must be an int, a string, a sequence of ints'). Write gpus=1 for one GPU.")
    if isinstance(value, str):
        text = value.strip()
        try:
            parsed: object = -1 if text == "-1" else [int(x) for x in text.split(",") if x.strip()] \
                if "," in text else int(text)
        except ValueError:
            raise TranslationError(f"gpus={value!r}: a string must be a count ('2'), '-1' or indices ('0,2').") from None
        return _parse_gpus(parsed)
    if isinstance(value, int):
        if value < -1:
            raise TranslationError(f"gpus={value}: never valid — -1 meant every GPU and n > 0 the first n GPUs; a "
                                   "negative count selects nothing (1.x: 'GPUs requested but none are available').")
        return value
    if isinstance(value, (list, tuple)):
        if not all(type(i) is int for i in value):
            raise TranslationError(f"gpus={value!r}: a list must hold GPU indices (ints), like [0, 2].")
        if any(i < 0 for i in value):
            raise TranslationError(f"gpus={value!r}: GPU indices start at 0; a negative index names no GPU.")
        if len(set(value)) != len(value):
            raise TranslationError(f"gpus={value!r} names a GPU twice; Lightning refused that ('Device ID's (GPU) "
                                   "must be unique'). One process per GPU: list each once.")
        return list(value)
    raise TranslationError(f"gpus={value!r}: gpus took None, an int, a string or a list of ints; "
                           f"{type(value).__name__} never worked.")


def _devices(w: _Work) -> None:
    old = w.old
    gpus, processes = old.get("gpus", _MISSING), old.get("num_processes", _MISSING)
    accelerator, devices = old.get("accelerator"), old.get("devices", _MISSING)
    if isinstance(accelerator, str) and accelerator.lower() not in ACCELERATORS | {"auto", "gpu"}:
        accelerator = None  # an old strategy name; _strategy deals with it
    if gpus is not _MISSING and processes is not _MISSING:
        raise TranslationError("gpus= and num_processes= both set the device count; Lightning 1.7-1.9 only warned "
                               "'more than one device specific flag has been set'. Keep the one you mean.")
    if devices is not _MISSING and devices in (0, "0", []):
        raise TranslationError(f"devices={devices!r} is refused by Lightning 2 ('value is not a valid input'); to "
                               "train on the CPU write accelerator='cpu' (devices=1 by default).")
    if gpus is not _MISSING:
        w.gpu_request = _parse_gpus(gpus)
        if w.gpu_request is not None and accelerator not in (None, "auto", *GPU_ACCELERATORS):
            raise TranslationError(f"gpus={gpus!r} asks for GPUs but accelerator={accelerator!r} for another device; "
                                   "old releases resolved that differently. Say which device you mean.")
        if w.gpu_request is None and devices is not _MISSING:
            raise TranslationError(f"gpus={gpus!r} means the CPU but devices={devices!r} is also set; keep one.")
        if w.gpu_request is None:
            w.front["accelerator"] = "cpu"
            w.change(_fmt("gpus", gpus), "accelerator='cpu'", "removed",
                     "no GPU; written out because today's default accelerator='auto' takes a GPU when one is visible",
                     _removed("gpus"))
            return
        request = w.gpu_request
        w.front.update(accelerator="gpu", devices=request)
        reason = "every visible GPU, as before" if request == -1 else "the same GPUs: devices= reads these values " \
            "as gpus= did (an int n: the first n GPUs; a list: those indices)"
        if isinstance(gpus, str) and "," not in gpus and gpus.strip() != "-1":
            reason = (f"a string count means the first {request} GPU(s) (since 1.5; before, gpus='{gpus.strip()}' "
                      "meant the GPU with that index): written as an int")
        elif isinstance(gpus, str) and "," in gpus:
            reason = "GPUs with these indices; the list says so more plainly than the string"
        w.change(_fmt("gpus", gpus), f"accelerator='gpu', devices={render_value(request)}", "removed", reason,
                 _removed("gpus"))
        if devices is not _MISSING:
            w.change(_fmt("devices", devices), "(dropped)", "removed",
                     "1.7-1.9 ignored devices= when gpus= was given (it warned); gpus= decided")
        return
    if processes is not _MISSING:
        if isinstance(processes, bool) or not isinstance(processes, int) or processes < 1:
            raise TranslationError(f"num_processes={processes!r}: it took a number of CPU processes, an int ≥ 1.")
        w.cpu_processes = processes
        w.front.update(accelerator="cpu", devices=processes)
        w.change(_fmt("num_processes", processes), f"accelerator='cpu', devices={processes}", "removed",
                 "processes on CPU cores are devices of the CPU accelerator", _removed("num_processes"))
        return
    if accelerator is not None:
        w.front["accelerator"] = accelerator
    if devices is not _MISSING:
        w.front["devices"] = devices
        if accelerator in GPU_ACCELERATORS:
            w.gpu_request = devices if devices != "auto" else -1
        elif isinstance(devices, int) and not isinstance(devices, bool):
            w.cpu_processes = devices
    if accelerator is None and devices is _MISSING:
        w.notes.append("No device flag: Lightning 1.x trained on the CPU unless gpus= was given; today's default "
                       "accelerator='auto' uses a GPU whenever one is visible. Add accelerator='cpu' to keep the CPU.")


# strategy names 1.x accepted in accelerator= (1.5.0's DistributedType); only some still exist under strategy=
OLD_STRATEGY_NAMES = ("dp", "ddp", "ddp2", "ddp_cpu", "ddp_spawn", "tpu_spawn", "deepspeed", "horovod", "ddp_sharded",
                      "ddp_sharded_spawn", "ddp_fully_sharded")
_SOURCE_HISTORY = {"accelerator": "accelerator='ddp'", "distributed_backend": "distributed_backend"}


def _strategy(w: _Work) -> None:
    sources = [(flag, w.old[flag]) for flag in ("strategy", "distributed_backend")
               if w.old.get(flag) not in (None, "auto")]
    accelerator = w.old.get("accelerator")
    if isinstance(accelerator, str) and accelerator.lower() not in ACCELERATORS | {"auto", "gpu"}:
        if accelerator.lower() not in OLD_STRATEGY_NAMES:
            raise TranslationError(f"accelerator={accelerator!r} is not a device type (today: auto, cpu, gpu, cuda, "
                                   "mps, tpu) nor a strategy name old releases accepted there.")
        sources.append(("accelerator", accelerator))
    if len(sources) > 1:
        named = " and ".join(_fmt(f, v) for f, v in sources)
        raise TranslationError(f"{named} name the strategy twice: Lightning refused that (1.5: 'You have passed "
                               "`Trainer(strategy=...)` but have also passed `Trainer(accelerator=...)`') or used one "
                               "of them silently. Keep one, as strategy=.")
    count = w.device_count
    several = count is None or count > 1
    default = "ddp_notebook" if w.notebook else "ddp"
    if not sources:
        if several:
            w.front["strategy"] = default
            where = ("in a notebook 2.x picks ddp_fork (the same as ddp_notebook)" if w.notebook else
                     "2.x picks ddp, which re-runs the script once per device")
            w.change("(no strategy)", f"strategy={default!r}", "default changed",
                     f"several devices and no strategy: 1.x chose ddp_spawn (each process re-imports the script; "
                     f"without `if __name__ == '__main__':` that ended in 'process 0 terminated with exit code 1'); "
                     f"{where}")
        return
    flag, value = sources[0]
    old = _fmt(flag, value)
    removed_in = FLAG_HISTORY[_SOURCE_HISTORY[flag]].removed_in if flag in _SOURCE_HISTORY else None
    if not isinstance(value, str):  # a Strategy object: today's API already
        w.front["strategy"] = value
        return
    name = value.lower()
    if name == "dp":
        removed_in = _removed("strategy='dp'")
        if several:
            w.front["strategy"] = default
            w.change(old, f"strategy={default!r}", "removed",
                     "DataParallel (one process driving every GPU) is gone; DDP runs one process per device and each "
                     "loads its own batch_size (DP split one batch), so the batch per step grows with the GPUs",
                     removed_in)
        else:
            w.change(old, "(dropped)", "removed", "DataParallel over one device (or none) is plain training", removed_in)
        return
    if name not in STRATEGIES:
        raise TranslationError(f"{old}: Lightning 2.6 has no {name!r} strategy, and the translator does not know what "
                               f"replaced it. Today's DDP family: ddp (scripts), ddp_spawn, ddp_notebook (notebooks).")
    new = name
    base, sep, suffix = name.partition("_find_unused")
    if w.notebook and base in _NOT_IN_NOTEBOOK:
        new = "ddp_notebook" + sep + suffix
    w.front["strategy"] = new
    if flag != "strategy":
        w.change(old, f"strategy={new!r}", "removed", "a strategy, not a device: strategy= took this role in 1.5 and "
                 "the device comes from accelerator=/devices=" + ("; ddp_notebook in a notebook" if new != name else ""),
                 removed_in)
    elif new != name:
        w.change(old, f"strategy={new!r}", "in a notebook",
                 f"Lightning refuses {name} in a notebook ('not compatible with an interactive environment'): it "
                 "starts processes by re-running a script or by spawn; ddp_notebook forks the notebook's process")
    elif base == "ddp":
        w.change(old, old, "unchanged", "one process per device; Lightning starts the others by running your script "
                 "again (one `python train.py` starts them all)")
    elif base == "ddp_spawn":
        w.change(old, old, "unchanged", "processes made by spawn re-import the script: it needs `if __name__ == "
                 "'__main__':` (Lightning 2 says so; 1.x ended in 'process 0 terminated with exit code 1')")
    if base.startswith("ddp") and count == 1:
        w.notes.append("DDP with a single device runs, but only adds start-up and synchronisation: drop strategy= "
                       "for one GPU.")


def _auto_select(w: _Work) -> None:
    if "auto_select_gpus" not in w.old:
        return
    value, gpus = w.old["auto_select_gpus"], w.old.get("gpus")
    old, removed_in = _fmt("auto_select_gpus", value), _removed("auto_select_gpus")
    if value in (None, False):
        w.change(old, "(dropped)", "removed", "False was the default: nothing to replace", removed_in)
        return
    if value is not True:
        raise TranslationError(f"{old}: auto_select_gpus took True or False.")
    if type(gpus) is int and gpus == 0:
        raise TranslationError("auto_select_gpus=True with gpus=0 never worked: Lightning raised 'auto_select_gpus="
                               "True, gpus=0 is not a valid configuration'. For the CPU drop both flags.")
    if type(gpus) is not int:
        why = "without gpus= it did nothing" if gpus is None else \
            f"it only picked GPUs for an int count, and gpus={render_value(gpus)} is not one (it names them already)"
        w.change(old, "(dropped)", "removed", f"1.x ignored it: {why}", removed_in)
        return
    finder = Code.call("lightning.pytorch.accelerators", "find_usable_cuda_devices", gpus)
    w.front["devices"] = finder
    all_note = (" — for -1 every GPU that accepts one (1.x raised 'No GPUs available.' if any refused)" if gpus == -1
                else "")
    w.change(old, f"devices={finder.text}", "removed",
             "tries a tiny tensor on each visible GPU and keeps those that accept it" + all_note + "; only a GPU in "
             "exclusive compute mode refuses while another process uses it, and two kernels can pick the same GPU",
             removed_in)


def _precision(w: _Work) -> None:
    if "precision" not in w.old or w.old["precision"] is None:
        return
    value = w.old["precision"]
    old = _fmt("precision", value)
    if isinstance(value, bool) or value not in PRECISIONS:
        raise TranslationError(f"{old} never worked: Lightning takes 64, 32, 16, 'bf16' or, since 2.0, the names "
                               "'32-true', '16-mixed', 'bf16-mixed', '16-true', 'bf16-true', '64-true'.")
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
    w.change(old, _fmt("precision", new), "unchanged" if new == value else "respelled", reason)


def _log_gpu_memory(w: _Work) -> list[Code] | None:
    if "log_gpu_memory" not in w.old:
        return None
    value = w.old["log_gpu_memory"]
    old, removed_in = _fmt("log_gpu_memory", value), _removed("log_gpu_memory")
    if value is None:
        w.change(old, "(dropped)", "removed", "None was the default: nothing was logged", removed_in)
        return None
    if value not in ("all", "min_max"):
        raise TranslationError(f"{old}: log_gpu_memory took None, 'all' or 'min_max'.")
    if w.old.get("logger") is False:
        w.change(old, "(dropped)", "removed", "with logger=False nothing was logged; DeviceStatsMonitor would refuse "
                 "to run ('Cannot use DeviceStatsMonitor callback with Trainer(logger=False)')", removed_in)
        return None
    monitor = Code.call("lightning.pytorch.callbacks", "DeviceStatsMonitor")
    what = "every GPU's memory from nvidia-smi" if value == "all" else "the smallest and largest GPU memory use"
    w.change(old, f"callbacks=[{monitor.text}]", "removed",
             f"1.x logged {what}; DeviceStatsMonitor logs each process's own device (torch allocator figures; CPU "
             "and RAM via psutil on a CPU), no utilisation — gpulab's MonitorCallback draws both, for every GPU",
             removed_in)
    return [monitor]


def _benchmark(w: _Work) -> None:
    value = w.old.get("benchmark")
    if value is None:
        return
    reason = ("cuDNN times several convolution algorithms for each new input shape and keeps the fastest: faster "
              "when shapes repeat, slower when they keep changing; no effect on a CPU") if value else \
        ("cuDNN autotuning off, also torch's default; leaving the flag out (2.x) keeps whatever torch is set to")
    w.change(_fmt("benchmark", value), _fmt("benchmark", value), "unchanged", reason)


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
            "https://lightning.ai/docs/pytorch/stable/upgrade/migration_guide.html")
    w = _Work(old, notebook)
    _devices(w)
    _strategy(w)
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
    return Translation(render_call(old), old, new, tuple(w.changes), tuple(w.notes), error_today(old, notebook=notebook),
                       notebook)
