"""Real ``Trainer`` arguments from a translation: ``Trainer(**trainer_kwargs(t))``.

The translation holds today's arguments as values and as code to build (``find_usable_cuda_devices(2)``,
``DeviceStatsMonitor()``); this builds that code for real, in this process, importing Lightning only when a
translation names it. Taught in ``notebooks/06_lightning.ipynb``.
"""

from __future__ import annotations

import importlib
from typing import Any

from .call import Code, TranslationError
from .translation import Translation

__all__ = ["trainer_kwargs"]


def _build(value: object) -> object:
    if isinstance(value, list):
        return [_build(v) for v in value]
    if not isinstance(value, Code):
        return value
    if value.target is None:
        raise TranslationError(
            f"{value.text} is code from the article, not a value gpulab can build: make it "
            "yourself and pass it in, e.g. trainer_kwargs(t, callbacks=[...])."
        )
    module, name, args = value.target
    return getattr(importlib.import_module(module), name)(*args)


def trainer_kwargs(translation: Translation, **overrides: Any) -> dict[str, Any]:
    """``Trainer(**trainer_kwargs(t))``: the translation's arguments with ``find_usable_cuda_devices(2)``,
    ``DeviceStatsMonitor()`` and the like built for real (here, in this process), then ``overrides`` applied."""
    if not isinstance(translation, Translation):
        raise TypeError(f"trainer_kwargs takes what translate_trainer(...) returned, not {type(translation).__name__}.")
    return {k: _build(v) for k, v in translation.kwargs.items()} | overrides
