"""Unified diffs of what two runs sent: an agent's prompt (its messages, masked as the journal keeps them), a
tool call (its name and arguments), a question. Read by the replay (``ReplayDiverged``) and by
``flujo lens diff``."""

from __future__ import annotations

import difflib
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any


def canonical(value: Any) -> str:
    """``value`` as canonical JSON: sorted keys, no spaces. Two values are the same call's when equal."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def message_lines(messages: Iterable[Mapping[str, Any]]) -> list[str]:
    """A prompt as lines a person reads in a diff: each message's header (``[2] user``), then its text, each
    line indented; an assistant message's tool calls and a tool result's call id after its text."""
    lines: list[str] = []
    for number, message in enumerate(messages, 1):
        role = str(message.get("role", "?"))
        lines.append(f"[{number}] {role}")
        content = message.get("content")
        text = content if isinstance(content, str) else canonical(content)
        lines.extend(f"    {line}" for line in text.split("\n"))
        calls = message.get("tool_calls")
        if calls:
            lines.append(f"    tool_calls: {calls if isinstance(calls, str) else canonical(calls)}")
        if message.get("tool_call_id") is not None:
            lines.append(f"    tool_call_id: {message['tool_call_id']}")
    return lines


def value_lines(value: Any) -> list[str]:
    """A value (a tool call's name and arguments, a reply) as indented JSON lines, keys sorted."""
    if isinstance(value, str):
        return value.split("\n")
    return json.dumps(value, sort_keys=True, indent=2, ensure_ascii=False, default=str).split("\n")


def unified(
    recorded: Sequence[str], new: Sequence[str], *, path: str, before: str = "recorded", after: str = "new"
) -> str:
    """The unified diff of two texts' lines (``--- recorded PATH`` / ``+++ new PATH``), every line of both
    kept when they are short (a prompt's context is what shows why it differs)."""
    context = max(3, len(recorded), len(new)) if max(len(recorded), len(new)) <= 40 else 3
    diff = difflib.unified_diff(
        list(recorded), list(new), fromfile=f"{before} {path}", tofile=f"{after} {path}", n=context, lineterm=""
    )
    return "\n".join(diff)


def messages_diff(recorded: Sequence[Mapping[str, Any]], new: Sequence[Mapping[str, Any]], *, path: str) -> str:
    return unified(message_lines(recorded), message_lines(new), path=path)
