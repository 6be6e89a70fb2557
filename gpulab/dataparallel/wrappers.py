"""The model inside a wrapper, and state_dicts without the wrapper's key prefix.

``DataParallel`` and ``DistributedDataParallel`` keep the model as ``.module``; ``torch.compile`` as ``._orig_mod``.
Their ``state_dict()`` keys therefore start with ``module.`` / ``_orig_mod.`` (both, for a compiled DataParallel
model), and a plain model refuses them: ``Missing key(s) in state_dict: "conv1.0.weight", ... Unexpected key(s) in
state_dict: "module.conv1.0.weight", ...``. ``unwrap(model)`` peels the wrappers off; ``strip_wrapper_prefixes(sd)``
removes the prefixes with PyTorch's own ``consume_prefix_in_state_dict_if_present`` (on a copy, metadata included);
``load_unwrapped(model, sd)`` does both, so any saved form loads into any wrapped or plain form.
Written here because PyTorch has the prefix helper but nothing that knows all three wrappers.
Taught in ``notebooks/03_dataparallel.ipynb``.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

import torch

from ..machine.compat import compiled_module_type

__all__ = ["unwrap", "strip_wrapper_prefixes", "load_unwrapped", "WRAPPER_PREFIXES"]

WRAPPER_PREFIXES = ("module.", "_orig_mod.")  # DataParallel / DDP, torch.compile


def _compiled_type() -> type | None:
    """torch.compile's wrapper class, if torch.compile has been used in this process (else nothing can be one)."""
    return compiled_module_type()


def unwrap(model: torch.nn.Module) -> torch.nn.Module:
    """The model inside any number of DataParallel, DistributedDataParallel and torch.compile wrappers (itself if
    none)."""
    if not isinstance(model, torch.nn.Module):
        raise TypeError(
            f"unwrap() takes a model (a torch.nn.Module, wrapped or not); got {type(model).__name__}. "
            f"To remove the 'module.' prefix from a state_dict, use strip_wrapper_prefixes()."
        )
    parallel = (torch.nn.DataParallel, torch.nn.parallel.DistributedDataParallel)
    compiled = _compiled_type()
    while True:
        if isinstance(model, parallel):
            model = model.module
        elif compiled is not None and isinstance(model, compiled):
            model = model._orig_mod
        else:
            return model


def strip_wrapper_prefixes(state_dict: Mapping[str, Any]) -> OrderedDict[str, Any]:
    """A copy of ``state_dict`` with every wrapper prefix (``module.``, ``_orig_mod.``, nested) removed from its keys.

    Keys are changed only when *all* of them carry the prefix (one wrapped model's state_dict); a mix means the
    dictionary is something else, and is refused with examples. Note that a model whose only child is really called
    ``module`` looks exactly like a wrapped one.
    """
    if not isinstance(state_dict, Mapping):
        raise TypeError(
            f"strip_wrapper_prefixes() takes a state_dict (a mapping of names to tensors, as "
            f"model.state_dict() or torch.load() returns it); got {type(state_dict).__name__}."
        )
    nested = [k for k, v in state_dict.items() if isinstance(v, Mapping)]
    if nested:
        raise TypeError(
            f"This looks like a checkpoint that holds state_dicts (entries {nested[:3]} are "
            f"dictionaries), not a state_dict itself: pass the model's entry, e.g. "
            f"strip_wrapper_prefixes(checkpoint[{nested[0]!r}])."
        )
    out: OrderedDict[str, Any] = OrderedDict(state_dict)
    metadata = getattr(state_dict, "_metadata", None)
    if metadata is not None:
        out._metadata = OrderedDict(metadata)  # type: ignore[attr-defined]  # torch strips it in place: copy it
    changed = True
    while changed and out:
        changed = False
        for prefix in WRAPPER_PREFIXES:
            having = [k for k in out if k.startswith(prefix)]
            if having and len(having) < len(out):
                without = next(k for k in out if not k.startswith(prefix))
                raise ValueError(
                    f"{len(having)} of the {len(out)} keys start with {prefix!r} (e.g. {having[0]!r}) "
                    f"and the others do not (e.g. {without!r}): this is not the state_dict of one wrapped "
                    f"model, so no prefix was removed. Check where it was saved from."
                )
            if having:
                torch.nn.modules.utils.consume_prefix_in_state_dict_if_present(out, prefix)
                changed = True
    return out


def load_unwrapped(model: torch.nn.Module, state_dict: Mapping[str, Any], *, strict: bool = True) -> Any:
    """Load ``state_dict`` (saved wrapped or not) into ``model`` (wrapped or not); returns ``load_state_dict``'s
    result (the missing and unexpected keys, empty when ``strict``)."""
    return unwrap(model).load_state_dict(strip_wrapper_prefixes(state_dict), strict=strict)
