"""Read a ``Trainer(...)`` call as an article wrote it, and write one back as code (pure: ``ast``, no Lightning).

``parse_trainer_call('pl.Trainer(gpus=[0, 2], accelerator="ddp")')`` gives the keyword arguments as Python values;
a value that is not a literal (``logger=wandb_logger``, ``callbacks=[ModelCheckpoint()]``) is kept as its source text
in a ``Code``, so it can be written back unchanged. Comments and line breaks in the article's code are fine.
Taught in ``notebooks/06_lightning.ipynb``.
"""

from __future__ import annotations

import ast
import textwrap
from collections.abc import Mapping
from dataclasses import dataclass

__all__ = ["Code", "TrainerCall", "TranslationError", "parse_trainer_call", "render_call", "render_value"]


class TranslationError(ValueError):
    """The call cannot be translated: it never worked, or the translator cannot see what it means."""


@dataclass(frozen=True)
class Code:
    """A keyword value that is Python source rather than a value.

    Either kept as the article wrote it (``wandb_logger``), or built by the translator (``DeviceStatsMonitor()``): then
    ``imports`` says what the code needs and ``target`` = (module, name, args) lets ``trainer_args.trainer_kwargs`` call
    it.
    """

    text: str
    imports: tuple[str, ...] = ()
    target: tuple[str, str, tuple[object, ...]] | None = None

    def __repr__(self) -> str:  # a list of Codes and values prints as the code that builds it
        return self.text

    @classmethod
    def call(cls, module: str, name: str, *args: object) -> Code:
        """``Code.call("lightning.pytorch.callbacks", "DeviceStatsMonitor")`` → ``DeviceStatsMonitor()``."""
        return cls(
            f"{name}({', '.join(repr(a) for a in args)})", (f"from {module} import {name}",), (module, name, args)
        )


@dataclass(frozen=True)
class TrainerCall:
    """What ``parse_trainer_call`` found: who was called (``pl.Trainer``) and its keyword arguments, in order."""

    callee: str
    kwargs: dict[str, object]
    source: str


def _value(node: ast.expr, text: str) -> object:
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError):  # not a literal (a name, a call), or an unhashable dict key
        pass
    if isinstance(node, (ast.List, ast.Tuple)):  # [ModelCheckpoint(), 3]: keep the list, code inside
        return [_value(e, text) for e in node.elts]
    return Code(ast.get_source_segment(text, node) or ast.unparse(node))


def _trainer_calls(tree: ast.AST) -> list[ast.Call]:
    calls = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
            if name == "Trainer":
                calls.append(node)
    return sorted(calls, key=lambda c: (c.lineno, c.col_offset))


def parse_trainer_call(text: str) -> TrainerCall:
    """The one ``Trainer(...)`` call in ``text`` (``trainer = pl.Trainer(...)`` is fine), or a bare argument list
    (``"gpus=2, strategy='dp'"``). Raises ``TranslationError`` with the reason when that cannot be read."""
    if not isinstance(text, str):
        raise TypeError(
            f"pass the call as a string of code, like 'pl.Trainer(gpus=2)'; got {type(text).__name__}. "
            "To translate keyword arguments you hold as values, use translate_trainer(gpus=2, ...)."
        )
    code = textwrap.dedent(text).strip()
    try:
        tree: ast.AST = ast.parse(code)
        calls = _trainer_calls(tree)
    except SyntaxError:
        calls = []
    if not calls:  # an argument list on its own: "gpus=2, strategy='dp'"
        try:
            tree = ast.parse(f"Trainer(\n{code}\n)")
        except SyntaxError as exc:
            raise TranslationError(
                f"could not read {code!r} as Python ({exc.msg}, line {exc.lineno}). Pass one call such as "
                "'pl.Trainer(gpus=2, precision=16)' or its arguments 'gpus=2, precision=16'; shell lines like "
                "'CUDA_VISIBLE_DEVICES=1 python t.py' are not part of the call."
            ) from None
        code = f"Trainer(\n{code}\n)"
        calls = _trainer_calls(tree)
    if len(calls) > 1:
        lines = ", ".join(str(c.lineno) for c in calls)
        raise TranslationError(f"found {len(calls)} Trainer(...) calls (lines {lines}); pass one call at a time.")
    call = calls[0]
    if call.args:
        raise TranslationError(
            f"Trainer(...) got {len(call.args)} positional argument(s) ({ast.unparse(call.args[0])!r} first). "
            "Lightning 2 takes keyword arguments only (its __init__ starts with `*`): write name=value."
        )
    kwargs: dict[str, object] = {}
    for kw in call.keywords:
        if kw.arg is None:
            raise TranslationError(
                f"**{ast.unparse(kw.value)} hides which flags are set; the translator needs to see them. Write the "
                "dictionary's entries as keyword arguments, or call translate_trainer(**that_dict)."
            )
        kwargs[kw.arg] = _value(kw.value, code)
    return TrainerCall(ast.unparse(call.func), kwargs, code)


def render_value(value: object) -> str:
    """A value as code: ``repr`` for literals, the text for ``Code`` (also inside lists)."""
    if isinstance(value, list):
        return "[" + ", ".join(render_value(v) for v in value) + "]"
    return repr(value)


def render_call(kwargs: Mapping[str, object], callee: str = "Trainer", width: int = 100) -> str:
    """``Trainer(accelerator='gpu', devices=2)``, one argument per line when it would be wider than ``width``."""
    args = [f"{k}={render_value(v)}" for k, v in kwargs.items()]
    one_line = f"{callee}({', '.join(args)})"
    if len(one_line) <= width:
        return one_line
    return f"{callee}(\n" + "".join(f"    {a},\n" for a in args) + ")"
