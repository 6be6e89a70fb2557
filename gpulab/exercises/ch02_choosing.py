"""Checkers for the exercises of notebooks/02_choosing_gpus.ipynb: which physical GPU a ``cuda:k`` is, on the
described workshop-8 server, when ``CUDA_VISIBLE_DEVICES`` names GPUs by UUID or stops early; and a learner's own
function that picks the least-used GPU from what ``nvidia-smi --query-gpu`` prints."""

from __future__ import annotations

from typing import Any

from ..core.arguments import is_whole_number, shown
from ..core.visible import visible_map
from ..machine.inventory import devices
from .feedback import Exercise, Hint, WrongType, call_learner, exercise, kind

EXERCISES: dict[str, Exercise] = {}

TWO_NUMBERINGS = "section 1 · “Two numberings”"
HOW_CUDA_READS = "section 2 · “How CUDA reads CUDA_VISIBLE_DEVICES”"
ENTRIES_TO_GPUS = "section 2 · “From entries to physical GPUs”"
PRESET = "workshop-8"
FREE_GPU = "section 5 · “Picking a free GPU on a shared server”"


def physical_of(raw: str) -> list[int]:
    """Physical GPUs of ``cuda:0, cuda:1, ...`` for a program started with ``raw`` on the described server."""
    env = {"CUDA_VISIBLE_DEVICES": raw, "CUDA_DEVICE_ORDER": "PCI_BUS_ID"}
    return [d.physical_index for d in visible_map(devices(PRESET, processes=False).gpus, env).devices]


def _index_or_none(value: Any, what: str) -> int | None:
    if value is None:
        return None
    if not is_whole_number(value):
        raise WrongType(f"{what}: give a physical GPU number (an int) or None, not {kind(value)}.")
    return int(value)


UUIDS = "GPU-ad57b9ec,GPU-3a79"


@exercise(
    EXERCISES,
    "ch02-ex1",
    "GPUs named by UUID",
    section=ENTRIES_TO_GPUS,
    expects='a dict {"cuda:0": physical GPU, "cuda:1": physical GPU}',
)
def _by_uuid(answer: Any) -> str:
    if not isinstance(answer, dict):
        raise WrongType(f'give a dict such as {{"cuda:0": 4, "cuda:1": 0}}, not {kind(answer)}.')
    keys = {(f"cuda:{k}" if is_whole_number(k) else k): v for k, v in answer.items()}
    missing = [k for k in ("cuda:0", "cuda:1") if k not in keys]
    if missing or len(keys) != 2:
        raise WrongType(f'the dict needs exactly the keys "cuda:0" and "cuda:1"; yours has {shown(list(answer), 50)}.')
    given = [_index_or_none(keys[k], k) for k in ("cuda:0", "cuda:1")]
    truth = physical_of(UUIDS)
    if given == truth:
        return (
            f"CUDA_VISIBLE_DEVICES={UUIDS} on the described {PRESET} server (SIMULATED): cuda:0 is physical GPU "
            f"{truth[0]} and cuda:1 is physical GPU {truth[1]}. A UUID, or a unique start of one, names the same "
            "GPU whatever the numbering, which is why it is the safest entry."
        )
    if None in given:
        raise Hint(
            "both entries name a GPU: a UUID entry may be cut short as long as its start matches one GPU only.",
            HOW_CUDA_READS,
        )
    if given == truth[::-1]:
        raise Hint("the right GPUs, but cuda:k follows the order of the list, not nvidia-smi's order.", ENTRIES_TO_GPUS)
    if given == [0, 1]:
        raise Hint(
            "cuda:k is not physical GPU k once the variable is set: look up which GPUs the entries name.",
            TWO_NUMBERINGS,
        )
    raise Hint(
        "look each UUID up in the server's device table (its uuid column): the entry names the GPU whose UUID "
        "starts with it.",
        TWO_NUMBERINGS,
    )


# raw value -> the idea that decides where cuda:1 is
VALUES: dict[str, tuple[str, str]] = {
    "0,7,-1,1": (
        "CUDA reads the list from the left and stops at the first entry it cannot use, keeping the entries before it",
        HOW_CUDA_READS,
    ),
    "4,6,4": ("a GPU named twice makes the whole list invalid", HOW_CUDA_READS),
    "3,,5": ("an empty entry is one CUDA cannot use", HOW_CUDA_READS),
    "GPU-6544817b,3": (
        "a list that starts with UUIDs must go on with UUIDs: CUDA stops at an entry of another kind",
        HOW_CUDA_READS,
    ),
}


@exercise(
    EXERCISES,
    "ch02-ex2",
    "where CUDA stops reading",
    section=HOW_CUDA_READS,
    expects="a dict from each value to the physical GPU of cuda:1, or None where there is no cuda:1",
)
def _stops(answer: Any) -> str:
    if not isinstance(answer, dict):
        raise WrongType(f"give a dict from each value to a physical GPU number or None, not {kind(answer)}.")
    missing = [raw for raw in VALUES if raw not in answer]
    extra = [raw for raw in answer if raw not in VALUES]
    if missing or extra:
        what = (
            (f"missing {', '.join(map(repr, missing))}" if missing else "")
            + ("; " if missing and extra else "")
            + (f"not asked about: {shown(extra, 60)}" if extra else "")
        )
        raise WrongType(f"answer for each of the {len(VALUES)} values, with the value as the key ({what}).")
    for raw, (idea, section) in VALUES.items():
        given = _index_or_none(answer[raw], repr(raw))
        seen = physical_of(raw)
        truth = seen[1] if len(seen) > 1 else None
        if given != truth:
            said = "that there is no cuda:1" if given is None else f"physical GPU {given}"
            raise Hint(f"{raw!r}: you said {said}, which is not how CUDA reads this value. Remember: {idea}.", section)
    return (
        "every value read as CUDA reads it, on the described workshop-8 server (SIMULATED): CUDA stops at the "
        "first entry it cannot use, refuses a repeated GPU and a change from UUIDs to indices."
    )


SMI_QUERY = "nvidia-smi --query-gpu=index,memory.used,utilization.gpu --format=csv"
SMI_HEADER = "index, memory.used [MiB], utilization.gpu [%]"


def smi_csv(rows: list[tuple[int, int, int]]) -> str:
    """What ``SMI_QUERY`` prints for GPUs ``(index, MiB used, % utilisation)``, in nvidia-smi's own layout."""
    return "\n".join([SMI_HEADER, *(f"{i}, {mib} MiB, {util} %" for i, mib, util in rows)]) + "\n"


def workshop_csv() -> str:
    """``SMI_QUERY``'s output on the described workshop-8 server (SIMULATED: no nvidia-smi ran)."""
    gpus = devices(PRESET, processes=False).gpus
    return smi_csv([(g.physical_index, g.memory_used_bytes // 2**20, round(g.utilization_gpu_percent)) for g in gpus])


# (what the learner's function is given, the CUDA_VISIBLE_DEVICES it should return, what a wrong answer missed)
PICKS: list[tuple[str, str, str]] = [
    (
        smi_csv([(0, 30105, 97), (1, 4, 0), (2, 12288, 45), (3, 1024, 0)]),
        "1",
        "the GPU with the least memory used is the freest: a busy GPU holds its jobs' memory",
    ),
    (
        smi_csv([(0, 500, 3), (1, 200, 90), (2, 200, 10)]),
        "2",
        "where two GPUs use the same memory, take the less busy one (lower utilization.gpu)",
    ),
    (
        smi_csv([(2, 9000, 0), (5, 100, 50)]),
        "5",
        "return the GPU's index column, not its row's place: nvidia-smi --id=2,5 lists GPUs 2 and 5 only",
    ),
    (smi_csv([(0, 12, 0)]), "0", "one GPU: its own index"),
]


@exercise(
    EXERCISES,
    "ch02-ex3",
    "pick the least-used GPU",
    section=FREE_GPU,
    expects="a function least_used_gpu(csv_text) returning the CUDA_VISIBLE_DEVICES value, a str",
)
def _least_used(answer: Any) -> str:
    for csv_text, truth, idea in PICKS:
        got = call_learner(
            answer,
            csv_text,
            name="least_used_gpu",
            expects="a function least_used_gpu(csv_text) that returns a str such as '3'",
            explain=lambda exc: Hint(
                f"your least_used_gpu raised {type(exc).__name__} ({str(exc)[:80]}). Skip the header line, and "
                "take the numbers without their units: '4 MiB'.split()[0] is '4'.",
                FREE_GPU,
            ),
        )
        if is_whole_number(got):
            raise WrongType(
                f"CUDA_VISIBLE_DEVICES holds text: return str({got}), not the int {got} (os.environ refuses an int)."
            )
        if not isinstance(got, str):
            raise WrongType(f"return the variable's value as a str such as '3', not {kind(got)}.")
        if got.strip() != truth:
            shown_csv = csv_text.strip().replace("\n", " | ")
            raise Hint(f"for this output: {shown_csv!r} you returned {got!r}. Remember: {idea}.", FREE_GPU)
    return (
        f"your function picks the least-used GPU from `{SMI_QUERY}` in each of {len(PICKS)} cases. Start the job "
        "with CUDA_VISIBLE_DEVICES set to it; on a shared server two people running it at the same moment still "
        "get the same GPU, which is what a reservation (reserve_gpus) adds."
    )
