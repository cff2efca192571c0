"""An agent over the Anthropic Messages API (``POST {base_url}/v1/messages``).

Differences from the OpenAI shape, handled here: the system prompt is a top-level ``system`` field (system
messages of the history are folded into it), ``max_tokens`` is required (default 1024, or the agent's
``model_settings.max_tokens``), replies are content blocks (their text blocks are joined), usage is
``input_tokens``/``output_tokens``, and streams are typed SSE events (``message_start``,
``content_block_delta``, ``message_delta``, ``error``, ending with ``message_stop``: a stream that stops
before it was cut off, core.agents.http). There is no response-format switch, so an
``output_schema`` is stated in the system prompt and checked on our side.

The Messages API requires the messages to start with a user turn and to alternate user/assistant; a
bounded conversation history may start with an assistant turn (a question whose earlier turns were
dropped, a summary) or hold two turns of one role in a row (two agents speaking, a critic's draft after
the goal). ``prompt`` therefore merges consecutive turns of one role (blank line between) and puts
``LEADING_USER_TURN`` before a leading assistant turn, so the trace shows exactly what is sent.

Tools: ``tools`` is ``[{name, description, input_schema}]``; an assistant message of the loop is content
blocks, its text then a ``tool_use`` block per call (``{id, name, input}``), and the results of its calls go
back as ONE user message of ``tool_result`` blocks (``{tool_use_id, content, is_error}``), as the API requires:
consecutive messages that go as one role (a ``tool`` message goes as the user's) are sent as one message of
their blocks, never merged as text. A streamed call's input comes as ``input_json_delta`` pieces. The JSON
mode (core.agents.json_tools) has no response format here: the system prompt states the reply's form.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from core.agents.chat import ChatModelAgent, Completion, token_count
from core.agents.http import Endpoint, SSEEvent, post_json, stream_events
from core.agents.spec import AgentSpec
from core.model.calls import AgentCall, ChatMessage
from core.model.errors import ProviderError
from core.model.tools import ToolCall, ToolDef
from core.settings.config import ModelInfo

ANTHROPIC_VERSION = "2023-06-01"
DEFAULT_MAX_TOKENS = 1024
LEADING_USER_TURN = "(continuing an earlier conversation)"
# How a tool's result that is an error starts (core.ports.Tool): sent with ``is_error``.
ERROR_PREFIX = "Error:"


def alternating(messages: list[ChatMessage]) -> list[ChatMessage]:
    """``messages`` as the Messages API accepts them: system messages first, then turns that start with a
    user turn and alternate (consecutive turns of one role merged, a leading assistant turn preceded by
    ``LEADING_USER_TURN``). A message of a tool loop (calls, a result) is never merged as text: the request
    sends it in one message with its neighbours of the same role, as blocks (``wire_messages``)."""
    system = [message for message in messages if message.role == "system"]
    turns: list[ChatMessage] = []
    for message in messages:
        if message.role == "system":
            continue
        if turns and turns[-1].role == message.role and _plain(turns[-1]) and _plain(message):
            turns[-1] = ChatMessage(message.role, f"{turns[-1].content}\n\n{message.content}")
        else:
            turns.append(message)
    if turns and _role(turns[0]) == "assistant":
        turns.insert(0, ChatMessage("user", LEADING_USER_TURN))
    return [*system, *turns]


def _plain(message: ChatMessage) -> bool:
    return message.role != "tool" and not message.tool_calls


def _role(message: ChatMessage) -> str:
    """The role a message is sent as: a tool's result goes as the user's."""
    return "assistant" if message.role == "assistant" else "user"


def wire_messages(messages: list[ChatMessage]) -> list[dict[str, Any]]:
    """The ``messages`` of a request: each message not the system's, its content a text, or content blocks for
    a message of a tool loop; consecutive messages sent as one role become one message of their blocks."""
    wire: list[dict[str, Any]] = []
    for message in messages:
        if message.role == "system":
            continue
        role = _role(message)
        content: str | list[dict[str, Any]] = message.content if _plain(message) else _blocks_of(message)
        if wire and wire[-1]["role"] == role:
            wire[-1]["content"] = [*_as_blocks(wire[-1]["content"]), *_as_blocks(content)]
        else:
            wire.append({"role": role, "content": content})
    return wire


def _blocks_of(message: ChatMessage) -> list[dict[str, Any]]:
    if message.role == "tool":
        result: dict[str, Any] = {
            "type": "tool_result",
            "tool_use_id": message.tool_call_id or "",
            "content": message.content,
        }
        if message.content.startswith(ERROR_PREFIX):
            result["is_error"] = True
        return [result]
    uses = [
        {
            "type": "tool_use",
            "id": call.id,
            "name": call.name,
            "input": call.arguments if isinstance(call.arguments, dict) else {},
        }
        for call in message.tool_calls
    ]
    return [*_as_blocks(message.content), *uses]


def _as_blocks(content: str | list[dict[str, Any]]) -> list[dict[str, Any]]:
    if isinstance(content, list):
        return content
    return [{"type": "text", "text": content}] if content else []  # the API refuses an empty text block


def anthropic_headers(api_key: str) -> dict[str, str]:
    """The headers every Messages API request carries."""
    return {"x-api-key": api_key, "anthropic-version": ANTHROPIC_VERSION}


class AnthropicChatAgent(ChatModelAgent):
    """A Claude model over the Messages API. ``endpoint.headers`` should come from ``anthropic_headers``."""

    def __init__(
        self,
        spec: AgentSpec,
        endpoint: Endpoint,
        *,
        model: str,
        price: ModelInfo | None = None,
        prompt_budget: int | None = None,
    ) -> None:
        super().__init__(spec, price=price or ModelInfo(), schema_in_prompt=True, prompt_budget=prompt_budget)
        self.endpoint = endpoint
        self.model = model
        # ANTHROPIC_BASE_URL is usually the bare host; accept one that already ends in /v1.
        self._path = "/messages" if endpoint.base_url.rstrip("/").endswith("/v1") else "/v1/messages"

    def prompt(self, call: AgentCall) -> list[ChatMessage]:
        return alternating(super().prompt(call))

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
            {"name": tool.name, "description": tool.description, "input_schema": dict(tool.input_schema)}
            for tool in tools
        ]
        if answer_only:
            body["tool_choice"] = {"type": "none"}
        return await self._send(body, on_text)

    async def _send(self, body: dict[str, Any], on_text: Callable[[str], None] | None) -> Completion:
        """POST ``body`` once (the transport retries), streamed to ``on_text`` when it is set."""
        if on_text is None:
            data, attempts = await post_json(self.endpoint, self._path, body)
            return self._completion(data, attempts)
        body["stream"] = True
        label = self.endpoint.label
        reply, attempts = await stream_events(self.endpoint, self._path, body, lambda: _StreamedReply(label, on_text))
        return reply.completion(self.model, attempts)

    def _body(self, messages: list[ChatMessage]) -> dict[str, Any]:
        body: dict[str, Any] = {k: v for k, v in self.spec.model_settings.items() if k not in _OURS}
        body["model"] = self.model
        body.setdefault("max_tokens", DEFAULT_MAX_TOKENS)
        system = "\n\n".join(message.content for message in messages if message.role == "system")
        if system:
            body["system"] = system
        body["messages"] = wire_messages(messages)
        return body

    def _completion(self, data: Mapping[str, Any], attempts: int) -> Completion:
        blocks = data.get("content")
        if not isinstance(blocks, list):
            raise ProviderError(f"{self.endpoint.label}: the reply has no content: {json.dumps(data)[:300]}")
        text = "".join(
            block["text"]
            for block in blocks
            if isinstance(block, dict) and block.get("type") == "text" and isinstance(block.get("text"), str)
        )
        calls = tuple(
            _tool_use(block.get("id"), block.get("name"), block.get("input"), number)
            for number, block in enumerate(blocks, 1)
            if isinstance(block, dict) and block.get("type") == "tool_use"
        )
        usage = data.get("usage")
        model = data.get("model")
        return Completion(
            text=text,
            input_tokens=_input_tokens(usage),
            output_tokens=token_count(usage, "output_tokens"),
            usage_reported=isinstance(usage, dict),
            model=model if isinstance(model, str) else self.model,
            attempts=attempts,
            tool_calls=calls,
        )


def _tool_use(given_id: Any, name: Any, arguments: Any, number: int) -> ToolCall:
    call_id = given_id if isinstance(given_id, str) and given_id else f"call_{number}"
    return ToolCall(call_id, name if isinstance(name, str) else "", {} if arguments is None else arguments)


# Keys of the request body this agent sets itself; model_settings cannot override them.
_OURS = frozenset({"model", "messages", "system", "stream", "tools", "tool_choice"})


@dataclass
class _ToolUseParts:
    """A streamed ``tool_use`` block: its id and name (from its start), its input's JSON pieces."""

    id: str
    name: str
    start: Any
    pieces: list[str]

    def call(self, number: int) -> ToolCall:
        text = "".join(self.pieces)
        if not text.strip():
            return _tool_use(self.id, self.name, self.start, number)
        try:
            return _tool_use(self.id, self.name, json.loads(text), number)
        except ValueError as exc:
            return ToolCall(self.id or f"call_{number}", self.name, text, arguments_error=str(exc))


class _StreamedReply:
    """Collects a streamed message: text deltas (forwarded to ``on_text``), ``tool_use`` blocks (their input
    in ``input_json_delta`` pieces), usage, the model. The stream is ``finished`` once ``message_stop`` has
    arrived."""

    def __init__(self, label: str, on_text: Callable[[str], None]) -> None:
        self._label = label
        self._on_text = on_text
        self._parts: list[str] = []
        self._uses: dict[int, _ToolUseParts] = {}
        self._input_tokens = 0
        self._output_tokens = 0
        self._usage_reported = False
        self._model: str | None = None
        self._finished = False

    @property
    def finished(self) -> bool:
        return self._finished

    @property
    def text(self) -> str:
        return "".join(self._parts)

    def feed(self, event: SSEEvent) -> None:
        try:
            data = json.loads(event.data)
        except ValueError:
            raise ProviderError(f"{self._label}: malformed stream event: {event.data[:200]}") from None
        if not isinstance(data, dict):
            return
        kind = event.event or data.get("type")
        if kind == "message_start" and isinstance(data.get("message"), dict):
            message = data["message"]
            if isinstance(message.get("model"), str):
                self._model = message["model"]
            if isinstance(message.get("usage"), dict):
                self._usage_reported = True
                self._input_tokens = _input_tokens(message["usage"])
                self._output_tokens = token_count(message["usage"], "output_tokens")
        elif kind == "content_block_start" and isinstance(data.get("content_block"), dict):
            block = data["content_block"]
            if block.get("type") == "tool_use" and isinstance(data.get("index"), int):
                given_id, name = block.get("id"), block.get("name")
                self._uses[data["index"]] = _ToolUseParts(
                    given_id if isinstance(given_id, str) else "",
                    name if isinstance(name, str) else "",
                    block.get("input"),
                    [],
                )
        elif kind == "content_block_delta" and isinstance(data.get("delta"), dict):
            delta = data["delta"]
            if delta.get("type") == "text_delta" and isinstance(delta.get("text"), str) and delta["text"]:
                self._parts.append(delta["text"])
                self._on_text(delta["text"])
            elif delta.get("type") == "input_json_delta" and isinstance(delta.get("partial_json"), str):
                use = self._uses.get(data["index"]) if isinstance(data.get("index"), int) else None
                if use is not None:
                    use.pieces.append(delta["partial_json"])
        elif kind == "message_delta" and isinstance(data.get("usage"), dict):
            self._usage_reported = True
            # output_tokens here is cumulative for the message, not an increment.
            self._output_tokens = token_count(data["usage"], "output_tokens")
        elif kind == "message_stop":
            self._finished = True
        elif kind == "error":
            error = data.get("error")
            detail = error.get("message") if isinstance(error, dict) else error
            raise ProviderError(f"{self._label}: the provider reported an error mid-stream: {detail}")

    def completion(self, model: str, attempts: int) -> Completion:
        return Completion(
            text=self.text,
            input_tokens=self._input_tokens,
            output_tokens=self._output_tokens,
            usage_reported=self._usage_reported,
            model=self._model or model,
            attempts=attempts,
            tool_calls=tuple(use.call(number) for number, (_, use) in enumerate(sorted(self._uses.items()), 1)),
        )


def _input_tokens(usage: Any) -> int:
    # Cached prompt tokens are reported apart from input_tokens; all of them were sent.
    return sum(
        token_count(usage, key) for key in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
    )
