"""Small agents and builders for engine tests (no YAML, no network)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from core.ports import AgentCall, AgentReply, ChatMessage
from core.usage import Usage


class FuncAgent:
    """An agent whose output is ``fn(input)``; counts its calls and may charge tokens."""

    def __init__(self, fn: Callable[[Any], Any], *, tokens: int = 0, label: str = "func") -> None:
        self.fn = fn
        self.calls: list[Any] = []
        self.tokens = tokens
        self.replays = 0
        self._label = label

    @property
    def label(self) -> str:
        return self._label

    @property
    def is_model(self) -> bool:
        return False

    @property
    def provider_served(self) -> bool:
        return False

    @property
    def takes_history(self) -> bool:
        return True

    @property
    def prompt_budget(self) -> int | None:
        return None

    @property
    def model_name(self) -> str | None:
        return None

    @property
    def reply_cap(self) -> int | None:
        return None

    def estimate_cost_usd(self, prompt_tokens: int) -> float | None:
        return 0.0

    def prompt(self, call: AgentCall) -> list[ChatMessage]:
        return [ChatMessage("user", str(call.input))]

    def replayed(self) -> None:
        self.replays += 1

    async def run(self, call: AgentCall) -> AgentReply:
        self.calls.append(call.input)
        return AgentReply(output=self.fn(call.input), usage=Usage(input_tokens=self.tokens, requests=1))


def replies(*values: Any) -> FuncAgent:
    """An agent replying ``values`` in order, the last repeating."""
    queue = list(values)

    def next_reply(_: Any) -> Any:
        return queue.pop(0) if len(queue) > 1 else queue[0]

    return FuncAgent(next_reply)
