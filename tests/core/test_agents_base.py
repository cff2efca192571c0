"""``BaseAgent`` holds the defaults of the ``Agent`` protocol; the protocol stays the contract."""

from __future__ import annotations

from typing import Any

import pytest

from core import (
    Agent,
    AgentCall,
    AgentReply,
    AgentStep,
    ChatMessage,
    Conversation,
    Engine,
    LoopStep,
    ModelInfo,
    Pipeline,
)
from core.agents import (
    AgentSpec,
    AnthropicChatAgent,
    CommandAgent,
    EchoAgent,
    OpenAIChatAgent,
    PassthroughAgent,
    PythonAgent,
    ScriptedAgent,
    StringifyAgent,
)
from core.agents.base import BaseAgent
from core.agents.http import Endpoint
from core.store import MemoryStore

ENDPOINT = Endpoint(label="test", base_url="http://127.0.0.1:9", timeout=1.0, max_retries=0)
PRICE = ModelInfo(input_per_mtok=1.0, output_per_mtok=2.0)


def _members(agent: Agent) -> tuple[Any, ...]:
    return (
        agent.label, agent.is_model, agent.provider_served, agent.takes_history, agent.prompt_budget,
        agent.model_name, agent.reply_cap, agent.estimate_cost_usd(1_000_000),
    )  # fmt: skip


def test_each_shipped_agent_answers_the_protocol_as_before() -> None:
    """What each agent class says of itself, stated only where it differs from ``BaseAgent``'s defaults."""
    spec = AgentSpec(name="a", model="openai:gpt-4o-mini", model_settings={"max_tokens": 10})
    cases: list[tuple[Agent, tuple[Any, ...]]] = [
        (ScriptedAgent(["x"], prompt_budget=5), ("scripted", True, False, True, 5, None, None, 0.0)),
        (EchoAgent(), ("echo", True, False, True, None, None, None, 0.0)),
        (PythonAgent(len), ("python:builtins:len", False, False, True, None, None, None, 0.0)),
        (CommandAgent(["wc", "-w"]), ("command:wc", False, False, True, None, None, None, 0.0)),
        (PassthroughAgent(), ("flujo.builtins.passthrough", False, False, False, None, None, None, 0.0)),
        (StringifyAgent(), ("flujo.builtins.stringify", False, False, False, None, None, None, 0.0)),
        (
            OpenAIChatAgent(spec, ENDPOINT, model="gpt-4o-mini", price=PRICE, prompt_budget=7),
            ("openai:gpt-4o-mini", True, True, True, 7, "openai:gpt-4o-mini", 10, 1.00002),
        ),
        (
            AnthropicChatAgent(AgentSpec(name="b", model="anthropic:claude"), ENDPOINT, model="claude"),
            ("anthropic:claude", True, True, True, None, "anthropic:claude", None, None),
        ),
    ]
    for agent, expected in cases:
        assert _members(agent) == expected, agent
        assert agent.replayed() is None or isinstance(agent, ScriptedAgent)
    call = AgentCall(input={"a": "é"}, step="s")
    assert PassthroughAgent().prompt(call) == [ChatMessage("user", '{"a": "é"}')]  # the default prompt


def test_a_subclass_states_its_label_and_run_and_gets_the_rest() -> None:
    class Half(BaseAgent):
        label = "half"

    with pytest.raises(TypeError, match="run"):
        Half()  # type: ignore[abstract]

    class Quiet(BaseAgent):
        label = "quiet"
        takes_history = False

        async def run(self, call: AgentCall) -> AgentReply:
            return AgentReply(None)

    assert _members(Quiet()) == ("quiet", False, False, False, None, None, None, 0.0)


class Parrot:
    """An agent of a user's own that implements the ``Agent`` protocol without ``BaseAgent``: a model
    (so a conversation sends it the history as chat messages) that repeats how many messages it got."""

    def __init__(self) -> None:
        self.heard: list[int] = []

    @property
    def label(self) -> str:
        return "parrot"

    @property
    def is_model(self) -> bool:
        return True

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
        return [*call.history, ChatMessage("user", str(call.input))]

    async def run(self, call: AgentCall) -> AgentReply:
        self.heard.append(len(self.prompt(call)))
        return AgentReply(f"heard {len(self.heard)}")

    def replayed(self) -> None:
        return None


async def test_an_agent_that_implements_the_protocol_without_the_base_runs_in_a_conversation() -> None:
    parrot = Parrot()
    assert not isinstance(parrot, BaseAgent)
    loop = LoopStep(name="chat", body=(AgentStep(name="p", agent=parrot),), max_loops=3, conversation=Conversation())
    outcome = await Engine(store=MemoryStore()).run(Pipeline(steps=(loop,)), "hello")
    assert outcome.status == "completed" and outcome.output == "heard 3"
    assert parrot.heard[0] < parrot.heard[-1]  # later iterations were sent the conversation so far
