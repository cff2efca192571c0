"""The words of OpenTelemetry's GenAI semantic conventions that flujo's spans use, and a run's messages in
their JSON shapes.

The conventions (opentelemetry.io/docs/specs/semconv/gen-ai/, v1.41) name the operations (``invoke_workflow``
for a run, ``invoke_agent`` for an agent step, ``chat`` for a model call, ``execute_tool`` for a tool call),
the attributes each span carries, and how content is written when it is captured: ``gen_ai.input.messages``
and ``gen_ai.output.messages`` as JSON strings of ``{"role", "parts": [...]}`` messages, each part a
``text``, a ``tool_call`` (id, name, arguments) or a ``tool_call_response`` (id, response). What flujo adds
is named ``flujo.*``; ``session.id`` is the OpenTelemetry name for a session, which a thread is.

Nothing here imports OpenTelemetry: these are plain strings and JSON.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

# Operations (gen_ai.operation.name) and the span names they start.
WORKFLOW = "invoke_workflow"
AGENT = "invoke_agent"
CHAT = "chat"
TOOL = "execute_tool"

OPERATION = "gen_ai.operation.name"
PROVIDER = "gen_ai.provider.name"
WORKFLOW_NAME = "gen_ai.workflow.name"
AGENT_NAME = "gen_ai.agent.name"
REQUEST_MODEL = "gen_ai.request.model"
RESPONSE_MODEL = "gen_ai.response.model"
INPUT_TOKENS = "gen_ai.usage.input_tokens"
OUTPUT_TOKENS = "gen_ai.usage.output_tokens"
CONVERSATION = "gen_ai.conversation.id"
TOOL_NAME = "gen_ai.tool.name"
TOOL_CALL_ID = "gen_ai.tool.call.id"
TOOL_TYPE = "gen_ai.tool.type"
INPUT_MESSAGES = "gen_ai.input.messages"
OUTPUT_MESSAGES = "gen_ai.output.messages"
TOOL_ARGUMENTS = "gen_ai.tool.call.arguments"
TOOL_RESULT = "gen_ai.tool.call.result"
ERROR_TYPE = "error.type"
SESSION = "session.id"

# flujo's own.
RUN_ID = "flujo.run.id"
RUN_STATUS = "flujo.run.status"
PARENT_RUN_ID = "flujo.run.parent_id"
PAUSED_AT = "flujo.run.pause_path"
STEP_PATH = "flujo.step.path"
STEP_STATUS = "flujo.step.status"
COST = "flujo.usage.cost_usd"
REQUESTS = "flujo.usage.requests"
ATTEMPTS = "flujo.attempts"
PURPOSE = "flujo.purpose"
SIMULATED_PERSON = "flujo.simulated_person"
REPLAYED_FROM = "flujo.replayed_from"
DECLINED = "flujo.tool.declined"
QUESTION = "flujo.question"
"""The name of the span event of a human question (on the span it was asked in)."""
WAIT = "flujo.wait_s"
ANSWERED_BY = "flujo.question.answered_by"
STEP_FAILED = "flujo.step.failed"
"""The name of the span event of a step that failed and is no span of its own (on the span it ran in)."""
ERROR_MESSAGE = "exception.message"
QUESTION_TEXT = "flujo.question.message"
ANSWER_TEXT = "flujo.question.answer"

Attributes = dict[str, str | int | float | bool]


def provider_and_model(label: str) -> tuple[str, str]:
    """An agent's label as the provider that serves it and the model asked for: ``openai:gpt-4o-mini`` is
    ``openai`` and ``gpt-4o-mini``; a label without a provider (``scripted``, a local model's file) is
    flujo's own: ``flujo`` and the label."""
    provider, colon, model = label.partition(":")
    return (provider, model) if colon and provider and model else ("flujo", label)


def as_json(value: Any) -> str:
    """``value`` as a JSON string (attributes hold strings, numbers and booleans only)."""
    return json.dumps(value, ensure_ascii=False, default=str, separators=(",", ":"))


def text_of(value: Any) -> str:
    """A value as the text of a message part: a text as it is, anything else as JSON."""
    return value if isinstance(value, str) else as_json(value)


def input_messages(messages: Any) -> str:
    """A prompt's messages (``PromptSent.messages``, masked) as ``gen_ai.input.messages``."""
    shaped = [_message(m) for m in messages if isinstance(m, Mapping)] if isinstance(messages, list | tuple) else []
    return as_json(shaped)


def user_message(value: Any) -> str:
    """One value sent as the user's message (a step's or a run's input) as ``gen_ai.input.messages``."""
    return as_json([{"role": "user", "parts": [{"type": "text", "content": text_of(value)}]}])


def output_message(value: Any) -> str:
    """A reply as ``gen_ai.output.messages``: one assistant message. A tool loop's model turn (a mapping of
    ``text`` and ``tool_calls``) is its text and the calls asked for, finished for them."""
    parts: list[dict[str, Any]] = []
    finish = "stop"
    if isinstance(value, Mapping) and "tool_calls" in value and "text" in value:
        if value["text"]:
            parts.append({"type": "text", "content": text_of(value["text"])})
        calls = _tool_calls(value["tool_calls"])
        parts.extend(calls)
        finish = "tool_call" if calls else finish
    else:
        parts.append({"type": "text", "content": text_of(value)})
    return as_json([{"role": "assistant", "parts": parts, "finish_reason": finish}])


def _message(message: Mapping[str, Any]) -> dict[str, Any]:
    role = str(message.get("role", "user"))
    content = message.get("content")
    parts: list[dict[str, Any]] = []
    if message.get("tool_call_id") is not None:  # a tool's result, sent back to the model
        parts.append({"type": "tool_call_response", "id": message.get("tool_call_id"), "response": content})
    elif content not in (None, ""):
        parts.append({"type": "text", "content": text_of(content)})
    parts.extend(_tool_calls(message.get("tool_calls")))
    return {"role": role, "parts": parts}


def _tool_calls(calls: Any) -> list[dict[str, Any]]:
    """The tool calls of a message or a model turn (a list, or its JSON as a prompt event stores it) as
    ``tool_call`` parts."""
    if isinstance(calls, str):
        try:
            calls = json.loads(calls)
        except ValueError:
            return []
    if not isinstance(calls, list):
        return []
    return [
        {"type": "tool_call", "id": call.get("id"), "name": call.get("name"), "arguments": call.get("arguments")}
        for call in calls
        if isinstance(call, Mapping)
    ]
