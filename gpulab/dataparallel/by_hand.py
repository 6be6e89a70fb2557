"""One ``torch.nn.DataParallel`` training step taken apart, step by step, on whatever devices exist.

In every forward, DataParallel (1) *scatters* the batch into one chunk per device (``Tensor.chunk`` sizes: 10 images
on 4 devices are 3, 3, 3, 1), (2) *replicates* the module onto each device, (3) *applies* the replicas in parallel,
one thread each, and (4) *gathers* the outputs on ``output_device``, where the loss is computed. In backward, (5) the
replicas' gradients are *reduced*: the copy that replicate made is differentiable, and its backward (PyTorch's
``Broadcast.backward``, a ``ReduceAddCoalesced``) adds every replica's gradient into the module's parameters.

``data_parallel_step`` does the same five steps, each visible. On CUDA devices it calls PyTorch's own primitives
(``torch.nn.parallel.scatter``, ``replicate``, ``parallel_apply``, ``gather``). On torch 2.14 those refuse the CPU
(scatter and replicate: ``Expected a non cpu device``; parallel_apply: ``No available accelerator found``; gather:
``Gather function not implemented for CPU tensors``), so on CPU devices the same steps are plain code here: chunk,
a differentiable copy of each parameter per replica (its backward adds into the parameter, like Broadcast's),
one thread per replica, ``torch.cat``. Taught in ``notebooks/03_dataparallel.ipynb``.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import chain

import torch

from ..core.tables import Table, TableView

__all__ = [
    "data_parallel_step",
    "ParallelStep",
    "scatter_batch",
    "replicate_module",
    "apply_in_parallel",
    "gather_outputs",
    "resolve_devices",
]


@dataclass(frozen=True)
class ParallelStep(TableView):
    """What one step did: the chunks, the loss, each replica's gradient and how exactly the reduce summed them."""

    devices: tuple[str, ...]  # the replicas' devices, in order (the CPU may be listed several times)
    output_device: str
    chunk_sizes: tuple[int, ...]
    loss: float
    replica_grad_norms: tuple[float, ...]  # ‖gradient‖ of each replica, over all parameters
    reduce_error: float  # max |parameter.grad − Σ replica gradients|: 0 up to rounding means the reduce is a sum
    torch_primitives: bool  # True: torch.nn.parallel's functions did it; False: the plain-code CPU steps

    def table(self) -> Table:
        """The step as a table: each replica's chunk, loss and gradient norm, the gathered loss, and how exactly the
        reduce summed the gradients."""
        torch_way, cpu = self.torch_primitives, not self.torch_primitives
        chunks = ", ".join(f"{n} → {d}" for n, d in zip(self.chunk_sizes, self.devices))
        loss = f"outputs gathered on {self.output_device}; loss over the whole batch = {self.loss:.4f}"
        rows = [
            [
                "1 scatter",
                f"batch of {sum(self.chunk_sizes)} split: {chunks}",
                "Tensor.chunk + .to" if cpu else "torch.nn.parallel.scatter",
            ],
            [
                "2 replicate",
                f"{len(self.devices)} replicas, each parameter copied differentiably",
                "Tensor.to(copy=True) per parameter" if cpu else "torch.nn.parallel.replicate",
            ],
            [
                "3 apply",
                f"{len(self.devices)} replicas, one thread each",
                "threading.Thread" if cpu else "torch.nn.parallel.parallel_apply",
            ],
            ["4 gather + loss", loss, "torch.cat" if cpu else "torch.nn.parallel.gather"],
            [
                "5 reduce",
                "replica gradients (norms "
                + ", ".join(f"{g:.3g}" for g in self.replica_grad_norms)
                + f") summed into .grad; max |.grad − sum| = {self.reduce_error:.1e}",
                "backward of the copy" if cpu else "Broadcast.backward (ReduceAddCoalesced)",
            ],
        ]
        batch = sum(self.chunk_sizes)
        weight = round(1 / batch, 6)
        note = f"each image's loss weighs {weight:.4g} in the total (1/{batch}), as in one pass over the whole batch"
        how = "torch.nn.parallel's primitives" if torch_way else "plain code (torch.nn.parallel refuses CPU devices)"
        return Table(
            ["step", "what happened", "done by"], rows, title=f"one DataParallel step by hand, {how}", notes=[note]
        )


def resolve_devices(devices: Sequence[str | torch.device]) -> list[torch.device]:
    """``['cuda:0', 'cuda:1']`` or ``['cpu', 'cpu']`` → torch devices, validated: all CUDA (each once) or all CPU."""
    if isinstance(devices, (str, torch.device)) or not devices:
        raise ValueError(
            f"devices is a list with one entry per replica, like ['cuda:0', 'cuda:1'] or, on a CPU, "
            f"['cpu', 'cpu']; got {devices!r}."
        )
    try:
        devs = [torch.device(d) for d in devices]
    except (RuntimeError, TypeError) as e:
        raise ValueError(
            f"{devices!r} holds something that is not a device name ({e}); use 'cpu' or 'cuda:<index>'."
        ) from e
    kinds = {d.type for d in devs}
    if not kinds <= {"cpu", "cuda"} or len(kinds) > 1:
        raise ValueError(
            f"devices must be all CUDA GPUs or all the CPU (DataParallel replicates over GPUs; the CPU "
            f"stands in for them here); got {', '.join(map(str, devs))}."
        )
    if kinds == {"cuda"}:
        from ..machine.cuda import cuda_gpu_count

        have = cuda_gpu_count()
        devs = [torch.device("cuda", d.index if d.index is not None else torch.cuda.current_device()) for d in devs]
        missing = [str(d) for d in devs if d.index >= have]
        if missing:
            raise ValueError(
                f"{', '.join(missing)} do(es) not exist: this process sees {have} CUDA GPU(s). On a "
                f"machine without enough GPUs, pass ['cpu'] * {len(devs)} to run the same steps."
            )
        if len(set(devs)) < len(devs):
            raise ValueError(
                f"a GPU is listed twice in {', '.join(map(str, devs))}: DataParallel keeps one replica "
                f"per GPU. Only the CPU may be listed several times (threads stand in for GPUs)."
            )
    return devs


def scatter_batch(batch: torch.Tensor, devices: Sequence[torch.device]) -> tuple[torch.Tensor, ...]:
    """The batch cut along dimension 0 into ``len(devices)`` chunks (fewer when it has fewer rows), chunk k on
    device k. Sizes as ``Tensor.chunk`` makes them, which is what torch's scatter uses."""
    if devices[0].type == "cuda":
        return tuple(torch.nn.parallel.scatter(batch, [d.index for d in devices]))
    return tuple(c.to(d) for c, d in zip(batch.chunk(len(devices)), devices))


def replicate_module(module: torch.nn.Module, devices: Sequence[torch.device]) -> list[torch.nn.Module]:
    """One replica per device whose parameters are differentiable copies of ``module``'s (gradients flow back and
    add up in ``module``'s ``.grad``). Buffers are copied without gradient; the first replica shares them, as in
    DataParallel, so a BatchNorm's running statistics are updated by replica 0 only."""
    if devices[0].type == "cuda":
        return list(torch.nn.parallel.replicate(module, [d.index for d in devices], not torch.is_grad_enabled()))
    modules = list(module.modules())
    replicas = []
    for j, dev in enumerate(devices):
        copies: dict[torch.Tensor, torch.Tensor] = {}  # one copy per tensor, so tied weights stay tied
        clones = {m: m._replicate_for_data_parallel() for m in modules}
        for m, clone in clones.items():
            for key, child in m._modules.items():
                clone._modules[key] = None if child is None else clones[child]
            for key, p in m._parameters.items():
                if p is not None and p not in copies:
                    copies[p] = p.to(dev, copy=True)  # its backward adds this replica's gradient into p.grad
                setattr(clone, key, None if p is None else copies[p])
            for key, b in m._buffers.items():
                clone._buffers[key] = b if b is None or (j == 0 and b.device == dev) else b.detach().to(dev, copy=True)
        replicas.append(clones[module])
    return replicas


def apply_in_parallel(
    replicas: Sequence[torch.nn.Module], chunks: Sequence[torch.Tensor], devices: Sequence[torch.device]
) -> list[torch.Tensor]:
    """Replica k on chunk k, all at once (a thread each); a failure names the replica and its device."""
    if devices[0].type == "cuda":
        return list(
            torch.nn.parallel.parallel_apply(replicas, [(c,) for c in chunks], None, [d.index for d in devices])
        )
    grad_enabled = torch.is_grad_enabled()  # grad mode is per thread: hand it on, as torch's parallel_apply does
    results: list[torch.Tensor | None] = [None] * len(replicas)
    errors: list[BaseException | None] = [None] * len(replicas)

    def run(k: int) -> None:
        try:
            with torch.set_grad_enabled(grad_enabled):
                results[k] = replicas[k](chunks[k])
        except BaseException as e:  # noqa: BLE001 - re-raised below in the caller's thread, with the replica named
            errors[k] = e

    threads = [threading.Thread(target=run, args=(k,), name=f"gpulab-replica-{k}") for k in range(len(replicas))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for k, e in enumerate(errors):
        if e is not None:
            raise RuntimeError(
                f"replica {k} on {devices[k]} failed on its chunk of {len(chunks[k])} rows: {type(e).__name__}: {e}"
            ) from e
    return [r for r in results if r is not None]


def gather_outputs(outputs: Sequence[torch.Tensor], output_device: torch.device) -> torch.Tensor:
    """The replicas' outputs joined along dimension 0 on ``output_device`` (differentiable)."""
    if outputs[0].device.type == "cuda":
        target = output_device.index if output_device.type == "cuda" else "cpu"
        return torch.nn.parallel.gather(list(outputs), target)
    return torch.cat([o.to(output_device) for o in outputs])


def _validate_module_on(module: torch.nn.Module, device: torch.device) -> None:
    for t in chain(module.parameters(), module.buffers()):
        if t.device != device:
            # DataParallel's own words, then what to do
            raise RuntimeError(
                f"module must have its parameters and buffers on device {device} (devices[0]) but "
                f"found one of them on device: {t.device}. Move it first with module.to('{device}'): "
                f"the replicas are copied from the module where it is, so it must sit on devices[0]."
            )


def data_parallel_step(
    module: torch.nn.Module,
    inputs: torch.Tensor,
    targets: torch.Tensor,
    devices: Sequence[str | torch.device],
) -> ParallelStep:
    """Forward and backward of one batch the way DataParallel does it, with a cross-entropy loss over the gathered
    batch; afterwards each parameter's ``.grad`` holds the batch's gradient (cleared first, like
    ``optimizer.zero_grad()``). ``module`` must sit on ``devices[0]``, where the outputs are gathered.
    """
    devs = resolve_devices(devices)
    out_dev = devs[0]
    if not isinstance(inputs, torch.Tensor) or inputs.dim() == 0 or len(inputs) == 0:
        raise ValueError("inputs must be a batch: a tensor whose first dimension counts at least one example.")
    if not isinstance(targets, torch.Tensor) or targets.dim() == 0 or len(targets) != len(inputs):
        raise ValueError(
            f"targets must hold one target per input along dimension 0; got "
            f"{tuple(getattr(targets, 'shape', ()))} for inputs of shape {tuple(inputs.shape)}."
        )
    _validate_module_on(module, devs[0])
    module.zero_grad(set_to_none=True)
    chunks = scatter_batch(inputs, devs)  # 1
    used = devs[: len(chunks)]  # a batch smaller than the device list leaves the last devices idle
    replicas = replicate_module(module, used)  # 2
    names = [n for n, p in module.named_parameters() if p.requires_grad]
    copies = [[_tensor_at(r, n) for n in names] for r in replicas]
    for t in chain.from_iterable(copies):
        t.retain_grad()
    outputs = apply_in_parallel(replicas, chunks, used)  # 3
    loss = torch.nn.functional.cross_entropy(gather_outputs(outputs, out_dev), targets.to(out_dev))  # 4
    loss.backward()  # 5: autograd sums the replicas' gradients into the parameters
    params = dict(module.named_parameters())
    error, norms = 0.0, []
    for replica_copies in copies:
        grads = [c.grad for c in replica_copies if c.grad is not None]
        norms.append(torch.linalg.vector_norm(torch.stack([g.norm() for g in grads])).item() if grads else 0.0)
    for i, n in enumerate(names):
        parts = [c[i].grad.to(params[n].device) for c in copies if c[i].grad is not None]
        if parts and params[n].grad is not None:
            error = max(error, (params[n].grad - torch.stack(parts).sum(0)).abs().max().item())
    return ParallelStep(
        tuple(str(d) for d in used),
        str(out_dev),
        tuple(len(c) for c in chunks),
        loss.item(),
        tuple(norms),
        error,
        devs[0].type == "cuda",
    )


def _tensor_at(replica: torch.nn.Module, name: str) -> torch.Tensor:
    """The replica's copy of the parameter called ``name`` (replicas hold copies as plain attributes)."""
    owner, _, leaf = name.rpartition(".")
    return getattr(replica.get_submodule(owner) if owner else replica, leaf)
