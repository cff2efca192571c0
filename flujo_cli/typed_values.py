"""The values of options and arguments, converted without pydantic where the result is certain.

Typer converts every value given on the command line with a pydantic ``TypeAdapter`` built for the parameter
when it is first parsed: a ``flujo run`` built about twenty of them, a fifth of a run's start-up. flujo's
commands take a few plain types (text, a path, a whole or decimal number, a flag, lists of text or paths);
for those, the usual values (``12``, ``0.5``, a path that does not exist or can be read) are converted here,
to exactly what Typer would give. Any other value (``1e3``, ``+5``, a number out of range, an unreadable
file, a flag's ``yes``) is handed to Typer's own conversion, built when first needed, so its result and its
error message are Typer's, word for word.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, get_args, get_origin

from typer._coercion import RuntimeParam, build_runtime_param
from typer.core import TyperArgument, TyperOption

if TYPE_CHECKING:
    from typer._click import Context, Parameter
    from typer.models import ParameterInfo

# What ``convert`` gives for a value it cannot be sure of: Typer converts that one.
UNSURE: Any = object()
# Compiled at the first number converted (``re``'s cache keeps them), not at every command's start.
_WHOLE = r"-?[0-9]{1,18}"
_DECIMAL = r"-?[0-9]{1,15}(?:\.[0-9]{1,15})?"


def _text(value: Any) -> Any:
    return value if isinstance(value, str) and _encodable(value) else UNSURE


def _encodable(text: str) -> bool:
    """Whether ``text`` is valid Unicode (a word of the command line read with ``surrogateescape`` is not)."""
    if text.isascii():
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _flag(value: Any) -> Any:
    return value if isinstance(value, bool) else UNSURE


def _within(number: float, info: ParameterInfo) -> bool:
    return (info.min is None or number >= info.min) and (info.max is None or number <= info.max)


def _number(kind: type[int] | type[float], pattern: str, info: ParameterInfo) -> Callable[[Any], Any]:
    """The converter of a ``kind`` option (``int`` or ``float``): a value already of that kind, or a text
    ``pattern`` matches whole, within the option's bounds; anything else is Typer's to convert."""

    def convert(value: Any) -> Any:
        if type(value) is kind:
            number = value
        elif isinstance(value, str) and re.fullmatch(pattern, value):
            number = kind(value)
        else:
            return UNSURE
        return number if _within(number, info) else UNSURE

    return convert


def _path(value: Any) -> Any:
    """A path's text as Typer gives it (with the default checks: it may be missing, or must be readable)."""
    if isinstance(value, Path):
        text: str = str(value)
    elif isinstance(value, str) and value and "\0" not in value and _encodable(value):
        text = value
    else:
        return UNSURE
    try:
        os.stat(text)
    except OSError:
        return Path(text)
    return Path(text) if os.access(text, os.R_OK) else UNSURE


def _plain_path(info: ParameterInfo) -> bool:
    """Whether a path parameter checks nothing but what ``_path`` checks (Typer's defaults)."""
    return (
        not info.exists
        and info.file_okay
        and info.dir_okay
        and not info.writable
        and info.readable
        and not info.resolve_path
        and not info.allow_dash
        and info.path_type is None
    )


def _each(convert: Callable[[Any], Any]) -> Callable[[Any], Any]:
    def convert_all(value: Any) -> Any:
        if not isinstance(value, list | tuple):
            return UNSURE
        converted = [convert(item) for item in value]
        return UNSURE if any(item is UNSURE for item in converted) else converted

    return convert_all


def converter(annotation: Any, info: ParameterInfo) -> Callable[[Any], Any] | None:
    """How a value of ``annotation`` is converted here, or None when Typer alone converts it."""
    if info.parser is not None or info.clamp:
        return None
    if get_origin(annotation) is list:
        (item,) = get_args(annotation)
        each = converter(item, info)
        return None if each is None else _each(each)
    if annotation is str:
        return _text
    if annotation is bool:
        return _flag
    if annotation is int:
        return _number(int, _WHOLE, info)
    if annotation is float:
        return _number(float, _DECIMAL, info)
    if annotation is Path and _plain_path(info):
        return _path
    return None


@dataclass(frozen=True)
class PlainValue(RuntimeParam):
    """A parameter's conversion: ``convert`` when it is sure, Typer's own (built when first needed) if not."""

    convert: Callable[[Any], Any] = _text
    typers: list[RuntimeParam] = field(default_factory=list)

    def _coerce_value(self, value: Any, param: Any, ctx: Context) -> Any:
        converted = self.convert(value)
        if converted is not UNSURE:
            return converted
        if not self.typers:
            self.typers.append(build_runtime_param(param.type_descriptor))
        return self.typers[0]._coerce_value(value, param=param, ctx=ctx)


def convert_plainly(params: list[Parameter]) -> None:
    """Give each of ``params`` whose type is one of the plain ones a ``PlainValue`` conversion."""
    for param in params:
        if not isinstance(param, TyperArgument | TyperOption) or param._runtime_param is not None:
            continue
        described = param.type_descriptor
        if described.file_annotation is not None:
            continue
        convert = converter(described.annotation, described.parameter_info)
        if convert is not None:
            param._runtime_param = PlainValue(described.parameter_info, described.annotation, convert)
