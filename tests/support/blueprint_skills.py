"""Python callables the blueprint test fixtures name as ``tests.support.blueprint_skills:<function>``."""

from __future__ import annotations

from typing import Any


def shout(data: Any, context: Any = None) -> str:
    return str(data).upper()


def whisper(data: Any, context: Any = None) -> str:
    return str(data).lower()


def double(data: Any, context: Any = None) -> Any:
    return data * 2


def finished(previous_step: Any, context: Any) -> bool:
    return isinstance(previous_step, dict) and previous_step.get("done") is True


def pick(previous_step: Any, context: Any) -> str:
    return "a" if previous_step == "a" else "b"


async def not_plain(previous_step: Any, context: Any) -> bool:
    return True


NOT_A_FUNCTION = 3
