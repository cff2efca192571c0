"""What a Python function takes, as a tool's arguments: a pydantic model made from its signature's type hints,
the JSON Schema the model is told of, and the checked call arguments.

Each parameter is one argument, named as in the signature, of the type its hint gives (``Annotated[int,
Field(description=...)]`` and pydantic models work as in pydantic); a parameter with a default may be left out.
Arguments are validated and converted by pydantic before the call (a JSON ``{"when": "2026-01-02"}`` becomes
a ``date``), and an argument the function does not take is refused. ``*args`` and ``**kwargs`` cannot be
described, so they are refused when the tool is made.

A parameter annotated ``ToolCallContext`` (at most one, of any name, positional or keyword) is not an argument:
the model is never told of it and cannot give it; each call passes it the call's context (its run, its
``P/tool/N`` path, its attempt), so that the function can make its side effect idempotent. It is recognised by
its resolved type hint, so a module with ``from __future__ import annotations`` is read as any other.
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model
from pydantic.json_schema import GenerateJsonSchema

from core.model.errors import ConfigError
from core.model.tools import ToolCallContext

_HINT = "annotate each parameter, e.g. def add(a: int, b: int) -> int"


class _Untitled(GenerateJsonSchema):
    """pydantic's schema without the titles it makes up from names (``"title": "A"`` for ``a``): noise a
    model is sent on every turn."""

    def field_title_should_be_set(self, schema: Any) -> bool:
        return False


@dataclass(frozen=True)
class _Parameter:
    # The model's field (``p0``, ``p1``, ...): a parameter may be called ``json`` or ``model_config``. None for
    # the parameter that receives the call's ToolCallContext, which is no argument.
    field: str | None
    name: str
    positional: bool  # positional-only: passed by position


@dataclass(frozen=True)
class ToolSignature:
    """The arguments of a function as a tool's: ``model`` validates them, ``schema`` describes them (None when
    a parameter's type has no JSON Schema: the tool must then give its own ``input_schema``)."""

    model: type[BaseModel]
    parameters: tuple[_Parameter, ...]
    schema: dict[str, Any] | None
    schema_problem: str | None = None

    @property
    def context(self) -> str | None:
        """The name of the parameter that receives the call's ToolCallContext; None when it takes none."""
        return next((p.name for p in self.parameters if p.field is None), None)

    def bind(self, arguments: Mapping[str, Any], where: ToolCallContext) -> tuple[tuple[Any, ...], dict[str, Any]]:
        """The call's positional and keyword arguments, validated and converted (ValidationError when they do
        not fit), with ``where`` for the context parameter, if the function has one. Arguments left out are
        left out of the call, so the function's own defaults apply."""
        checked = self.model.model_validate(dict(arguments))
        given = checked.model_fields_set

        def value(parameter: _Parameter) -> Any:
            return where if parameter.field is None else getattr(checked, parameter.field)

        args = tuple(value(p) for p in self.parameters if p.positional)
        kwargs = {
            p.name: value(p) for p in self.parameters if not p.positional and (p.field is None or p.field in given)
        }
        return args, kwargs


def signature_of(function: Callable[..., Any], *, owner: str, typed: bool = True) -> ToolSignature:
    """The tool signature of ``function``. With ``typed`` every parameter needs a type hint (its schema comes
    from them); without, an unannotated parameter takes any value. A parameter annotated ``ToolCallContext``
    is the call's context, typed or not. ConfigError (starting with ``owner``) when the parameters cannot be
    read, one cannot be a tool's argument, or two ask for the context."""
    try:
        signature = inspect.signature(function)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"{owner}: cannot read the parameters of {_name(function)}: {exc}") from exc
    hints = _hints(function, owner=owner)
    fields: dict[str, Any] = {}
    parameters: list[_Parameter] = []
    context: str | None = None
    for number, parameter in enumerate(signature.parameters.values()):
        name = parameter.name
        positional = parameter.kind is parameter.POSITIONAL_ONLY
        if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            star = "*" if parameter.kind is parameter.VAR_POSITIONAL else "**"
            raise ConfigError(
                f"{owner}: {_name(function)} takes {star}{name}; a tool's arguments must each be a named parameter",
                hint="name each argument the model may give as a parameter of its own",
            )
        if name in hints and _is_context(hints[name]):
            if context is not None:
                raise ConfigError(
                    f"{owner}: {_name(function)} takes two ToolCallContext parameters, {context!r} and {name!r}; "
                    "a call has one context",
                    hint="keep one ToolCallContext parameter: it receives the call's run id, path and attempt",
                )
            context = name
            parameters.append(_Parameter(None, name, positional))
            continue
        if name not in hints and typed:
            raise ConfigError(f"{owner}: parameter {name!r} of {_name(function)} has no type hint", hint=_HINT)
        hint = hints.get(name, Any)
        default = ... if parameter.default is parameter.empty else parameter.default
        field = f"p{number}"
        fields[field] = (hint, Field(default, alias=name))
        parameters.append(_Parameter(field, name, positional))
    config = ConfigDict(extra="forbid", arbitrary_types_allowed=True, validate_by_alias=True, validate_by_name=False)
    try:
        model = create_model(f"{_name(function)}_arguments", __config__=config, **fields)
    except Exception as exc:  # pydantic refuses a hint in many ways (a bad Annotated, a forward reference ...)
        raise ConfigError(
            f"{owner}: cannot make arguments of {_name(function)}'s parameters: {type(exc).__name__}: {exc}",
            hint=_HINT,
        ) from exc
    try:
        schema = model.model_json_schema(schema_generator=_Untitled)
    except Exception as exc:  # a type pydantic validates (a class of the user's) but cannot describe
        return ToolSignature(model, tuple(parameters), None, f"{type(exc).__name__}: {exc}")
    schema.pop("title", None)
    return ToolSignature(model, tuple(parameters), schema)


def _hints(function: Callable[..., Any], *, owner: str) -> dict[str, Any]:
    target = function if inspect.isroutine(function) else type(function).__call__  # a callable object
    try:
        return typing.get_type_hints(target, include_extras=True)
    except Exception as exc:  # a hint naming what does not exist, a string that is not Python ...
        raise ConfigError(
            f"{owner}: cannot read the type hints of {_name(function)}: {type(exc).__name__}: {exc}",
            hint="make every name a hint uses importable from the function's module",
        ) from exc


def _is_context(hint: Any) -> bool:
    """Whether a resolved type hint asks for the call's context: ``ToolCallContext``, or it ``Annotated``."""
    if typing.get_origin(hint) is typing.Annotated:
        hint = typing.get_args(hint)[0]
    return hint is ToolCallContext


def _name(function: Callable[..., Any]) -> str:
    return getattr(function, "__qualname__", None) or type(function).__qualname__


def summary(function: Callable[..., Any]) -> str | None:
    """The first paragraph of ``function``'s docstring, on one line; None without one."""
    doc = inspect.getdoc(function)
    if not doc or not doc.strip():
        return None
    first = doc.strip().split("\n\n", 1)[0]
    return " ".join(first.split())


def problems(error: ValidationError) -> str:
    """A pydantic error as one line: ``a: Input should be a valid integer; c: Extra inputs are not permitted``."""
    said = []
    for details in error.errors(include_url=False):
        where = ".".join(str(part) for part in details["loc"])
        said.append(f"{where}: {details['msg']}" if where else details["msg"])
    return "; ".join(said)
