"""An agent over the OpenAI-compatible chat completions API (OpenAI, Ollama, vLLM, llama.cpp, LM Studio).

``POST {base_url}/chat/completions`` with our own message list, sent verbatim. The model's settings
(temperature, max_tokens, ...) are passed through. Structured output asks for ``response_format``
``json_schema`` (OpenAI) or ``json_object`` (what many local servers accept; the schema then goes in the
system prompt). Streaming uses SSE with ``stream_options.include_usage`` so usage is still reported; a
stream ends with a ``finish_reason`` or ``data: [DONE]``, and one that stops before either was cut off
(core.agents.http): ``finish_reason: "length"`` (the reply reached ``max_tokens``) is a complete reply.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any, Literal

from core.agents.chat import ChatModelAgent, Completion, token_count
from core.agents.http import Endpoint, SSEEvent, post_json, stream_events
from core.agents.spec import AgentSpec
from core.model.calls import ChatMessage
from core.model.errors import ProviderError
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
        body = self._body(messages)
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
        body["messages"] = [message.to_dict() for message in messages]
        if self._schema is not None:
            if self.structured_output == "json_schema":
                body["response_format"] = {
                    "type": "json_schema",
                    "json_schema": {"name": "output", "schema": self._schema.schema},
                }
            else:
                body["response_format"] = {"type": "json_object"}
        return body

    def _completion(self, data: Mapping[str, Any], attempts: int) -> Completion:
        choices = data.get("choices")
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            raise ProviderError(f"{self.endpoint.label}: the reply has no choices: {json.dumps(data)[:300]}")
        message = choices[0].get("message")
        message = message if isinstance(message, dict) else {}
        text = _text_of(message.get("content"))
        if not text and isinstance(message.get("refusal"), str):
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
        )


# Keys of the request body this agent sets itself; model_settings cannot override them.
_OURS = frozenset({"model", "messages", "stream", "stream_options", "response_format"})


class _StreamedReply:
    """Collects a streamed completion: text deltas (forwarded to ``on_text``), the usage chunk, the model.
    The stream is ``finished`` once a choice's ``finish_reason`` (``stop``, ``length`` ...) or ``data:
    [DONE]`` has arrived (llama.cpp's server and others send one of the two)."""

    def __init__(self, label: str, on_text: Callable[[str], None]) -> None:
        self._label = label
        self._on_text = on_text
        self._parts: list[str] = []
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
            text = _text_of(delta.get("content")) if isinstance(delta, dict) else ""
            if text:
                self._parts.append(text)
                self._on_text(text)
            if isinstance(choice.get("finish_reason"), str):
                self._finished = True

    def completion(self, model: str, attempts: int) -> Completion:
        return Completion(
            text=self.text,
            input_tokens=token_count(self._usage, "prompt_tokens"),
            output_tokens=token_count(self._usage, "completion_tokens"),
            usage_reported=self._usage is not None,
            model=self._model or model,
            attempts=attempts,
        )


def _text_of(content: Any) -> str:
    """Message content as text: a string, or the text parts of a list of content parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(part["text"] for part in content if isinstance(part, dict) and isinstance(part.get("text"), str))
    return ""
