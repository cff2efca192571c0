"""How ``--help`` names the values of options and arguments: the words of a terminal tool's help.

Typer shows Python types (``<bool>`` after a flag, ``<list[str]>``, ``<float range>``) and a required
argument in braces (``{file}``). These classes show what to type instead: nothing after a flag, the
option's ``metavar`` when it has one (``--set KEY=VALUE``, ``--max-tokens N``), else a word for its type
(``TEXT``, ``PATH``, ``INTEGER``, ``NUMBER``); a repeatable option says so in its description; a required
argument is its upper-case name (``flujo run [OPTIONS] FILE``); a description written over several lines of
a docstring is one paragraph, wrapped at the terminal's width.
"""

from __future__ import annotations

import inspect
from typing import TYPE_CHECKING, Any

from typer.core import TyperArgument, TyperCommand, TyperGroup, TyperOption

from flujo_cli.typed_values import convert_plainly

if TYPE_CHECKING:  # Typer carries its own click (typer._click); only its types are needed here
    from typer._click import Context, Parameter

_WORDS = {"str": "TEXT", "path": "PATH", "int": "INTEGER", "float": "NUMBER", "int range": "INTEGER"}
_WORDS["float range"] = "NUMBER"


def _word(param: TyperOption, ctx: Context) -> str:
    shown = param.display_type(ctx).strip("<>")
    if shown.startswith("list[") and shown.endswith("]"):
        shown = shown[5:-1]
    return _WORDS.get(shown, shown)


def _name_values(params: list[Parameter], ctx: Context) -> list[Parameter]:
    for param in params:
        if isinstance(param, TyperOption) and param.metavar is None:
            param.metavar = "" if param.is_flag or param.count else _word(param, ctx)
        elif isinstance(param, TyperArgument) and not isinstance(param, _Argument):
            # Typer builds its own argument objects (no hook for a class of ours): this one takes our help
            # display; it adds no state, so the object is otherwise the same.
            param.__class__ = _Argument
            if param.metavar is None and param.name:
                param.metavar = param.name.upper()
    return params


class _Argument(TyperArgument):
    """An argument whose name says what to give: no Python type beside it."""

    def display_type_rich(self, ctx: Context) -> str | None:
        return None


def _unwrapped(text: str | None) -> str | None:
    """``text`` with the line breaks of a docstring inside its paragraphs made spaces: help is wrapped to
    the terminal's width, not at the source's."""
    if text is None:
        return None
    paragraphs = inspect.cleandoc(text).split("\n\n")
    return "\n\n".join(" ".join(paragraph.split()) for paragraph in paragraphs)


def _usage(pieces: list[str]) -> list[str]:
    return [piece[1:-1] if piece.startswith("{") and piece.endswith("}") else piece for piece in pieces]


class Command(TyperCommand):
    """A command whose help names values as described in the module docstring."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.help = _unwrapped(self.help)
        self.short_help = _unwrapped(self.short_help)
        convert_plainly(self.params)  # Typer's pydantic conversion only for values that need it

    def get_help_option(self, ctx: Context) -> TyperOption | None:
        option = super().get_help_option(ctx)
        if option is not None:
            convert_plainly([option])
        return option

    def get_params(self, ctx: Context) -> list[Parameter]:
        return _name_values(super().get_params(ctx), ctx)

    def collect_usage_pieces(self, ctx: Context) -> list[str]:
        return _usage(super().collect_usage_pieces(ctx))


class Group(TyperGroup):
    """A command group (``flujo``, ``flujo lens``) whose own options are named the same way."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        convert_plainly(self.params)

    def get_help_option(self, ctx: Context) -> TyperOption | None:
        option = super().get_help_option(ctx)
        if option is not None:
            convert_plainly([option])
        return option

    def get_params(self, ctx: Context) -> list[Parameter]:
        return _name_values(super().get_params(ctx), ctx)

    def collect_usage_pieces(self, ctx: Context) -> list[str]:
        return _usage(super().collect_usage_pieces(ctx))
