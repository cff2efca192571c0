"""Python functions the tool blueprints of the tests name as ``tests.support.tool_functions:<function>``."""

from __future__ import annotations

from typing import Any


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
