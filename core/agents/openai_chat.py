"""An agent over the OpenAI-compatible chat completions API (OpenAI, Ollama, vLLM, llama.cpp, LM Studio).

``POST {base_url}/chat/completions`` with our own message list, sent verbatim. The model's settings
(temperature, max_tokens, ...) are passed through. Structured output asks for ``response_format``
``json_schema`` (OpenAI) or ``json_object`` (what many local servers accept; the schema then goes in the
system prompt). Streaming uses SSE with ``stream_options.include_usage`` so usage is still reported; a
stream ends with a ``finish_reason`` or ``data: [DONE]``, and one that stops before either was cut off
(core.agents.http): ``finish_reason: "length"`` (the reply reached ``max_tokens``) is a complete reply.

Tools: the native mode sends ``tools`` (``{type: function, function: {name, description, parameters}}``) and
the loop's messages as OpenAI words them: an assistant message with ``tool_calls`` (``{id, type: function,
function: {name, arguments}}``, the arguments a JSON text) and a ``tool`` message per result (its
``tool_call_id``). The calls of a reply come whole (``message.tool_calls``) or, streamed, in fragments by
``index`` (the id and name first, the arguments in pieces); arguments that are not valid JSON become the call's
``arguments_error``. The JSON mode never sends ``tools``: the reply's schema is the ``response_format``
(core.agents.json_tools).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from core.agents.chat import ChatModelAgent, Completion, token_count
from core.agents.http import Endpoint, SSEEvent, post_json, stream_events
from core.agents.spec import AgentSpec
from core.model.calls import ChatMessage
from core.model.errors import ProviderError
from core.model.tools import ToolCall, ToolDef
from core.settings.config import ModelInfo

StructuredMode = Literal["json_schema", "json_object"]


def openai_headers(api_key: str | None) -> dict[str, str]:
    """The headers every request carries: a bearer token when there is a key (local servers need none)."""
    return {"Authorization": f"Bearer {api_key}"} if api_key else {}


class OpenAIChatAgent(ChatModelAgent):
    """A chat model behind an OpenAI-compatible endpoint. ``model`` is the name the API expects."""

    def __init__(
        self,
        spec: AgentSpec,
        endpoint: Endpoint,
        *,
        model: str,
        price: ModelInfo | None = None,
        prompt_budget: int | None = None,
        structured_output: StructuredMode = "json_schema",
    ) -> None:
        super().__init__(
            spec,
            price=price or ModelInfo(),
            schema_in_prompt=structured_output == "json_object",
            prompt_budget=prompt_budget,
        )
        self.endpoint = endpoint
        self.model = model
        self.structured_output = structured_output

    async def _complete(self, messages: list[ChatMessage], *, on_text: Callable[[str], None] | None) -> Completion:
        return await self._send(self._body(messages), on_text)

    async def _tool_exchange(
        self,
        messages: list[ChatMessage],
        tools: Sequence[ToolDef],
        *,
        on_text: Callable[[str], None] | None,
        answer_only: bool,
    ) -> Completion:
        body = self._body(messages)
        body["tools"] = [
            {
                "type": "function",
                "function": {"name": tool.name, "description": tool.description, "parameters": dict(tool.input_schema)},
            }
            for tool in tools
        ]
        if answer_only:
            body["tool_choice"] = "none"
        return await self._send(body, on_text)

    async def _complete_json(self, messages: list[ChatMessage], schema: Mapping[str, Any]) -> Completion:
        body = self._body(messages)
        body.pop("parallel_tool_calls", None)  # refused without tools
        body["response_format"] = self._response_format(schema, "tool_turn")
        return await self._send(body, None)

    async def _send(self, body: dict[str, Any], on_text: Callable[[str], None] | None) -> Completion:
        """POST ``body`` once (the transport retries), streamed to ``on_text`` when it is set."""
        if on_text is None:
            data, attempts = await post_json(self.endpoint, "/chat/completions", body)
            return self._completion(data, attempts)
        body["stream"] = True
        body["stream_options"] = {"include_usage": True}
        label = self.endpoint.label
        reply, attempts = await stream_events(
            self.endpoint, "/chat/completions", body, lambda: _StreamedReply(label, on_text)
        )
        return reply.completion(self.model, attempts)

    def _body(self, messages: list[ChatMessage]) -> dict[str, Any]:
        body: dict[str, Any] = {k: v for k, v in self.spec.model_settings.items() if k not in _OURS}
        body["model"] = self.model
        body["messages"] = [openai_message(message) for message in messages]
        if self._schema is not None:
            body["response_format"] = self._response_format(self._schema.schema, "output")
        return body

    def _response_format(self, schema: Mapping[str, Any], name: str) -> dict[str, Any]:
        if self.structured_output == "json_schema":
            return {"type": "json_schema", "json_schema": {"name": name, "schema": dict(schema)}}
        return {"type": "json_object"}  # the schema is in the system prompt

    def _completion(self, data: Mapping[str, Any], attempts: int) -> Completion:
        choices = data.get("choices")
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            raise ProviderError(f"{self.endpoint.label}: the reply has no choices: {json.dumps(data)[:300]}")
        message = choices[0].get("message")
        message = message if isinstance(message, dict) else {}
        text = _text_of(message.get("content"))
        calls = _calls_of(message.get("tool_calls"))
        if not text and not calls and isinstance(message.get("refusal"), str):
            raise ProviderError(f"{self.endpoint.label} refused to answer: {message['refusal']}")
        usage = data.get("usage")
        model = data.get("model")
        return Completion(
            text=text,
            input_tokens=token_count(usage, "prompt_tokens"),
            output_tokens=token_count(usage, "completion_tokens"),
            usage_reported=isinstance(usage, dict),
            model=model if isinstance(model, str) else self.model,
            attempts=attempts,
            tool_calls=calls,
        )


def openai_message(message: ChatMessage) -> dict[str, Any]:
    """A message as the chat completions API takes it: role and content, and in a tool loop an assistant's
    ``tool_calls`` or a tool result's ``tool_call_id``."""
    if message.role == "tool":
        return {"role": "tool", "tool_call_id": message.tool_call_id or "", "content": message.content}
    if not message.tool_calls:
        return {"role": message.role, "content": message.content}
    return {
        "role": message.role,
        "content": message.content or None,
        "tool_calls": [
            {"id": call.id, "type": "function", "function": {"name": call.name, "arguments": arguments_text(call)}}
            for call in message.tool_calls
        ],
    }


def arguments_text(call: ToolCall) -> str:
    """A call's arguments as the JSON text the API carries (as received, when they were not valid JSON)."""
    if call.arguments_error is not None and isinstance(call.arguments, str):
        return call.arguments
    return json.dumps({} if call.arguments is None else call.arguments, ensure_ascii=False)


def _calls_of(listed: Any) -> tuple[ToolCall, ...]:
    """The ``tool_calls`` of a reply's message (not streamed)."""
    calls: list[ToolCall] = []
    for number, item in enumerate(listed if isinstance(listed, list) else (), 1):
        function = item.get("function") if isinstance(item, dict) else None
        if isinstance(function, dict):
            calls.append(tool_call(item.get("id"), function.get("name"), function.get("arguments"), number))
    return tuple(calls)


def tool_call(given_id: Any, name: Any, arguments: Any, number: int) -> ToolCall:
    """A call as the API gave it: arguments a JSON text (some servers send the object itself; an empty text
    is no arguments), parsed; ``call_N`` for a call without an id."""
    call_id = given_id if isinstance(given_id, str) and given_id else f"call_{number}"
    name = name if isinstance(name, str) else ""
    if not isinstance(arguments, str):
        return ToolCall(call_id, name, {} if arguments is None else arguments)
    if not arguments.strip():
        return ToolCall(call_id, name, {})
    try:
        return ToolCall(call_id, name, json.loads(arguments))
    except ValueError as exc:
        return ToolCall(call_id, name, arguments, arguments_error=str(exc))


# Keys of the request body this agent sets itself; model_settings cannot override them.
_OURS = frozenset({"model", "messages", "stream", "stream_options", "response_format", "tools", "tool_choice"})


@dataclass
class _CallParts:
    """A streamed tool call as its fragments arrive: its id and name, its arguments' pieces."""

    id: str = ""
    name: str = ""
    arguments: str = ""
    whole: Any = None  # arguments a server sent as an object, not a text


class _StreamedReply:
    """Collects a streamed completion: text deltas (forwarded to ``on_text``), tool call fragments (by their
    ``index``), the usage chunk, the model. The stream is ``finished`` once a choice's ``finish_reason``
    (``stop``, ``length``, ``tool_calls`` ...) or ``data: [DONE]`` has arrived (llama.cpp's server and
    others send one of the two)."""

    def __init__(self, label: str, on_text: Callable[[str], None]) -> None:
        self._label = label
        self._on_text = on_text
        self._parts: list[str] = []
        self._calls: dict[int, _CallParts] = {}
        self._usage: dict[str, Any] | None = None
        self._model: str | None = None
        self._finished = False

    @property
    def finished(self) -> bool:
        return self._finished

    @property
    def text(self) -> str:
        return "".join(self._parts)

    def feed(self, event: SSEEvent) -> None:
        if event.data.strip() == "[DONE]":
            self._finished = True
            return
        try:
            chunk = json.loads(event.data)
        except ValueError:
            raise ProviderError(f"{self._label}: malformed stream chunk: {event.data[:200]}") from None
        if not isinstance(chunk, dict):
            return
        if "error" in chunk:
            error = chunk["error"]
            detail = error.get("message") if isinstance(error, dict) else error
            raise ProviderError(f"{self._label}: the provider reported an error mid-stream: {detail}")
        if isinstance(chunk.get("model"), str):
            self._model = chunk["model"]
        if isinstance(chunk.get("usage"), dict):
            self._usage = chunk["usage"]
        for choice in chunk.get("choices") or ():
            if not isinstance(choice, dict):
                continue
            delta = choice.get("delta")
            delta = delta if isinstance(delta, dict) else {}
            text = _text_of(delta.get("content"))
            if text:
                self._parts.append(text)
                self._on_text(text)
            fragments = delta.get("tool_calls")
            for fragment in fragments if isinstance(fragments, list) else ():
                if isinstance(fragment, dict):
                    self._call_fragment(fragment)
            if isinstance(choice.get("finish_reason"), str):
                self._finished = True

    def _call_fragment(self, fragment: dict[str, Any]) -> None:
        index = fragment.get("index")
        parts = self._calls.setdefault(index if isinstance(index, int) else len(self._calls), _CallParts())
        if isinstance(fragment.get("id"), str) and fragment["id"]:
            parts.id = fragment["id"]
        function = fragment.get("function")
        if not isinstance(function, dict):
            return
        if isinstance(function.get("name"), str) and not parts.name:  # the name comes whole, once
            parts.name = function["name"]
        arguments = function.get("arguments")
        if isinstance(arguments, str):
            parts.arguments += arguments
        elif arguments is not None:
            parts.whole = arguments

    def completion(self, model: str, attempts: int) -> Completion:
        calls = tuple(
            tool_call(parts.id, parts.name, parts.whole if parts.whole is not None else parts.arguments, number)
            for number, (_, parts) in enumerate(sorted(self._calls.items()), 1)
        )
        return Completion(
            text=self.text,
            input_tokens=token_count(self._usage, "prompt_tokens"),
            output_tokens=token_count(self._usage, "completion_tokens"),
            usage_reported=self._usage is not None,
            model=self._model or model,
            attempts=attempts,
            tool_calls=calls,
        )


def _text_of(content: Any) -> str:
    """Message content as text: a string, or the text parts of a list of content parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(part["text"] for part in content if isinstance(part, dict) and isinstance(part.get("text"), str))
    return ""
