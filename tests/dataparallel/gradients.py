"""The tests' yardstick for DataParallel's gradients: one ordinary pass over the whole batch, and how far another
set of gradients is from it (``torch.allclose`` per parameter, and ‖a − b‖ / ‖b‖ over all of them)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import torch


def gradients(module: torch.nn.Module) -> dict[str, torch.Tensor]:
    """A copy of every parameter's ``.grad``, by name, on the CPU (parameters without one are left out)."""
    return {n: p.grad.detach().cpu().clone() for n, p in module.named_parameters() if p.grad is not None}


def full_batch_gradients(
    module: torch.nn.Module, inputs: torch.Tensor, targets: torch.Tensor
) -> dict[str, torch.Tensor]:
    """The gradients of one cross-entropy pass over the whole batch on the module's own device: the reference."""
    device = next(module.parameters()).device
    module.zero_grad(set_to_none=True)
    torch.nn.functional.cross_entropy(module(inputs.to(device)), targets.to(device)).backward()
    return gradients(module)


@dataclass(frozen=True)
class GradientComparison:
    relative_difference: float  # ‖a − b‖ / ‖b‖ over all parameters together
    allclose: bool  # torch.allclose with rtol=1e-4, atol=1e-6, for every parameter


def compare_gradients(grads: Mapping[str, torch.Tensor], reference: Mapping[str, torch.Tensor]) -> GradientComparison:
    """Compare two ``gradients()`` results of the same model."""
    assert grads and set(grads) == set(reference), f"not the same parameters: {sorted(set(grads) ^ set(reference))}"
    assert all(grads[n].shape == reference[n].shape for n in grads), "not the same shapes: not the same model"
    num = torch.sqrt(sum(((grads[n].double() - reference[n].double()) ** 2).sum() for n in grads)).item()
    den = torch.sqrt(sum((r.double() ** 2).sum() for r in reference.values())).item()
    return GradientComparison(
        num / den if den > 0 else (0.0 if num == 0 else float("inf")),
        all(torch.allclose(grads[n], reference[n], rtol=1e-4, atol=1e-6) for n in grads),
    )
