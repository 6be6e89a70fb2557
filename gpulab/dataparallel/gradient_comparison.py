"""A parallel step compared with one full-batch pass: the gradients, their difference, and the weight each
example's loss gets when the batch is cut into chunks. ``notebooks/03_dataparallel.ipynb`` compares them in plain code;
this module is the tested form.

Why chunks can matter: a loss averaged over the whole batch of B examples gives each example the weight 1/B. Averaged
within each of n chunks and then over the chunks, an example in a chunk of size c weighs 1/(n·c) instead — the same
only when every chunk has B/n examples. (Tensor.chunk cuts 10 examples for 4 devices into 3, 3, 3, 1: the lone
example then counts 2.5 times as much as it should, the others 5/6 as much.)
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import torch

from ..core.arguments import whole_numbers
from ..core.tables import Table, TableView

__all__ = ["sample_weights", "gradients", "full_batch_gradients", "compare_gradients", "GradientComparison"]


def sample_weights(chunk_sizes: Sequence[int], *, per_replica: bool = False) -> tuple[float, ...]:
    """The weight of each example's loss in the total, example by example in batch order (pure)."""
    chunk_sizes = whole_numbers(
        chunk_sizes, "chunk_sizes", minimum=1, example="(3, 3, 2)", empty_ok=False, what="examples in each chunk"
    )
    total, n = sum(chunk_sizes), len(chunk_sizes)
    return tuple(1 / (n * c) if per_replica else 1 / total for c in chunk_sizes for _ in range(c))


def gradients(module: torch.nn.Module) -> dict[str, torch.Tensor]:
    """A copy of every parameter's ``.grad``, by name, on the CPU (parameters without one are left out)."""
    return {n: p.grad.detach().cpu().clone() for n, p in module.named_parameters() if p.grad is not None}


def full_batch_gradients(
    module: torch.nn.Module,
    inputs: torch.Tensor,
    targets: torch.Tensor,
    loss_fn: Callable[[torch.Tensor, torch.Tensor], torch.Tensor] = torch.nn.functional.cross_entropy,
) -> dict[str, torch.Tensor]:
    """The gradients of one ordinary pass over the whole batch on the module's own device: the reference."""
    device = next(module.parameters()).device
    module.zero_grad(set_to_none=True)
    loss_fn(module(inputs.to(device)), targets.to(device)).backward()
    return gradients(module)


@dataclass(frozen=True)
class GradientComparison(TableView):
    """How far one set of gradients is from a reference, parameter by parameter and overall."""

    max_abs_difference: float
    relative_difference: float  # ‖a − b‖ / ‖b‖ over all parameters together
    worst_parameter: str
    allclose: bool  # torch.allclose with the tolerances below, for every parameter
    rtol: float
    atol: float

    def table(self) -> Table:
        """allclose, the largest difference (and its parameter) and the relative difference, under a verdict."""
        verdict = "equal up to rounding" if self.allclose else "DIFFERENT"
        return Table(
            ["", "value"],
            [
                ["allclose", f"{self.allclose} (rtol={self.rtol:g}, atol={self.atol:g})"],
                ["max |difference|", f"{self.max_abs_difference:.3g} ({self.worst_parameter})"],
                ["‖difference‖ / ‖reference‖", f"{self.relative_difference:.3g}"],
            ],
            title=f"gradients compared with the reference: {verdict}",
        )


def compare_gradients(
    grads: Mapping[str, torch.Tensor], reference: Mapping[str, torch.Tensor], *, rtol: float = 1e-4, atol: float = 1e-6
) -> GradientComparison:
    """Compare two ``gradients()`` results; both must name the same parameters with the same shapes."""
    if set(grads) != set(reference):
        only = sorted(set(grads) ^ set(reference))
        raise ValueError(
            f"the two sets of gradients are not of the same parameters (only in one of them: "
            f"{', '.join(only[:4])}{' …' if len(only) > 4 else ''}): compare gradients of the same "
            f"model, taken with gradients(model) after each backward."
        )
    bad = [n for n in grads if grads[n].shape != reference[n].shape]
    if bad:
        raise ValueError(
            f"parameter {bad[0]} has shape {tuple(grads[bad[0]].shape)} in one set and "
            f"{tuple(reference[bad[0]].shape)} in the other: these are not gradients of the same model."
        )
    if not grads:
        raise ValueError("there are no gradients to compare: run a backward pass first (gradients() was empty).")
    diffs = {n: (grads[n].double() - reference[n].double()) for n in grads}
    worst = max(diffs, key=lambda n: diffs[n].abs().max().item())
    num = torch.sqrt(sum((d**2).sum() for d in diffs.values())).item()
    den = torch.sqrt(sum((r.double() ** 2).sum() for r in reference.values())).item()
    relative = num / den if den > 0 else (0.0 if num == 0 else float("inf"))
    return GradientComparison(
        diffs[worst].abs().max().item(),
        relative,
        worst,
        all(torch.allclose(grads[n], reference[n], rtol=rtol, atol=atol) for n in grads),
        rtol,
        atol,
    )
