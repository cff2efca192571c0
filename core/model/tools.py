"""What a tool-using agent step exchanges with its model and its tools, as plain values.

A model that may use tools is told of each as a ``ToolDef``; its reply is a ``ModelTurn``: text, and the
``ToolCall`` s it asks for (none when it answers). Each call's ``ToolOutcome`` goes back to the model as the
tool's result. All of them round-trip through JSON (``to_dict`` / ``from_dict``): the journal holds them, so a
resumed run sends the model exactly what it was sent before.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from core.model.usage import ZERO_USAGE, Usage

# How an agent tells its model about tools: ``native`` with the provider's own tool API (OpenAI ``tools``,
# Anthropic ``tool_use``), ``json`` with a response-format JSON schema (one choice per tool, plus the answer)
# and the tools described in the system prompt, for servers that ignore ``tools`` (the local model).
ToolMode = Literal["native", "json"]
# Whether the person is asked before each call of a tool.
Approve = Literal["never", "ask"]


@dataclass(frozen=True)
class ToolDef:
    """A tool as a model is told of it: its name, what it does, and the JSON Schema of its arguments."""

    name: str
    description: str
    input_schema: Mapping[str, Any] = field(default_factory=lambda: {"type": "object", "properties": {}})

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "description": self.description, "input_schema": dict(self.input_schema)}


@dataclass(frozen=True)
class ToolCall:
    """One call a model asked for: the provider's id for it (made up as ``call_N`` where the wire has none),
    the tool's name, and its arguments as parsed. ``arguments_error`` is set when the model's arguments were
    not valid JSON (``arguments`` is then the text as received): the call fails with that error as its result."""

    id: str
    name: str
    arguments: Any = None
    arguments_error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"id": self.id, "name": self.name, "arguments": self.arguments}
        if self.arguments_error is not None:
            data["arguments_error"] = self.arguments_error
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ToolCall:
        error = data.get("arguments_error")
        return cls(
            id=str(data.get("id", "")),
            name=str(data.get("name", "")),
            arguments=data.get("arguments"),
            arguments_error=error if isinstance(error, str) else None,
        )


@dataclass(frozen=True)
class ModelTurn:
    """One reply of a model in a tool loop: its text (the answer when ``tool_calls`` is empty) and the calls
    it asks for, with what the exchange cost. ``streamed`` is True when ``text`` already went to the
    person as it came. ``output`` is the answer as data when the agent has an ``output_schema`` (the value
    the text holds, checked against the schema); None when the answer is the text."""

    text: str
    tool_calls: tuple[ToolCall, ...] = ()
    usage: Usage = ZERO_USAGE
    model: str | None = None
    attempts: int = 1
    streamed: bool = False
    output: Any = None

    @property
    def answer(self) -> Any:
        """The step's output when this turn answers: ``output`` when the answer is data, else ``text``."""
        return self.text if self.output is None else self.output

    def to_dict(self) -> dict[str, Any]:
        """What the journal keeps of the turn (its usage is the step's, kept in the record)."""
        data = {"text": self.text, "tool_calls": [call.to_dict() for call in self.tool_calls], "model": self.model}
        if self.output is not None:
            data["output"] = self.output
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], usage: Usage = ZERO_USAGE) -> ModelTurn:
        calls = data.get("tool_calls") or ()
        model = data.get("model")
        return cls(
            text=str(data.get("text") or ""),
            tool_calls=tuple(ToolCall.from_dict(call) for call in calls if isinstance(call, Mapping)),
            usage=usage,
            model=model if isinstance(model, str) else None,
            output=data.get("output"),
        )


@dataclass(frozen=True)
class ToolOutcome:
    """What a tool call gave back. ``content`` is the text the model is sent as the tool's result (already cut
    to the agent's size); ``value`` the tool's result as it was (the journal keeps it unredacted); ``error`` is
    True when the call failed (it raised, exited non-zero, timed out, had arguments that fail its schema, was
    unknown, or the person declined it): ``content`` then says why, and the model decides what next."""

    content: str
    value: Any = None
    error: bool = False
    declined: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {"content": self.content, "value": self.value, "error": self.error, "declined": self.declined}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ToolOutcome:
        return cls(
            content=str(data.get("content") or ""),
            value=data.get("value"),
            error=bool(data.get("error")),
            declined=bool(data.get("declined")),
        )


@dataclass(frozen=True)
class ToolCallContext:
    """Where one tool call runs: the run, the path of its ``P/tool/N`` record, the attempt (1, then 2 and more
    when a resume runs it again after a crash), ``on_progress`` for a line the person watching sees while a
    long call runs, and ``process_started``, awaited with the id of a process the call starts (a command tool's)
    so that the run records its process group (a resumed run ends what is left of it)."""

    run_id: str
    path: str
    attempt: int = 1
    on_progress: Callable[[str], None] | None = None
    process_started: Callable[[int], Awaitable[None]] | None = None


def result_text(value: Any) -> str:
    """A tool's result as the text a model reads: a string as is, anything else as JSON."""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
