"""``Speaker``: an agent speaking in one round of an ensemble, sent what ``view`` made for it. A module of its own
(no ensemble state, no history bounds): the agent step's policy asks whether its agent is one, and a run without
an ensemble imports nothing else of the ensemble for that."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from core.model.calls import AgentCall, AgentReply, ChatMessage
from core.ports import Agent


@dataclass(frozen=True)
class Speaker:
    """An agent speaking in one round: it sends ``message`` with ``history``, whatever the call says.

    The step policy that calls it records the call's ``input`` (a small reference to the round), so the
    stored turn never copies the history; the ``agent.prompt`` trace event holds what was really sent."""

    inner: Agent
    message: Any
    history: tuple[ChatMessage, ...] = ()
    why: dict[str, Any] | None = None  # where its messages came from (``ensemble_why``)
    # False when other agents speak in the same round: replies are then shown whole, as they end, so
    # two streams never interleave within a line.
    streams: bool = True

    @property
    def label(self) -> str:
        return self.inner.label

    @property
    def is_model(self) -> bool:
        return self.inner.is_model

    @property
    def provider_served(self) -> bool:
        return self.inner.provider_served

    @property
    def takes_history(self) -> bool:
        return self.inner.takes_history

    @property
    def prompt_budget(self) -> int | None:
        return self.inner.prompt_budget

    @property
    def model_name(self) -> str | None:
        return self.inner.model_name

    @property
    def reply_cap(self) -> int | None:
        return self.inner.reply_cap

    def estimate_cost_usd(self, prompt_tokens: int) -> float | None:
        return self.inner.estimate_cost_usd(prompt_tokens)

    def _call(self, call: AgentCall) -> AgentCall:
        on_text = call.on_text if self.streams else None
        return replace(call, input=self.message, history=self.history, on_text=on_text)

    def prompt(self, call: AgentCall) -> list[ChatMessage]:
        return self.inner.prompt(self._call(call))

    async def run(self, call: AgentCall) -> AgentReply:
        return await self.inner.run(self._call(call))

    def replayed(self) -> None:
        self.inner.replayed()
