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

In a tool loop (``tool_turn``, driven by core.policies.tool_loop) each turn is one exchange, in one of two modes:

- ``native``: the provider's own tool API (``_tool_exchange``: OpenAI ``tools``/``tool_calls``, Anthropic
  ``tool_use``/``tool_result``); the text is streamed as in ``run``. With an ``output_schema`` the answer
  (a reply without calls) is checked as ``run`` checks a reply, and an invalid one gets one repair request
  that offers the tools but lets the model call none; the turn's ``output`` is the value;
- ``json``: a response-format schema with one branch per tool and one for the answer (core.agents.json_tools;
  ``_complete_json``), the tools described in the system prompt; with an ``output_schema`` the answer branch
  is that schema. A reply that is neither a call nor an answer (cut by ``max_tokens``) gets one repair request,
  then ``AgentOutputError``. The answer is not streamed: ``call.on_text`` gets it once, whole.
"""

from __future__ import annotations

import functools
import json
from abc import abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from core.agents.base import BaseAgent, input_text
from core.agents.spec import AgentSpec
from core.agents.structured import OutputSchema
from core.model.calls import Activity, AgentCall, AgentReply, ChatMessage, ChatRole, OutputRepair
from core.model.errors import AgentOutputError, ConfigError
from core.model.usage import Usage
from core.settings.config import ModelInfo

if TYPE_CHECKING:  # the tools' values and modules: imported by the steps that have tools only
    from core.model.tools import ModelTurn, ToolCall, ToolDef, ToolMode

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
    """One exchange with a provider: the reply text (and in a tool loop the calls it asks for) and what the
    provider reported about it."""

    text: str
    input_tokens: int = 0
    output_tokens: int = 0
    usage_reported: bool = True
    model: str | None = None
    attempts: int = 1
    tool_calls: tuple[ToolCall, ...] = ()


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
    reply_reserve: int | None = None  # the window's tokens kept for the reply (prompt_budget + this = the window)

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
        self._turn_schemas: dict[str, OutputSchema] = {}  # json mode: the reply's schema, by the tools offered

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
        raise self._unrepaired(rechecked.error, usage, repair)

    def _unrepaired(self, error: str, usage: Usage, repair: OutputRepair) -> AgentOutputError:
        return AgentOutputError(
            f"agents.{self.spec.name} ({self.label}) replied with output that does not match its "
            f"output_schema, even after one repair request: {error}",
            hint="describe the expected JSON in the system prompt, or loosen the output_schema",
            usage=usage,
            repair=repair,
        )

    # Tools (core.policies.tool_loop). Each provider words the loop's messages and the tools for its wire
    # (``_tool_exchange``) and sends a JSON-mode turn (``_complete_json``); the modes are decided here.
    tool_mode: ToolMode = "native"

    def tool_messages(
        self, messages: Sequence[ChatMessage], tools: Sequence[ToolDef], mode: ToolMode
    ) -> list[ChatMessage]:
        if mode == "json":
            from core.agents.json_tools import json_messages

            drop = self._schema.instruction() if self._schema is not None and self._schema_in_prompt else ""
            return json_messages(messages, tools, self._answer_schema, drop=drop)
        return list(messages)

    @property
    def _answer_schema(self) -> dict[str, Any] | None:
        return self._schema.schema if self._schema is not None else None

    async def tool_turn(
        self, call: AgentCall, messages: Sequence[ChatMessage], tools: Sequence[ToolDef], mode: ToolMode
    ) -> ModelTurn:
        from core.agents.http import retry_listener

        token = retry_listener.set(call.on_retry)
        try:
            if call.on_activity is not None:
                call.on_activity(THINKING)
            if mode == "json":
                return await self._json_turn(call, list(messages), tools)
            return await self._native_turn(call, list(messages), tools)
        finally:
            retry_listener.reset(token)

    async def _native_turn(self, call: AgentCall, messages: list[ChatMessage], tools: Sequence[ToolDef]) -> ModelTurn:
        from core.model.tools import ModelTurn

        on_text = call.on_text if self._schema is None else None
        first = await self._tool_exchange(messages, tools, on_text=on_text, answer_only=False)
        usage, attempts = priced_usage(first, self._price), first.attempts
        if first.tool_calls or self._schema is None:
            streamed = on_text is not None
            return ModelTurn(first.text, first.tool_calls, usage, first.model, attempts, streamed=streamed)
        checked = self._schema.check_text(first.text)
        if checked.error is None:
            return ModelTurn(first.text, (), usage, first.model, attempts, output=checked.value)
        request = self._schema.repair_request(checked.error)
        repairing = [*messages, ChatMessage("assistant", first.text), ChatMessage("user", request)]
        second = await self._tool_exchange(repairing, tools, on_text=None, answer_only=True)
        usage, attempts = usage + priced_usage(second, self._price), attempts + second.attempts
        rechecked = self._schema.check_text(second.text)
        if rechecked.error is None:
            return ModelTurn(second.text, (), usage, second.model, attempts, output=rechecked.value)
        raise self._unrepaired(rechecked.error, usage, OutputRepair(first.text, checked.error, request, second.text))

    async def _json_turn(self, call: AgentCall, messages: list[ChatMessage], tools: Sequence[ToolDef]) -> ModelTurn:
        from core.agents.json_tools import read_reply, repair_request
        from core.model.tools import ModelTurn

        schema = self._turn_schema(tools)
        first = await self._complete_json(messages, schema.schema)
        usage, attempts, done = priced_usage(first, self._price), first.attempts, first
        read = read_reply(first.text, schema, messages)
        if read.error is not None:
            request = repair_request(read.error)
            repairing = [*messages, ChatMessage("assistant", first.text), ChatMessage("user", request)]
            done = await self._complete_json(repairing, schema.schema)
            usage, attempts = usage + priced_usage(done, self._price), attempts + done.attempts
            reread = read_reply(done.text, schema, messages)
            if reread.error is not None:
                raise AgentOutputError(
                    f"agents.{self.spec.name} ({self.label}) replied with neither a tool call nor an answer in "
                    f"JSON, even after one repair request: {reread.error}",
                    hint="a reply cut short by max_tokens is not valid JSON: raise model_settings.max_tokens, or "
                    "use the provider's own tool calls (tool_mode: native) if its server has them",
                    usage=usage,
                    repair=OutputRepair(first.text, read.error, request, done.text),
                )
            read = reread
        if read.call is not None:
            return ModelTurn("", (read.call,), usage, done.model, attempts)
        text = read.value if isinstance(read.value, str) else json.dumps(read.value, ensure_ascii=False)
        if call.on_text is not None:
            call.on_text(text)  # shown when complete: a JSON reply cannot be streamed as it comes
        output = read.value if self._schema is not None else None
        return ModelTurn(text, (), usage, done.model, attempts, streamed=call.on_text is not None, output=output)

    def _turn_schema(self, tools: Sequence[ToolDef]) -> OutputSchema:
        key = json.dumps([tool.to_dict() for tool in tools], sort_keys=True, default=str)
        schema = self._turn_schemas.get(key)
        if schema is None:
            from core.agents.json_tools import turn_schema

            owner = f"agents.{self.spec.name} (the reply of a tool turn)"
            schema = self._turn_schemas[key] = OutputSchema(turn_schema(tools, self._answer_schema), owner=owner)
        return schema

    async def _tool_exchange(
        self,
        messages: list[ChatMessage],
        tools: Sequence[ToolDef],
        *,
        on_text: Callable[[str], None] | None,
        answer_only: bool,
    ) -> Completion:
        """Send ``messages`` once offering ``tools`` with the provider's own tool API (``answer_only``: the
        model may call none) and return the reply, its calls in ``tool_calls``. Stream text deltas to
        ``on_text`` when it is set. Raise ProviderError on failure."""
        raise ConfigError(
            f"agents.{self.spec.name} ({self.label}): this provider has no tool calls of its own",
            hint="give the agent tool_mode: json",
        )

    async def _complete_json(self, messages: list[ChatMessage], schema: Mapping[str, Any]) -> Completion:
        """Send ``messages`` once asking for a reply that matches ``schema`` (as the provider can: a response
        format, else the system prompt that JSON mode words says it) and return the reply, not streamed."""
        return await self._complete(messages, on_text=None)

    @abstractmethod
    async def _complete(self, messages: list[ChatMessage], *, on_text: Callable[[str], None] | None) -> Completion:
        """Send ``messages`` once (the transport retries transient failures) and return the reply.

        Stream text deltas to ``on_text`` when it is set. Raise ProviderError on failure.
        """
