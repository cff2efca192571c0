"""Tools by JSON reply (tool mode ``json``): for a model whose server ignores the OpenAI ``tools`` field but
enforces a response-format JSON schema, as the embedded llama.cpp server does (``model: local``), or any
OpenAI-compatible agent whose blueprint says ``tool_mode: json``.

- Every reply must match one schema (``turn_schema``): an ``anyOf`` of ``{"tool": NAME, "arguments": <the
  tool's input_schema>}``, one per tool, and ``{"answer": ...}`` (a string, or the agent's
  ``output_schema``), each with both keys required and no other. ``tools`` is never sent.
- The system prompt describes the tools (name, description, schema) and the two kinds of reply
  (``system_text``), after the agent's own system prompt.
- The loop's messages are worded as text (``json_messages``): a call as the JSON object the model gave, a
  tool's result as a user message (``Result of add: 5``). So ``tool_messages`` is what is sent, word for word.
- A reply is one tool call (id ``call_K``, the step's K-th call in this mode) or the answer (``read_reply``).
  A reply that is not valid JSON or matches no branch (cut short by ``max_tokens``) gets one repair request
  (``repair_request``), then the turn fails.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from core.agents.structured import OutputSchema
from core.model.calls import ChatMessage
from core.model.tools import ToolCall, ToolDef

ANSWER_TEXT: Mapping[str, Any] = {"type": "string"}


def turn_schema(tools: Sequence[ToolDef], answer: Mapping[str, Any] | None) -> dict[str, Any]:
    """The JSON Schema every reply must match: one branch per tool, then the answer's (a string unless
    ``answer`` is the agent's output_schema)."""
    branches = [
        _branch({"tool": {"const": tool.name}, "arguments": dict(tool.input_schema)}, ["tool", "arguments"])
        for tool in tools
    ]
    branches.append(_branch({"answer": dict(answer or ANSWER_TEXT)}, ["answer"]))
    return {"anyOf": branches}


def _branch(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": required, "additionalProperties": False}


def system_text(tools: Sequence[ToolDef], answer: Mapping[str, Any] | None) -> str:
    """What the system prompt says of the tools and of the replies the model may give."""
    lines = [
        "You can use tools. Reply with exactly one JSON object and nothing else:",
        '- to call a tool: {"tool": "<name>", "arguments": {...}}, the arguments matching the tool\'s schema;'
        " the tool's result comes back in the next message;",
    ]
    if answer is None:
        lines.append('- when you know the answer: {"answer": "<your answer>"}.')
    else:
        schema = json.dumps(dict(answer), ensure_ascii=False)
        lines.append(f'- when you know the answer: {{"answer": <a JSON value matching this schema: {schema}>}}.')
    lines.append("Tools:")
    for tool in tools:
        lines.append(f"- {tool.name}: {tool.description}" if tool.description else f"- {tool.name}")
        lines.append(f"  arguments schema: {json.dumps(dict(tool.input_schema), ensure_ascii=False)}")
    return "\n".join(lines)


def json_messages(
    messages: Sequence[ChatMessage], tools: Sequence[ToolDef], answer: Mapping[str, Any] | None, *, drop: str = ""
) -> list[ChatMessage]:
    """``messages`` as sent in JSON mode: the system prompt (without ``drop``, the agent's own request for
    JSON that the answer branch replaces) followed by ``system_text``; each assistant message with tool calls
    as the JSON of its call (its ``name`` is the tool's: it counts the calls, and is not sent); each tool
    result as the user's message ``Result of NAME: CONTENT``."""
    about = system_text(tools, answer)
    sent: list[ChatMessage] = []
    for message in messages:
        if message.role == "system" and not sent:
            own = message.content.removesuffix(drop).rstrip() if drop else message.content
            sent.append(_system_message(f"{own}\n\n{about}" if own else about))
        elif message.role == "tool":
            sent.append(ChatMessage("user", f"Result of {message.name or 'the tool'}: {message.content}"))
        elif message.tool_calls:
            said = "\n".join(call_json(call) for call in message.tool_calls)
            sent.append(ChatMessage("assistant", said, name=message.tool_calls[0].name))
        else:
            sent.append(message)
    if not sent or sent[0].role != "system":
        sent.insert(0, _system_message(about))
    return sent


@functools.lru_cache(maxsize=64)
def _system_message(content: str) -> ChatMessage:
    """The same message object in every turn of a loop, so tracing masks it once (``Redactor.messages``)."""
    return ChatMessage("system", content)


def call_json(call: ToolCall) -> str:
    """A call as the JSON object a model in this mode gives for it."""
    if call.arguments_error is not None and isinstance(call.arguments, str):
        return f'{{"tool": {json.dumps(call.name, ensure_ascii=False)}, "arguments": {call.arguments}}}'
    arguments = {} if call.arguments is None else call.arguments
    return json.dumps({"tool": call.name, "arguments": arguments}, ensure_ascii=False)


@dataclass(frozen=True)
class JsonReply:
    """A reply read: the call it asks for, else the answer (``value``); ``error`` when it is neither."""

    call: ToolCall | None = None
    value: Any = None
    error: str | None = None


def read_reply(text: str, schema: OutputSchema, sent: Sequence[ChatMessage]) -> JsonReply:
    """The call or the answer ``text`` holds, checked against ``schema`` (``turn_schema``'s); ``sent`` (the
    messages of the turn) numbers the call."""
    checked = schema.check_text(text)
    if checked.error is not None:
        return JsonReply(error=checked.error)
    value = checked.value
    assert isinstance(value, dict)  # every branch of the schema is an object
    if "tool" in value:
        number = 1 + sum(1 for message in sent if message.role == "assistant" and message.name is not None)
        return JsonReply(call=ToolCall(f"call_{number}", str(value["tool"]), value.get("arguments")))
    return JsonReply(value=value.get("answer"))


def repair_request(error: str) -> str:
    """The user message sent after a reply that is neither a call nor an answer."""
    return (
        f"Your previous reply was not one valid JSON object of the required form ({error}). Reply again with "
        'only one short JSON object: {"tool": "<name>", "arguments": {...}} to call a tool, or '
        '{"answer": ...} with your answer.'
    )
