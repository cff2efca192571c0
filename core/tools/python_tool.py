"""``python:`` tools: a Python function (sync or async) a model may call.

The model is told the function's arguments as the JSON Schema of its type hints (``core.tools.signature``)
and what it does as the first paragraph of its docstring, unless the blueprint gives ``input_schema`` or
``description``. A call validates and converts the arguments with pydantic, then calls the function: an
async one on the event loop, a sync one in a thread of its own (``core.agents.detached``), within the tool's
``timeout`` when it has one. What it returns is the result (text as is, anything else as JSON); what it
raises is the result too, as one line (``Error: ValueError: ...``), never a traceback: the model reads it
and decides what next.

A parameter annotated ``ToolCallContext`` receives the call's context (``core.tools.signature``): its run id,
its ``P/tool/N`` path, its attempt (2 and more when a resume runs it again after a crash) and ``on_progress``.
A sync function calls ``on_progress`` from its thread; the line is handed to the event loop, which shows it.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import inspect
import json
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from pydantic import ValidationError
from pydantic_core import to_jsonable_python

from core.agents.detached import call_detached
from core.agents.script import load_function
from core.model.errors import ConfigError, ControlSignal
from core.model.tools import Approve, ToolCallContext, ToolDef, ToolOutcome
from core.ports import ToolSessions
from core.tools.signature import ToolSignature, problems, signature_of, summary
from core.tools.spec import DefinedTool


class PythonTool(DefinedTool):
    """A ``core.ports.Tool`` that calls ``target``: ``"package.module:function"`` (imported now, ConfigError
    when it cannot be) or the function itself. ConfigError too when its parameters cannot be a tool's
    arguments (a parameter without a type hint, unless ``input_schema`` describes them instead; two
    parameters annotated ``ToolCallContext``)."""

    def __init__(
        self,
        name: str,
        target: str | Callable[..., Any],
        *,
        description: str | None = None,
        input_schema: Mapping[str, Any] | None = None,
        approve: Approve = "never",
        timeout: float | None = None,
    ) -> None:
        owner = f"tools.{name}"
        self.path = target if isinstance(target, str) else _qualified_name(target)
        self.function = load_function(target, owner=owner) if isinstance(target, str) else target
        self.signature: ToolSignature = signature_of(
            self.function, owner=f"{owner} (python: {self.path})", typed=input_schema is None
        )
        if input_schema is None and self.signature.schema is None:
            raise ConfigError(
                f"{owner} (python: {self.path}): cannot describe its parameters as a JSON Schema: "
                f"{self.signature.schema_problem}",
                hint="give the tool an input_schema, or use types pydantic can describe",
            )
        schema = input_schema if input_schema is not None else self.signature.schema
        assert schema is not None
        self._approve = approve
        self.timeout = timeout
        # The docstring's first paragraph; "" tells the model nothing (flujo validate warns of it).
        self.description = description if description is not None else summary(self.function) or ""
        self._definition = ToolDef(name, self.description, dict(schema))

    async def call(self, arguments: Mapping[str, Any], where: ToolCallContext, sessions: ToolSessions) -> ToolOutcome:
        if self.signature.context is not None and not inspect.iscoroutinefunction(self.function):
            where = _from_thread(where)
        try:
            args, kwargs = self.signature.bind(arguments, where)
        except ValidationError as exc:
            return ToolOutcome(f"Error: the arguments do not fit {self.name}: {problems(exc)}", error=True)
        limit = asyncio.timeout(self.timeout)  # None: no limit
        try:
            async with limit:
                result = await self._invoke(args, kwargs)
        except ControlSignal:
            raise
        except TimeoutError as exc:
            if limit.expired():
                return ToolOutcome(f"Error: {self.name} did not finish within {self.timeout:g} s", error=True)
            return raised(exc)
        except (Exception, SystemExit) as exc:  # the user's function failed (sys.exit() too): the call's result
            return raised(exc)
        return returned(result)

    async def _invoke(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if inspect.iscoroutinefunction(self.function):
            result = await self.function(*args, **kwargs)
        else:
            result = await call_detached(functools.partial(self.function, *args, **kwargs))
        if inspect.isawaitable(result):
            result = await result
        return result


def _from_thread(where: ToolCallContext) -> ToolCallContext:
    """``where`` for a function that runs in a thread of its own: its ``on_progress`` hands each line to this
    event loop, as the reporter it reaches is used from the loop alone."""
    note = where.on_progress
    if note is None:
        return where
    loop = asyncio.get_running_loop()

    def on_progress(line: str) -> None:
        with contextlib.suppress(RuntimeError):  # the loop is closed: the run ended without this call
            loop.call_soon_threadsafe(note, line)

    return replace(where, on_progress=on_progress)


def returned(value: Any) -> ToolOutcome:
    """The outcome of a call that returned ``value``: kept as plain JSON data (a pydantic model, a dataclass, a
    date become what they are in JSON); the model reads text as it is, anything else as JSON."""
    try:
        plain = to_jsonable_python(value, fallback=str)
        content = plain if isinstance(plain, str) else json.dumps(plain, ensure_ascii=False)
    except (ValueError, TypeError) as exc:  # bytes that are not UTF-8, a circular reference: said to the model
        cause = exc.__cause__ if isinstance(exc.__cause__, Exception) else exc
        return ToolOutcome(
            f"Error: the function returned a {type(value).__name__} that cannot be sent as text or JSON:"
            f" {type(cause).__name__}: {str(cause).strip()}",
            error=True,
        )
    return ToolOutcome(content, plain)


def raised(exc: BaseException) -> ToolOutcome:
    """The outcome of a call that raised ``exc``: its type and message, one line for the model."""
    message = str(exc).strip()
    return ToolOutcome(
        f"Error: {type(exc).__name__}: {message}" if message else f"Error: {type(exc).__name__}", error=True
    )


def _qualified_name(function: Callable[..., Any]) -> str:
    module = getattr(function, "__module__", None) or "?"
    return f"{module}:{getattr(function, '__qualname__', type(function).__qualname__)}"
