"""Offline model doubles: ``model: scripted`` and ``model: echo``, for demos, tests and dry runs.

They stand in for a chat model, so they behave like one where it matters: ``is_model`` is True, their
prompt is the system prompt, the history and the input (exactly what a real model would be sent), they
stream their reply text to ``call.on_text`` in a few chunks, and they report one request with zero
tokens and zero cost. A scripted agent with an ``output_schema`` checks its replies like a real model
agent does, using the next reply as the repair answer, so validation paths can be tested offline.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from core.agents.base import BaseAgent, input_text
from core.agents.chat import chat_prompt
from core.agents.structured import Checked, OutputSchema
from core.model.calls import AgentCall, AgentReply, ChatMessage, OutputRepair
from core.model.errors import AgentOutputError, ConfigError
from core.model.usage import Usage

if TYPE_CHECKING:  # the tools' values: imported by the steps that have tools only
    from core.model.tools import ModelTurn, ToolCall, ToolDef, ToolMode

OFFLINE_USAGE = Usage(requests=1, cost_usd=0.0)
KEPT_CALLS = 100  # ScriptedAgent.calls


class _OfflineModel(BaseAgent):
    """What the two doubles share: they are models that no provider serves, and their prompt is what a chat
    model would be sent (the system prompt, the worked examples, the history, the input)."""

    is_model = True
    prompt_budget: int | None = None
    reply_reserve: int | None = None  # the window's tokens kept for the reply (prompt_budget + this = the window)

    def __init__(
        self, *, system_prompt: str | None, examples: Sequence[tuple[str, str]], prompt_budget: int | None
    ) -> None:
        self.system_prompt = system_prompt
        self.examples = tuple(examples)
        self.prompt_budget = prompt_budget

    def prompt(self, call: AgentCall) -> list[ChatMessage]:
        return chat_prompt(self.system_prompt, call.history, call.input, examples=self.examples)


class ScriptedAgent(_OfflineModel):
    """Returns ``replies`` in order, the last one repeating; a reply may be text or any JSON-like value.

    ``calls`` keeps the last ``KEPT_CALLS`` calls received, for assertions: what each was sent (input, step,
    history) and where it ran (run id, path), not its context view nor its callbacks, which would keep the
    state of every iteration of a long run alive (and every garbage collection would go through it again).
    Only the last ones: a 1,000-iteration run's calls, each with its history, took ~0.8 MB.
    """

    label = "scripted"
    keeps_run_state = True  # its next reply: each run starts from the first

    def __init__(
        self,
        replies: Sequence[Any],
        *,
        name: str = "scripted",
        system_prompt: str | None = None,
        examples: Sequence[tuple[str, str]] = (),
        output_schema: Mapping[str, Any] | None = None,
        prompt_budget: int | None = None,
    ) -> None:
        super().__init__(system_prompt=system_prompt, examples=examples, prompt_budget=prompt_budget)
        if not replies:
            raise ConfigError(
                f"agents.{name} uses model: scripted but has no replies",
                hint='add replies: ["first answer", {"action": "finish"}]',
            )
        self.name = name
        self.replies = list(replies)
        self.calls: deque[AgentCall] = deque(maxlen=KEPT_CALLS)
        self._next = 0
        self._schema = OutputSchema(output_schema, owner=f"agents.{name}") if output_schema is not None else None

    async def run(self, call: AgentCall) -> AgentReply:
        self.calls.append(AgentCall(call.input, call.step, call.history, run_id=call.run_id, path=call.path))
        reply = self._take()
        if self._schema is None:
            if call.on_text is not None:
                stream_in_chunks(input_text(reply), call.on_text)
            return AgentReply(reply, OFFLINE_USAGE, "scripted")
        checked = self._check(self._schema, reply)
        if checked.error is None:
            return AgentReply(checked.value, OFFLINE_USAGE, "scripted")
        second = self._take()
        repaired = self._check(self._schema, second)
        usage = OFFLINE_USAGE + OFFLINE_USAGE
        repair = OutputRepair(
            input_text(reply), checked.error, self._schema.repair_request(checked.error), input_text(second)
        )
        if repaired.error is None:
            return AgentReply(repaired.value, usage, "scripted", attempts=2, repair=repair)
        raise AgentOutputError(
            f"agents.{self.name} (scripted) replied with output that does not match its output_schema, "
            f"even after one repair request: {repaired.error}",
            hint="fix the scripted replies so they match the output_schema",
            usage=usage,
            repair=repair,
        )

    def replayed(self) -> None:
        self._next += 1

    # A tool loop (core.policies.tool_loop): a reply may ask for tools, as ``{"tool": NAME, "arguments": {...}}``
    # or ``{"tool_calls": [{"name": NAME, "arguments": {...}}, ...], "text": "..."}``; any other reply answers
    # (a turn written that way asking for no call, ``{"tool_calls": [], "text": "..."}``, with its text).
    tool_mode: ToolMode = "native"

    def tool_messages(
        self, messages: Sequence[ChatMessage], tools: Sequence[ToolDef], mode: ToolMode
    ) -> list[ChatMessage]:
        return list(messages)

    async def tool_turn(
        self, call: AgentCall, messages: Sequence[ChatMessage], tools: Sequence[ToolDef], mode: ToolMode
    ) -> ModelTurn:
        from core.model.tools import ModelTurn

        self.calls.append(AgentCall(call.input, call.step, call.history, run_id=call.run_id, path=call.path))
        reply = self._take()
        asked = scripted_tool_calls(reply)
        if asked:
            text = reply.get("text", "") if isinstance(reply, Mapping) else ""
            return ModelTurn(str(text or ""), asked, OFFLINE_USAGE, "scripted")
        if _is_turn(reply):  # {tool_calls: [], text: ...}: a turn that asks for no call answers with its text
            reply = str(reply.get("text") or "")
        text = input_text(reply)
        if self._schema is not None:  # the answer is data, checked as run() checks it (no repair turn here)
            checked = self._check(self._schema, reply)
            if checked.error is not None:
                raise AgentOutputError(
                    f"agents.{self.name} (scripted) answered with output that does not match its output_schema: "
                    f"{checked.error}",
                    hint="fix the scripted replies so they match the output_schema",
                    usage=OFFLINE_USAGE,
                )
            return ModelTurn(text, (), OFFLINE_USAGE, "scripted", output=checked.value)
        if call.on_text is not None:
            stream_in_chunks(text, call.on_text)
        return ModelTurn(text, (), OFFLINE_USAGE, "scripted", streamed=call.on_text is not None)

    def _take(self) -> Any:
        reply = self.replies[min(self._next, len(self.replies) - 1)]
        self._next += 1
        return reply

    @staticmethod
    def _check(schema: OutputSchema, reply: Any) -> Checked:
        if not isinstance(reply, str):
            return schema.check_value(reply)
        parsed = schema.check_text(reply)
        if parsed.ok:
            return parsed
        # A plain-text reply is also fine when the schema accepts the text itself ({type: string}).
        as_text = schema.check_value(reply)
        return as_text if as_text.ok else parsed


class EchoAgent(_OfflineModel):
    """Returns its input unchanged."""

    label = "echo"

    def __init__(
        self,
        *,
        system_prompt: str | None = None,
        examples: Sequence[tuple[str, str]] = (),
        prompt_budget: int | None = None,
    ) -> None:
        super().__init__(system_prompt=system_prompt, examples=examples, prompt_budget=prompt_budget)

    async def run(self, call: AgentCall) -> AgentReply:
        if call.on_text is not None:
            stream_in_chunks(input_text(call.input), call.on_text)
        return AgentReply(call.input, OFFLINE_USAGE, "echo")


def scripted_tool_calls(reply: Any) -> tuple[ToolCall, ...]:
    """The tool calls a scripted reply asks for (none: it is an answer)."""
    if not isinstance(reply, Mapping):
        return ()
    from core.model.tools import ToolCall

    if isinstance(reply.get("tool"), str):
        return (ToolCall("call_1", reply["tool"], reply.get("arguments", {})),)
    listed = reply.get("tool_calls")
    if not isinstance(listed, list):
        return ()
    return tuple(
        ToolCall(f"call_{n}", str(each.get("name", each.get("tool", ""))), each.get("arguments", {}))
        for n, each in enumerate(listed, 1)
        if isinstance(each, Mapping)
    )


def _is_turn(reply: Any) -> bool:
    """Whether ``reply`` is written as a tool turn (``{"tool_calls": [...], "text": "..."}``, nothing else)."""
    return (
        isinstance(reply, Mapping)
        and isinstance(reply.get("tool_calls"), list)
        and all(isinstance(key, str) and key in ("tool_calls", "text") for key in reply)
    )


def stream_in_chunks(text: str, on_text: Callable[[str], None], *, chunks: int = 3) -> None:
    """Send ``text`` to ``on_text`` in up to ``chunks`` pieces, as a streaming model would."""
    size = max(1, -(-len(text) // chunks))
    for start in range(0, len(text), size):
        on_text(text[start : start + size])
