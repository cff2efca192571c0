"""What every chat-model agent shares: the messages it sends, structured output, usage and cost.

Provider modules (``openai_chat``, ``anthropic_chat``) subclass ``ChatModelAgent`` and implement one
method, ``_complete``: a single exchange with their API. Everything else is decided here, once:

- the prompt is the system prompt (if any), then the call's history, then the input as a user message;
- without an ``output_schema`` the reply is the model's text, streamed to ``call.on_text`` when set
  (a JSON-looking text is *not* parsed: no guessing);
- with an ``output_schema`` the reply is parsed and validated; an invalid reply gets exactly one repair
  request (described by the reply's ``repair``, for the trace), then ``AgentOutputError`` (which carries
  the usage of both exchanges and the repair);
- usage is summed over every exchange; cost comes from the price table, None when a price or the
  provider's token counts are unknown (never guessed);
- ``call.on_activity`` hears ``thinking`` as the request goes (the person sees the wait, not a bare spinner).
"""

from __future__ import annotations

import functools
from abc import abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from core.agents.base import BaseAgent, input_text
from core.agents.spec import AgentSpec
from core.agents.structured import OutputSchema
from core.model.calls import Activity, AgentCall, AgentReply, ChatMessage, ChatRole, OutputRepair
from core.model.errors import AgentOutputError, ConfigError
from core.model.tools import ModelTurn, ToolDef, ToolMode
from core.model.usage import Usage
from core.settings.config import ModelInfo

THINKING = Activity("thinking")


def chat_prompt(
    system: str | None, history: Sequence[ChatMessage], value: Any, *, examples: Sequence[tuple[str, str]] = ()
) -> list[ChatMessage]:
    """The system prompt (if any), the worked ``examples`` as (user, assistant) turns, then the history, then
    ``value`` as the user's message."""
    messages = [_fixed_message("system", system)] if system else []
    for said, replied in examples:
        messages += [_fixed_message("user", said), _fixed_message("assistant", replied)]
    messages.extend(history)
    messages.append(ChatMessage("user", input_text(value)))
    return messages


@functools.lru_cache(maxsize=256)
def _fixed_message(role: ChatRole, content: str) -> ChatMessage:
    """The message of an agent's system prompt or worked example: the same object in every prompt of the
    agent, as the history's messages are (``ConversationTurn.message``), so tracing masks it once
    (``Redactor.messages``), not once per call."""
    return ChatMessage(role, content)


def token_count(usage: Any, key: str) -> int:
    """``usage[key]`` when the provider reported it as an integer, else 0."""
    value = usage.get(key) if isinstance(usage, dict) else None
    return value if isinstance(value, int) else 0


@dataclass(frozen=True)
class Completion:
    """One exchange with a provider: the reply text and what the provider reported about it."""

    text: str
    input_tokens: int = 0
    output_tokens: int = 0
    usage_reported: bool = True
    model: str | None = None
    attempts: int = 1


def priced_usage(completion: Completion, price: ModelInfo) -> Usage:
    """The usage of one completion, with its cost when both prices and the token counts are known."""
    cost: float | None = None
    if completion.usage_reported and price.input_per_mtok is not None and price.output_per_mtok is not None:
        cost = (
            completion.input_tokens * price.input_per_mtok + completion.output_tokens * price.output_per_mtok
        ) / 1_000_000
    return Usage(
        input_tokens=completion.input_tokens,
        output_tokens=completion.output_tokens,
        requests=1,
        cost_usd=cost,
    )


class ChatModelAgent(BaseAgent):
    """Base of the LLM provider agents. ``schema_in_prompt`` adds the schema to the system prompt, for
    providers (or modes) that cannot be handed the schema itself."""

    is_model = True
    provider_served = True
    prompt_budget: int | None = None

    def __init__(
        self, spec: AgentSpec, *, price: ModelInfo, schema_in_prompt: bool, prompt_budget: int | None = None
    ) -> None:
        self.spec = spec
        self.prompt_budget = prompt_budget
        self._price = price
        self._schema_in_prompt = schema_in_prompt
        self._schema = (
            OutputSchema(spec.output_schema, owner=f"agents.{spec.name}") if spec.output_schema is not None else None
        )

    @property
    def label(self) -> str:
        return self.spec.model or self.spec.name

    @property
    def model_name(self) -> str | None:
        return self.spec.model

    @property
    def reply_cap(self) -> int | None:
        cap = self.spec.model_settings.get("max_tokens")
        return cap if isinstance(cap, int) and not isinstance(cap, bool) and cap > 0 else None

    def estimate_cost_usd(self, prompt_tokens: int) -> float | None:
        price = self._price
        if price.input_per_mtok is None:
            return None
        cost = prompt_tokens * price.input_per_mtok
        cap = self.reply_cap
        if cap is not None:
            if price.output_per_mtok is None:
                return None
            cost += cap * price.output_per_mtok
        return cost / 1_000_000

    def prompt(self, call: AgentCall) -> list[ChatMessage]:
        system = self.spec.system_prompt
        if self._schema is not None and self._schema_in_prompt:
            instruction = self._schema.instruction()
            system = f"{system}\n\n{instruction}" if system else instruction
        return chat_prompt(system, call.history, call.input, examples=self.spec.examples)

    async def run(self, call: AgentCall) -> AgentReply:
        from core.agents.http import retry_listener

        token = retry_listener.set(call.on_retry)
        try:
            return await self._run(call)
        finally:
            retry_listener.reset(token)

    async def _run(self, call: AgentCall) -> AgentReply:
        messages = self.prompt(call)
        if call.on_activity is not None:
            call.on_activity(THINKING)
        if self._schema is None:
            done = await self._complete(messages, on_text=call.on_text)
            return AgentReply(done.text, priced_usage(done, self._price), done.model, done.attempts)

        first = await self._complete(messages, on_text=None)
        usage, attempts = priced_usage(first, self._price), first.attempts
        checked = self._schema.check_text(first.text)
        if checked.error is None:
            return AgentReply(checked.value, usage, first.model, attempts)

        request = self._schema.repair_request(checked.error)
        second = await self._complete(
            [*messages, ChatMessage("assistant", first.text), ChatMessage("user", request)], on_text=None
        )
        usage, attempts = usage + priced_usage(second, self._price), attempts + second.attempts
        repair = OutputRepair(first.text, checked.error, request, second.text)
        rechecked = self._schema.check_text(second.text)
        if rechecked.error is None:
            return AgentReply(rechecked.value, usage, second.model, attempts, repair=repair)
        raise AgentOutputError(
            f"agents.{self.spec.name} ({self.label}) replied with output that does not match its "
            f"output_schema, even after one repair request: {rechecked.error}",
            hint="describe the expected JSON in the system prompt, or loosen the output_schema",
            usage=usage,
            repair=repair,
        )

    # Tools (core.policies.tool_loop). Each provider words the loop's messages and the tools for its wire.
    tool_mode: ToolMode = "native"

    def tool_messages(
        self, messages: Sequence[ChatMessage], tools: Sequence[ToolDef], mode: ToolMode
    ) -> list[ChatMessage]:
        return list(messages)

    async def tool_turn(
        self, call: AgentCall, messages: Sequence[ChatMessage], tools: Sequence[ToolDef], mode: ToolMode
    ) -> ModelTurn:
        raise ConfigError(f"agents.{self.spec.name} ({self.label}): this provider cannot use tools yet")

    @abstractmethod
    async def _complete(self, messages: list[ChatMessage], *, on_text: Callable[[str], None] | None) -> Completion:
        """Send ``messages`` once (the transport retries transient failures) and return the reply.

        Stream text deltas to ``on_text`` when it is set. Raise ProviderError on failure.
        """
