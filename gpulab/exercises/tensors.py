"""Comparing a learner's weights and tensors with the checker's, wherever each of them lives (CPU or any GPU).

``torch.equal`` and ``torch.allclose`` refuse tensors on two devices ("Expected all tensors to be on the same device
... cuda:0 ... cpu"). A checker meets that as soon as a GPU exists: ``DataParallel`` on one GPU moves the model it
wraps to ``cuda:0`` by itself, while the learner loads into a model on the CPU (seen on one H100 in the GPU run of
2026-11-26, ``gpulab.check("ch03-ex1")``). Every checker compares through these functions, which bring both sides to
the CPU first and match state dicts by key, so the verdict depends on the values only.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch
from torch import nn

__all__ = ["same_tensor", "close_tensor", "state_differences", "same_weights"]


def _on_cpu(t: torch.Tensor) -> torch.Tensor:
    return t.detach().to("cpu")


def same_tensor(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Same shape and the same values, wherever ``a`` and ``b`` are."""
    return torch.equal(_on_cpu(a), _on_cpu(b))


def close_tensor(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Same shape and values equal up to ``torch.allclose``'s default tolerances, wherever ``a`` and ``b`` are."""
    a, b = _on_cpu(a), _on_cpu(b)
    return a.shape == b.shape and torch.allclose(a, b)


def _state(model: nn.Module | Mapping[str, Any]) -> Mapping[str, Any]:
    return model.state_dict() if isinstance(model, nn.Module) else model


def state_differences(a: nn.Module | Mapping[str, Any], b: nn.Module | Mapping[str, Any]) -> list[str]:
    """What differs between two models' (or state dicts') weights, key by key: keys only one side has, and keys
    whose tensors differ in shape or value. Empty when they hold the same weights; the devices do not matter."""
    sa, sb = _state(a), _state(b)
    out = [f"{k}: only in the first" for k in sa if k not in sb]
    out += [f"{k}: only in the second" for k in sb if k not in sa]
    for k in sa:
        if k in sb and not same_tensor(sa[k], sb[k]):
            out.append(
                f"{k}: different values"
                if sa[k].shape == sb[k].shape
                else f"{k}: shape {tuple(sa[k].shape)} against {tuple(sb[k].shape)}"
            )
    return out


def same_weights(a: nn.Module | Mapping[str, Any], b: nn.Module | Mapping[str, Any]) -> bool:
    """True when both hold the same keys with the same values (``state_differences`` is empty)."""
    return not state_differences(a, b)
