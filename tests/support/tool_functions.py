"""Python functions the tool blueprints of the tests name as ``tests.support.tool_functions:<function>``.

The module's annotations are strings (``from __future__ import annotations``): a ``ToolCallContext``
parameter is recognised by its resolved hint all the same."""

from __future__ import annotations

from typing import Any

from core import ToolCallContext


def add(a: int, b: int) -> int:
    """Add two integers and return their sum."""
    return a + b


def shout(text: str) -> str:
    return text.upper()


def untyped(a, b: int) -> int:  # type: ignore[no-untyped-def]  # a parameter without a type hint, on purpose
    """Add a and b."""
    return int(a) + b


def reply(data: Any, context: Any = None) -> str:
    """A ``python:`` agent (not a model: it cannot use tools)."""
    return str(data)


def attempt_of(text: str, call: ToolCallContext) -> str:
    """Say which attempt of which call this is."""
    return f"{text}: {call.run_id} {call.path} attempt {call.attempt}"


def two_contexts(text: str, first: ToolCallContext, second: ToolCallContext) -> str:
    """Asks for the call's context twice, which a tool cannot."""
    return text
