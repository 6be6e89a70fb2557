"""Checkers for the exercises of notebooks/00_setup.ipynb: the two numberings of GPUs, what starts CUDA, and the
device idiom as a function (run on ``cpu`` and on ``meta``, the stand-in for a GPU)."""

from __future__ import annotations

from typing import Any

from ..core.visible import visible_map
from ..machine.inventory import devices
from ..machine.simulated import SimulatedGpuReader
from .feedback import Exercise, Hint, WrongType, exercise, kind

EXERCISES: dict[str, Exercise] = {}

NUMBERINGS = "“Two numberings: physical GPUs and cuda:k”"
STARTS = "“When CUDA starts”"
REPORT = "“The environment report”"
DEVICE = "“The device, in one line”"

# the GPUs the learner is told to use, as nvidia-smi numbers them on the described workshop-8 server
WANTED_CUDA0, WANTED_CUDA1 = 6, 1


@exercise(
    EXERCISES,
    "ch00-ex1",
    "make physical GPU 6 your cuda:0",
    section=NUMBERINGS,
    expects='a string, the value you would give CUDA_VISIBLE_DEVICES (e.g. "3,4")',
)
def _visible_devices(answer: Any) -> str:
    if not isinstance(answer, str):
        raise WrongType(f"an environment variable's value is text: write it as a string in quotes, not {kind(answer)}.")
    gpus = devices(SimulatedGpuReader("workshop-8"), processes=False).gpus
    seen = visible_map(gpus, {"CUDA_VISIBLE_DEVICES": answer})
    physical = [d.physical_index for d in seen.devices]
    if physical == [WANTED_CUDA0, WANTED_CUDA1]:
        return (
            f"CUDA_VISIBLE_DEVICES={answer!r}: on the described workshop-8 server (SIMULATED) cuda:0 is physical "
            f"GPU {WANTED_CUDA0} and cuda:1 is physical GPU {WANTED_CUDA1}, and no other GPU is visible. The list "
            "names physical GPUs (nvidia-smi's numbers); its order makes cuda:0, cuda:1, ..."
        )
    if not physical:
        why = f" ({seen.notes[0].rstrip('.')})" if seen.notes else ""
        raise Hint(
            f"with this value the program would see no GPU at all{why}. The value is a list of nvidia-smi's "
            "GPU numbers, separated by commas."
        )
    got = ", ".join(f"cuda:{k} would be physical GPU {p}" for k, p in enumerate(physical))
    if sorted(physical) == sorted([WANTED_CUDA0, WANTED_CUDA1]):
        raise Hint(
            f"the right two GPUs, in the wrong order: {got}. cuda:k counts the entries of the list in the "
            "order you write them."
        )
    extra = sorted(set(physical) - {WANTED_CUDA0, WANTED_CUDA1})
    if {WANTED_CUDA0, WANTED_CUDA1} <= set(physical):
        raise Hint(
            f"the program would also see physical GPU(s) {', '.join(map(str, extra))}, which others in the room "
            "are using: list only the GPUs it should use."
        )
    missing = [g for g in (WANTED_CUDA0, WANTED_CUDA1) if g not in physical]
    if missing and set(physical) <= {WANTED_CUDA0, WANTED_CUDA1}:
        raise Hint(
            f"with this value {got}, but physical GPU {missing[0]} is missing: the program must see every GPU it "
            "uses, so the list names each of them."
        )
    raise Hint(f"with this value {got}. The entries are physical GPU numbers as nvidia-smi shows them, not cuda:k.")


# which of these, run in a notebook's process, start CUDA there (and so freeze CUDA_VISIBLE_DEVICES for it)
CALLS: dict[str, str] = {
    "a": "torch.cuda.is_available()",
    "b": "import torch",
    "c": 'torch.zeros(1, device="cuda")',
    "d": "gpulab.devices()",
    "e": "torch.cuda.is_initialized()",
    "f": "running nvidia-smi in a terminal",
}
STARTS_CUDA = {"a", "c"}
WHY_NOT: dict[str, tuple[str, str]] = {
    "b": ("on a GPU machine it loads the driver library into the process, but leaves the driver uninitialised", STARTS),
    "d": (
        "it asks NVML, the driver's management library, not CUDA: the report listed GPUs and started nothing",
        REPORT,
    ),
    "e": ("it only reports whether torch has initialised CUDA", STARTS),
    "f": ("it is another program, in its own process: nothing it does starts CUDA in yours", NUMBERINGS),
}
WHY: dict[str, tuple[str, str]] = {
    "a": (
        "one call that looks harmless does start CUDA in this process: it asks the CUDA runtime for a device count, "
        "which initialises the driver",
        STARTS,
    ),
    "c": ("creating a tensor on a GPU is the plainest way to start CUDA", STARTS),
}


def _letters(answer: Any) -> set[str]:
    if isinstance(answer, str):
        picked = {c for c in answer.lower() if c.isalpha()}
    elif isinstance(answer, (set, frozenset, list, tuple)):
        if not all(isinstance(x, str) for x in answer):
            raise WrongType('give the letters of the calls as text, e.g. {"a", "b"} or "ab".')
        picked = {x.strip().lower() for x in answer}
    else:
        raise WrongType(
            f'give the letters of the calls that start CUDA as a set of strings, e.g. {{"a", "b"}}, not {kind(answer)}.'
        )
    unknown = sorted(picked - set(CALLS))
    if unknown:
        raise WrongType(f"{', '.join(map(repr, unknown))}: the calls are lettered {', '.join(CALLS)}.")
    return picked


@exercise(
    EXERCISES,
    "ch00-ex2",
    "which calls start CUDA?",
    section=STARTS,
    expects='the set of letters of the calls that start CUDA, e.g. {"a", "b"}',
)
def _starts_cuda(answer: Any) -> str:
    picked = _letters(answer)
    if not picked:
        raise Hint("at least one of these calls starts CUDA in the notebook's process.", STARTS)
    for letter in sorted(picked - STARTS_CUDA):
        why, section = WHY_NOT[letter]
        raise Hint(f"{letter}) {CALLS[letter]} does not start CUDA: {why}.", section)
    for letter in sorted(STARTS_CUDA - picked):
        why, section = WHY[letter]
        raise Hint(f"you left out a call that starts CUDA: {why}.", section)
    return (
        "exactly the calls that start CUDA: torch.cuda.is_available() and a tensor on the GPU. import torch leaves "
        "the driver uninitialised, gpulab.devices() asks NVML, is_initialized() only reports torch's own step, and "
        "nvidia-smi runs in a process of its own."
    )


def _predict_parts() -> tuple[Any, Any]:
    import torch

    torch.manual_seed(0)
    return torch.nn.Linear(4, 2), torch.randn(3, 4)


def _explain_predict(device: str, exc: Exception) -> Hint:
    from .feedback import first_line

    text = str(exc).lower()
    if "cuda" in text or "nvidia" in text:
        return Hint(
            f"your function reached for CUDA although it was asked for device={device!r}: use the device parameter, "
            "never a fixed 'cuda'.",
            DEVICE,
        )
    return Hint(
        f"on {device} it raised {type(exc).__name__}: {first_line(exc)}. Both the model and the batch must be on the "
        "device, and a tensor's .to(device) returns a new tensor: keep what it returns.",
        DEVICE,
    )


@exercise(
    EXERCISES,
    "ch00-ex3",
    "the device idiom as a function",
    section=DEVICE,
    expects="a function predict(model, x, device) that returns model(x) computed on device",
)
def _predict(answer: Any) -> str:
    import functools

    import torch

    from .feedback import call_learner
    from .tensors import close_tensor

    for device in ("cpu", "meta"):
        model, x = _predict_parts()
        expected = model(x).detach() if device == "cpu" else None
        out = call_learner(
            answer,
            model,
            x,
            torch.device(device),
            name="predict",
            expects="a function predict(model, x, device)",
            explain=functools.partial(_explain_predict, device),
        )
        if not isinstance(out, torch.Tensor):
            raise WrongType(f"predict returned {kind(out)}: return the model's output, a tensor.", DEVICE)
        if out.device.type != device:
            raise Hint(
                f"with device={device!r} the output came back on {out.device.type}: move the model and the batch to "
                "the device first, then compute.",
                DEVICE,
            )
        if model.weight.device.type != device:
            raise Hint(f"the model stayed on {model.weight.device.type}: move it with model.to(device).", DEVICE)
        if expected is not None and not close_tensor(out.detach(), expected):
            raise Hint(
                "the output differs from model(x): return the model's output for the batch you were given.", DEVICE
            )
    return (
        "on cpu and on meta (a device with shapes and no data, standing in for a GPU) the model and the batch went to "
        "the device you passed, and the output was computed there: the same function runs on a GPU unchanged."
    )
