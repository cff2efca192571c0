"""``model: local``: an OpenAI chat agent whose endpoint is a llama.cpp server in this process.

Everything an ``openai:`` agent does holds (history as messages, streaming, ``output_schema`` as a
``json_schema`` response format with one repair, usage as the server reports it); the differences:

- the server starts on the first call (core.agents.local_server), not when the agent is built, and the
  call's ``on_activity`` hears ``loading`` with the model's name and size before the load begins;
- every request carries a ``max_tokens`` (``[local] max_tokens`` unless the agent's ``model_settings``
  set one), because llama.cpp otherwise generates until the context is full;
- each request closes its connection: after a streamed reply the server closes the pooled connection,
  and the next request on it would fail;
- cost is 0 and the context window is the model's;
- its tool mode is ``json`` (core.agents.json_tools): the server answers a request with ``tools`` in plain
  text, but enforces a response-format JSON schema.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from core.agents.chat import Completion
from core.agents.http import Endpoint
from core.agents.local_server import LocalModel
from core.agents.openai_chat import OpenAIChatAgent
from core.agents.spec import AgentSpec
from core.model.calls import Activity, AgentCall, AgentReply, ChatMessage
from core.model.tools import ModelTurn, ToolDef, ToolMode
from core.settings.config import ModelInfo

FREE = ModelInfo(input_per_mtok=0.0, output_per_mtok=0.0)


class LocalChatAgent(OpenAIChatAgent):
    """A chat agent over the local model ``model`` (its endpoint's base URL is filled in on first use)."""

    tool_mode: ToolMode = "json"

    def __init__(self, spec: AgentSpec, endpoint: Endpoint, local: LocalModel, *, prompt_budget: int | None) -> None:
        super().__init__(
            spec, endpoint, model=local.label, price=FREE, prompt_budget=prompt_budget, structured_output="json_schema"
        )
        self.local = local
        self._started = False

    @property
    def reply_cap(self) -> int:
        return super().reply_cap or self.local.settings.max_tokens

    def estimate_cost_usd(self, prompt_tokens: int) -> float:
        return 0.0

    async def _run(self, call: AgentCall) -> AgentReply:
        await self._start(call.on_activity)  # the load first: "thinking" is the time after it
        return await super()._run(call)

    async def tool_turn(
        self, call: AgentCall, messages: Sequence[ChatMessage], tools: Sequence[ToolDef], mode: ToolMode
    ) -> ModelTurn:
        await self._start(call.on_activity)
        return await super().tool_turn(call, messages, tools, mode)

    async def _start(self, on_activity: Callable[[Activity], None] | None) -> None:
        """Start this model's server (or find it started) and point the endpoint at it. The person hears of a
        load (it takes seconds, more on a busy machine) before it begins: it holds the GIL while it lasts."""
        if self._started:
            return
        if on_activity is not None and not self.local.loaded:
            on_activity(Activity("loading", self.local.shown))
        base_url = await asyncio.to_thread(self.local.base_url)
        self.endpoint = replace(self.endpoint, base_url=base_url)
        self._started = True

    async def _send(self, body: dict[str, Any], on_text: Callable[[str], None] | None) -> Completion:
        await self._start(None)
        done = await super()._send(body, on_text)
        return replace(done, model=self.model)  # the server reports the file's full path

    def _body(self, messages: list[ChatMessage]) -> dict[str, Any]:
        body = super()._body(messages)
        body.setdefault("max_tokens", self.local.settings.max_tokens)
        return body
