"""Checkers for the exercises of notebooks/06_lightning.ipynb: old ``Trainer`` calls written with today's
``accelerator``/``devices``/``strategy``/``precision`` (the key is ``gpulab.translate_trainer``, pure: no
Lightning), and a LightningModule of the learner's own, fitted by a CPU Trainer."""

from __future__ import annotations

from typing import Any

from ..lightning.call import TranslationError, parse_trainer_call, render_call
from ..lightning.flags import translate_trainer
from .feedback import Exercise, Hint, WrongType, exercise, kind

EXERCISES: dict[str, Exercise] = {}

TODAY = "“The article's call, today”"
EVERY_FLAG = "“Every flag of the article”"
PRECISION = "“precision=32 enables mixed precision?”"
REFUSED = "“Why ddp and ddp_spawn are refused here”"
OLD_FLAGS = ("gpus", "auto_select_gpus", "log_gpu_memory")
STRATEGIES = ("ddp", "dp", "ddp_spawn", "ddp_notebook", "ddp_fork")

# exercise -> (the old call, translated for a notebook?)
OLD_CALLS: dict[str, tuple[str, bool]] = {
    "ch06-ex1": ('Trainer(gpus=[1, 3], accelerator="ddp", precision=16)', False),
    "ch06-ex2": ('Trainer(gpus=2, strategy="dp")', True),
    "ch06-ex3": ("Trainer(gpus=None, precision=32)", False),
}


def _kwargs(answer: Any) -> dict[str, Any]:
    if isinstance(answer, str):
        try:
            found = parse_trainer_call(answer).kwargs
        except TranslationError as exc:
            raise WrongType(f"the call could not be read: {exc}") from None
    elif isinstance(answer, dict) and all(isinstance(k, str) for k in answer):
        found = dict(answer)
    else:
        raise WrongType(
            'give today\'s arguments as a dict, e.g. {"accelerator": "cpu"}, or the call as a string, '
            f"e.g. 'Trainer(accelerator=\"cpu\")'; not {kind(answer)}."
        )
    return {k: list(v) if isinstance(v, tuple) else v for k, v in found.items()}


def _accelerator(got: Any, want: Any) -> None:
    got = "gpu" if got == "cuda" else got
    if got == want:
        return
    if got in STRATEGIES:
        raise Hint(
            f"accelerator={got!r}: the accelerator names the kind of device (cpu, gpu, ...); how to run on "
            "several devices is a different flag.",
            TODAY,
        )
    if want == "cpu":
        raise Hint(
            "gpus=None and gpus=0 meant the CPU. Today's default, accelerator='auto', takes a GPU whenever one "
            "is visible: say which accelerator you mean.",
            EVERY_FLAG,
        )
    raise Hint(f"accelerator={got!r} is not the kind of device the old call ran on.", TODAY)


def _devices(got: Any, want: Any) -> None:
    if got == want or (want is None and got in (None, 1, "auto")):
        return
    if isinstance(want, list) and isinstance(got, int):
        raise Hint(
            "devices= reads its values as gpus= did: an int counts the first n GPUs, a list names them. "
            "The old call named two particular GPUs.",
            TODAY,
        )
    if isinstance(want, int) and isinstance(got, list):
        raise Hint(
            "devices= reads its values as gpus= did: an int counts GPUs, a list names particular ones. The old "
            "call asked for a number of GPUs, any of them.",
            TODAY,
        )
    raise Hint(f"devices={got!r} does not ask for the devices the old call used.", TODAY)


def _strategy(got: Any, want: Any, notebook: bool) -> None:
    if got == want or (want is None and got in (None, "auto")):
        return
    if notebook and got in ("ddp_notebook", "ddp_fork") and want in ("ddp_notebook", "ddp_fork"):  # one strategy
        return
    if got == "dp":
        raise Hint(
            "strategy='dp' (DataParallel) was removed in Lightning 2.0: its replacement runs one process per device.",
            EVERY_FLAG,
        )
    if notebook and got in ("ddp", "ddp_spawn"):
        raise Hint(
            f"in a notebook Lightning refuses strategy={got!r}: those start ranks that must recreate the "
            "program, and a notebook cannot be re-run or re-imported.",
            REFUSED,
        )
    if got is None:
        raise Hint(
            "with several devices, write the strategy out: the call should say how it runs on them (the "
            "default differs between a script and a notebook).",
            EVERY_FLAG,
        )
    if not notebook and got in ("ddp_notebook", "ddp_fork"):
        raise Hint(
            f"strategy={got!r} forks the process it runs in: that is the notebook's way. This call goes in a script.",
            REFUSED,
        )
    if want is None:
        raise Hint("one process on the CPU needs no strategy.", EVERY_FLAG)
    raise Hint(f"strategy={got!r} is not how the old call ran on several devices today.", TODAY)


def _precision(got: Any, want: Any) -> None:
    if got == want or (want is None and got is None) or (want == "32-true" and got is None):
        return
    if got in (16, "16"):
        raise Hint(
            "precision=16 still runs, accepted 'for historical reasons': write the name of what it does.", PRECISION
        )
    if got in (32, "32"):
        raise Hint(
            "precision=32 still runs: write today's name, which says what it is (or leave it out: it is the default).",
            PRECISION,
        )
    if want == "32-true":
        raise Hint(
            f"precision={got!r}: the old precision=32 was never mixed precision, whatever the article's comment says.",
            PRECISION,
        )
    raise Hint(f"precision={got!r} is not what the old value meant.", PRECISION)


def check_translation(old_call: str, notebook: bool, answer: Any) -> str:
    """Compare ``answer`` (a dict of Trainer arguments or a call as text) with the translation of ``old_call``."""
    got = _kwargs(answer)
    old = [k for k in OLD_FLAGS if k in got]
    if old:
        raise Hint(
            f"{old[0]}= is no longer a Trainer argument: Lightning 2 refuses the call with a TypeError before it "
            "runs. Today the kind of device and the devices are two flags.",
            TODAY,
        )
    want = translate_trainer(old_call, notebook=notebook).kwargs
    extra = [k for k in got if k not in ("accelerator", "devices", "strategy", "precision") and k not in want]
    if extra:
        raise Hint(f"{extra[0]}= was not in the old call: translate only what it says.", TODAY)
    _accelerator(got.get("accelerator"), want.get("accelerator"))
    _devices(got.get("devices"), want.get("devices"))
    _strategy(got.get("strategy"), want.get("strategy"), notebook)
    _precision(got.get("precision"), want.get("precision"))
    where = "a notebook" if notebook else "a script"
    return (
        f"{old_call} in {where} is today {render_call(want)}; gpulab.translate_trainer gives the same, with the "
        "reason for each change and the release that removed the old form."
    )


def _register(name: str, title: str) -> None:
    old_call, notebook = OLD_CALLS[name]

    def checker(answer: Any) -> str:
        return check_translation(old_call, notebook, answer)

    exercise(
        EXERCISES, name, title, section=TODAY, expects="today's Trainer arguments, as a dict or as the call in a string"
    )(checker)


_register("ch06-ex1", "the article's call, for a script")
_register("ch06-ex2", "DataParallel on two GPUs, in a notebook")
_register("ch06-ex3", "no GPU at all")


FIRST = "“Today's Trainer”"
FIT_EPOCHS, GOOD_ACCURACY = 2, 0.8


def _module_class(answer: Any) -> Any:
    import lightning as L

    if not isinstance(answer, type):
        raise WrongType(f"give the class itself (DigitsModule, not DigitsModule()); got {kind(answer)}.")
    if not issubclass(answer, L.LightningModule):
        raise WrongType(
            f"{answer.__name__} is not a LightningModule: write `class {answer.__name__}(L.LightningModule):`, so "
            "that a Trainer can fit it."
        )
    return answer


@exercise(
    EXERCISES,
    "ch06-ex4",
    "your own LightningModule",
    section=FIRST,
    expects="a LightningModule class whose training_step returns the loss and configure_optimizers an optimiser",
)
def _lightning_module(answer: Any) -> str:
    import logging
    import warnings

    import lightning as L
    import torch

    from ..workload import accuracy, load_digits
    from .feedback import NotAnswered

    cls = _module_class(answer)
    try:
        model = cls()
    except Exception as exc:
        raise Hint(f"{cls.__name__}() raised {type(exc).__name__}: {exc}", FIRST) from None
    data = load_digits()
    batch = next(iter(data.loader(batch_size=32)))
    try:
        with warnings.catch_warnings():  # self.log() outside a fit warns that no Trainer is attached: this probe's own
            warnings.simplefilter("ignore")
            optimizer = model.configure_optimizers()
            loss = model.training_step(batch, 0)
    except Exception as exc:
        raise Hint(f"calling your module on one batch raised {type(exc).__name__}: {exc}", FIRST) from None
    if optimizer is None and loss is None:
        raise NotAnswered("training_step and configure_optimizers still return nothing: write their bodies.")
    if optimizer is None:
        raise Hint(
            "configure_optimizers returns None, so Lightning would train with no optimiser and the weights would "
            "never move: return an optimiser over self.parameters().",
            FIRST,
        )
    if not isinstance(loss, torch.Tensor) or loss.ndim != 0 or not loss.requires_grad:
        raise Hint(
            f"training_step returned {kind(loss)}: Lightning calls backward() on what it returns, so return the "
            "loss of the batch, one number that still carries its gradient.",
            FIRST,
        )
    quiet = logging.getLogger("lightning.pytorch")
    level = quiet.level
    quiet.setLevel(logging.WARNING)  # the check prints its verdict, not "GPU available: False"
    try:
        L.Trainer(
            accelerator="cpu",
            devices=1,
            max_epochs=FIT_EPOCHS,
            logger=False,
            enable_checkpointing=False,
            enable_progress_bar=False,
            enable_model_summary=False,
        ).fit(model, data.loader(batch_size=32))
    finally:
        quiet.setLevel(level)
    score = accuracy(model, data.test)
    if score < GOOD_ACCURACY:
        raise Hint(
            f"the Trainer fitted it for {FIT_EPOCHS} epochs, and it classifies {score:.0%} of the test digits: the "
            "loss should compare self(x) with the labels y (cross-entropy), and the optimiser move every parameter.",
            FIRST,
        )
    return (
        f"Trainer(accelerator='cpu', devices=1) fitted your {cls.__name__} for {FIT_EPOCHS} epochs and it classifies "
        f"more than {GOOD_ACCURACY:.0%} of the test digits: training_step returned the loss that Lightning calls "
        "backward on, and configure_optimizers the optimiser it steps."
    )
