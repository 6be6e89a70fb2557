"""The one gpulab module that imports Lightning: real Trainer arguments from a translation, and the monitor callback.

Importing it costs what importing Lightning costs (several seconds on a cold cache), so nothing else in gpulab imports
it; ``gpulab.MonitorCallback`` and ``gpulab.trainer_kwargs`` load it on first use.
Taught in ``notebooks/06_lightning.ipynb``.
"""
from __future__ import annotations

import importlib
from typing import Any

import lightning  # noqa: F401  (the one import of Lightning in gpulab; the callback below subclasses its Callback)

from .call import Code, TranslationError
from .translation import Translation

__all__ = ["trainer_kwargs"]


def _build(value: object) -> object:
    if isinstance(value, list):
        return [_build(v) for v in value]
    if not isinstance(value, Code):
        return value
    if value.target is None:
        raise TranslationError(f"{value.text} is code from the article, not a value gpulab can build: make it "
                               "yourself and pass it in, e.g. trainer_kwargs(t, callbacks=[...]).")
    module, name, args = value.target
    return getattr(importlib.import_module(module), name)(*args)


def trainer_kwargs(translation: Translation, **overrides: Any) -> dict[str, Any]:
    """``Trainer(**trainer_kwargs(t))``: the translation's arguments with ``find_usable_cuda_devices(2)``,
    ``DeviceStatsMonitor()`` and the like built for real (here, in this process), then ``overrides`` applied."""
    if not isinstance(translation, Translation):
        raise TypeError(f"trainer_kwargs takes what translate_trainer(...) returned, not {type(translation).__name__}.")
    return {k: _build(v) for k, v in translation.kwargs.items()} | overrides
