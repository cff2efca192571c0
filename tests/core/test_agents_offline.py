"""Offline agents (scripted, echo), builtins, build_agent's selection rules, and the package surface."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pytest

import core.agents
from core import Agent, AgentCall, AgentOutputError, ChatMessage, ConfigError, Settings, Usage
from core.agents import (
    AgentSpec,
    EchoAgent,
    PassthroughAgent,
    ScriptedAgent,
    StringifyAgent,
    build_agent,
)
from core.agents.offline import KEPT_CALLS
from core.store import open_store
from tests.support.cli_helpers import flujo

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = {"type": "object", "properties": {"action": {"type": "string"}}, "required": ["action"]}


def test_exports_are_pinned() -> None:
    assert set(core.agents.__all__) == {
        "AgentSpec", "AnthropicChatAgent", "Backoff", "CommandAgent", "EchoAgent", "OpenAIChatAgent",
        "PassthroughAgent", "PythonAgent", "ScriptedAgent", "StringifyAgent", "build_agent", "shareable_between_runs",
        "program_problem",  # flujo validate's program-not-found warning: what a command's start would say
    }  # fmt: skip
    for name in core.agents.__all__:
        assert getattr(core.agents, name) is not None, name
    with pytest.raises(AttributeError):
        _ = core.agents.NoSuchAgent  # type: ignore[attr-defined]


def test_importing_core_agents_loads_no_http_or_schema_library() -> None:
    code = "import sys, core.agents; print([m for m in ('httpx', 'jsonschema') if m in sys.modules])"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert result.stdout.strip() == "[]"


async def test_scripted_replies_in_order_then_the_last_repeats() -> None:
    agent = build_agent(AgentSpec(name="a", model="scripted", replies=("one", {"action": "finish"})), Settings())
    assert isinstance(agent, ScriptedAgent) and agent.is_model and agent.label == "scripted"
    outputs = [(await agent.run(AgentCall(input=i, step="s"))).output for i in range(4)]
    assert outputs == ["one", {"action": "finish"}, {"action": "finish"}, {"action": "finish"}]
    assert [call.input for call in agent.calls] == [0, 1, 2, 3]


async def test_scripted_keeps_what_each_call_sent_not_its_context_or_callbacks() -> None:
    """A long run's every call is kept: its context view and callbacks would keep every iteration's state
    alive (and every garbage collection would walk it again)."""
    agent = ScriptedAgent(["one"])
    history = (ChatMessage("user", "hi"),)
    call = AgentCall("x", "s", history, {"steps": {}}, on_text=lambda text: None, run_id="r", path="s")
    await agent.run(call)
    [kept] = agent.calls
    assert (kept.input, kept.step, kept.history, kept.run_id, kept.path) == ("x", "s", history, "r", "s")
    assert kept.context == {} and kept.on_text is None and kept.begin_attempt is None and kept.on_retry is None


async def test_scripted_usage_is_zero_tokens_and_streams_in_chunks() -> None:
    agent = ScriptedAgent(["a reply long enough to split"])
    deltas: list[str] = []
    reply = await agent.run(AgentCall(input="hi", step="s", on_text=deltas.append))
    assert len(deltas) > 1 and "".join(deltas) == "a reply long enough to split"
    assert (reply.usage.total_tokens, reply.usage.requests, reply.usage.cost_usd) == (0, 1, 0.0)


def test_scripted_prompt_is_what_a_model_would_be_sent() -> None:
    agent = ScriptedAgent(["x"], system_prompt="Be kind.")
    call = AgentCall(input={"q": 1}, step="s", history=(ChatMessage("user", "hi"),))
    assert agent.prompt(call) == [
        ChatMessage("system", "Be kind."),
        ChatMessage("user", "hi"),
        ChatMessage("user", '{"q": 1}'),
    ]


EXAMPLES_BLUEPRINT = """\
version: "0.1"
agents:
  helper:
    model: scripted
    system_prompt: Be brief.
    examples:
      - {user: "Hi!", assistant: "Hello!"}
    replies: ["Paris."]
steps:
  - {kind: step, name: answer, uses: agents.helper}
"""


def test_an_agents_examples_from_a_blueprint_are_recorded_as_the_turns_it_was_sent(state_db: Path) -> None:
    (state_db.parent.parent / "bp.yaml").write_text(EXAMPLES_BLUEPRINT, encoding="utf-8")
    code, out, err = flujo(["run", "bp.yaml", "--json", "--input", "Capital of France?"])
    assert code == 0, err

    async def sent() -> list[tuple[str, str]]:
        async with await open_store(str(state_db)) as store:
            events = await store.events(json.loads(out)["run_id"])
        prompt = next(e.payload for e in events if e.kind == "agent.prompt")
        return [(m["role"], m["content"]) for m in prompt["messages"]]

    assert asyncio.run(sent()) == [
        ("system", "Be brief."),
        ("user", "Hi!"),
        ("assistant", "Hello!"),
        ("user", "Capital of France?"),
    ]


async def test_scripted_output_schema_uses_the_next_reply_as_repair() -> None:
    agent = ScriptedAgent(['{"nope": 1}', '{"action": "ask"}'], output_schema=SCHEMA)
    reply = await agent.run(AgentCall(input="x", step="s"))
    assert reply.output == {"action": "ask"} and reply.attempts == 2
    assert reply.repair is not None
    assert (reply.repair.first_reply, reply.repair.second_reply) == ('{"nope": 1}', '{"action": "ask"}')
    assert "'action' is a required property" in reply.repair.error
    assert reply.repair.request.startswith("Your previous reply did not match the required JSON Schema")


async def test_scripted_output_schema_failure_is_an_agent_output_error() -> None:
    agent = ScriptedAgent(["not json", {"action": 1}], name="clarifier", output_schema=SCHEMA)
    with pytest.raises(AgentOutputError, match=r"agents\.clarifier \(scripted\)") as caught:
        await agent.run(AgentCall(input="x", step="s"))
    assert caught.value.usage == Usage(requests=2, cost_usd=0.0)
    assert caught.value.repair is not None
    assert (caught.value.repair.first_reply, caught.value.repair.second_reply) == ("not json", '{"action": 1}')


async def test_scripted_plain_text_is_fine_for_a_string_schema() -> None:
    agent = ScriptedAgent(["just text"], output_schema={"type": "string"})
    assert (await agent.run(AgentCall(input="x", step="s"))).output == "just text"


def test_scripted_without_replies_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match=r"agents\.bot uses model: scripted but has no replies"):
        build_agent(AgentSpec(name="bot", model="scripted"), Settings())


async def test_echo_returns_its_input() -> None:
    agent = build_agent(AgentSpec(name="e", model="echo"), Settings())
    assert isinstance(agent, EchoAgent) and agent.label == "echo"
    deltas: list[str] = []
    reply = await agent.run(AgentCall(input={"a": [1, 2]}, step="s", on_text=deltas.append))
    assert reply.output == {"a": [1, 2]} and "".join(deltas) == '{"a": [1, 2]}'


async def test_builtins() -> None:
    passthrough = build_agent(AgentSpec(name="p", builtin="flujo.builtins.passthrough"), Settings())
    stringify = build_agent(AgentSpec(name="s", builtin="flujo.builtins.stringify"), Settings())
    assert isinstance(passthrough, PassthroughAgent) and isinstance(stringify, StringifyAgent)
    assert not passthrough.is_model and passthrough.label == "flujo.builtins.passthrough"
    value = {"n": 1, "s": "é"}
    assert (await passthrough.run(AgentCall(input=value, step="s"))).output is value
    assert (await stringify.run(AgentCall(input=value, step="s"))).output == '{"n": 1, "s": "é"}'
    assert (await stringify.run(AgentCall(input="text", step="s"))).output == "text"
    assert stringify.prompt(AgentCall(input=[1], step="s")) == [ChatMessage("user", "[1]")]


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        (AgentSpec(name="x"), "must set exactly one of model, python, command or builtin"),
        (AgentSpec(name="x", model="echo", python="m:f"), r"\(it sets model and python\)"),
        (AgentSpec(name="x", builtin="flujo.builtins.nope"), "unknown builtin 'flujo.builtins.nope'"),
        (AgentSpec(name="x", builtin="flujo.builtins.ask_user"), "asks the human"),
        (AgentSpec(name="x", command=()), "must set exactly one"),
    ],
)
def test_selection_errors(spec: AgentSpec, expected: str) -> None:
    with pytest.raises(ConfigError, match=expected) as caught:
        build_agent(spec, Settings())
    assert caught.value.hint


def test_every_agent_satisfies_the_protocol() -> None:
    agents: list[Agent] = [ScriptedAgent(["x"]), EchoAgent(), PassthroughAgent(), StringifyAgent()]
    assert all(isinstance(agent.label, str) for agent in agents)


async def test_a_scripted_agent_keeps_only_its_last_calls() -> None:
    """A long run's calls, each with its history, are not all kept alive (~0.8 MB per 1,000 iterations)."""
    agent = ScriptedAgent(["ok"])
    for number in range(KEPT_CALLS + 20):
        await agent.run(AgentCall(number, "step"))
    assert len(agent.calls) == KEPT_CALLS
    assert [call.input for call in agent.calls][:2] == [20, 21] and agent.calls[-1].input == KEPT_CALLS + 19
