"""The Anthropic Messages API agent over real HTTP, against the fake server on 127.0.0.1."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pytest

from blueprints import load_pipeline
from core import AgentOutputError, ConfigError, Engine, ProviderError, ReplyCutOff
from core.agents import AgentSpec, AnthropicChatAgent, Backoff, build_agent
from core.agents.anthropic_chat import LEADING_USER_TURN
from core.model.calls import AgentCall, ChatMessage, Retry
from core.settings.config import ProviderSettings, Settings
from core.store import MemoryStore
from core.testing import ScriptedHuman
from tests.support.fakes.openai_server import FAKE_API_KEY, Cut, FakeLLM

FAST = Backoff(base_delay=0.001, max_delay=0.05)
MODEL = "anthropic:claude-3-5-haiku-latest"
SCHEMA = {"type": "object", "properties": {"action": {"enum": ["ask", "finish"]}}, "required": ["action"]}


def make(fake: FakeLLM, settings: Settings | None = None, **spec: Any) -> Any:
    spec.setdefault("model", MODEL)
    return build_agent(AgentSpec(name="critic", **spec), settings or fake.settings(), backoff=FAST)


async def test_request_shape_system_history_and_headers(fake_llm: FakeLLM) -> None:
    fake_llm.reply("Looks good.", usage=(40, 3))
    agent = make(fake_llm, system_prompt="You review plans.", model_settings={"temperature": 0})
    history = (ChatMessage("user", "Plan A"), ChatMessage("assistant", "Too vague."))
    call = AgentCall(input="Plan B", step="review", history=history)

    reply = await agent.run(call)

    assert isinstance(agent, AnthropicChatAgent) and agent.label == MODEL
    request = fake_llm.last
    assert request.path == "/v1/messages"
    assert request.headers["x-api-key"] == FAKE_API_KEY
    assert request.headers["anthropic-version"] == "2023-06-01"
    assert "authorization" not in request.headers
    assert request.body["model"] == "claude-3-5-haiku-latest"
    assert request.body["system"] == "You review plans."
    assert request.body["max_tokens"] == 1024 and request.body["temperature"] == 0
    assert request.body["messages"] == [
        {"role": "user", "content": "Plan A"},
        {"role": "assistant", "content": "Too vague."},
        {"role": "user", "content": "Plan B"},
    ]
    assert agent.prompt(call)[0].to_dict() == {"role": "system", "content": "You review plans."}
    assert reply.output == "Looks good."
    assert (reply.usage.input_tokens, reply.usage.output_tokens) == (40, 3)
    assert reply.usage.cost_usd == pytest.approx((40 * 0.80 + 3 * 4.0) / 1e6)


async def test_max_tokens_from_model_settings_and_base_url_ending_in_v1(fake_llm: FakeLLM) -> None:
    agent = make(fake_llm, base_url=fake_llm.openai_url, model_settings={"max_tokens": 99})
    await agent.run(AgentCall(input="hi", step="s"))
    assert fake_llm.last.path == "/v1/messages" and fake_llm.last.body["max_tokens"] == 99
    assert "system" not in fake_llm.last.body


async def test_streaming_deltas_and_usage(fake_llm: FakeLLM) -> None:
    fake_llm.reply("Fine by me", usage=(12, 7), chunks=["Fine", " by", " me"])
    deltas: list[str] = []
    reply = await make(fake_llm).run(AgentCall(input="ok?", step="s", on_text=deltas.append))
    assert deltas == ["Fine", " by", " me"]
    assert fake_llm.last.body["stream"] is True
    assert reply.output == "Fine by me"
    assert (reply.usage.input_tokens, reply.usage.output_tokens) == (12, 7)


async def test_a_stream_without_message_stop_is_a_failed_attempt_and_the_retry_streams_anew(fake_llm: FakeLLM) -> None:
    fake_llm.reply("Fine by me", chunks=["Fine", " by", " me"], end_marker=False)
    fake_llm.reply("Fine by me", chunks=["Fine", " by", " me"])
    deltas: list[str] = []
    heard: list[Retry] = []
    call = AgentCall(input="ok?", step="s", on_text=deltas.append, on_retry=heard.append)
    reply = await make(fake_llm, max_retries=1).run(call)
    assert reply.output == "Fine by me" and reply.attempts == 2
    assert deltas == ["Fine", " by", " me", "Fine", " by", " me"]
    assert [(r.attempt, r.attempts, r.cut, r.reason) for r in heard] == [
        (2, 2, "Fine by me", "the stream ended before its end marker")
    ]


@pytest.mark.parametrize("cut", ["end", "broken"])
async def test_a_stream_cut_mid_reply_at_every_attempt_is_reply_cut_off(fake_llm: FakeLLM, cut: Cut) -> None:
    # message_start, content_block_start, ping and the first delta; then the connection closes or breaks.
    for _ in range(2):
        fake_llm.reply("Fine by me", chunks=["Fine", " by", " me"], cut_after=4, cut=cut)
    with pytest.raises(ReplyCutOff) as caught:
        await make(fake_llm, max_retries=1).run(AgentCall(input="ok?", step="s", on_text=lambda text: None))
    assert (caught.value.received, caught.value.attempts) == ("Fine", 2)
    assert caught.value.message.startswith(f"agents.critic ({MODEL}): the reply from {fake_llm.anthropic_url} was cut")
    assert len(fake_llm.requests) == 2


async def test_structured_output_is_stated_in_system_and_repaired_once(fake_llm: FakeLLM) -> None:
    fake_llm.reply({"action": "maybe"}).reply({"action": "finish"})
    agent = make(fake_llm, system_prompt="Decide.", output_schema=SCHEMA)
    reply = await agent.run(AgentCall(input="done?", step="s"))
    assert reply.output == {"action": "finish"} and reply.attempts == 2
    first, second = fake_llm.bodies
    assert first["system"].startswith("Decide.\n\n") and '"enum": ["ask", "finish"]' in first["system"]
    assert second["messages"][-2] == {"role": "assistant", "content": '{"action": "maybe"}'}
    assert "'maybe' is not one of" in second["messages"][-1]["content"]


async def test_structured_output_that_stays_invalid(fake_llm: FakeLLM) -> None:
    fake_llm.reply("no").reply("still no")
    with pytest.raises(AgentOutputError, match="even after one repair request"):
        await make(fake_llm, output_schema=SCHEMA).run(AgentCall(input="?", step="s"))


async def test_overloaded_is_retried(fake_llm: FakeLLM) -> None:
    fake_llm.fail(529, message="Overloaded").fail(429, retry_after=0).reply("ok")
    reply = await make(fake_llm).run(AgentCall(input="hi", step="s"))
    assert reply.output == "ok" and reply.attempts == 3


async def test_401_has_an_anthropic_key_hint(fake_llm: FakeLLM) -> None:
    fake_llm.fail(401, message="invalid x-api-key")
    with pytest.raises(ProviderError, match="invalid x-api-key") as caught:
        await make(fake_llm).run(AgentCall(input="hi", step="s"))
    assert caught.value.status == 401
    assert caught.value.hint is not None and "ANTHROPIC_API_KEY" in caught.value.hint
    assert len(fake_llm.requests) == 1


async def test_missing_anthropic_key_is_a_config_error(fake_llm: FakeLLM) -> None:
    settings = Settings(anthropic=ProviderSettings(base_url=fake_llm.anthropic_url))
    with pytest.raises(ConfigError) as caught:
        build_agent(AgentSpec(name="critic", model=MODEL), settings)
    assert caught.value.message == f"agents.critic uses {MODEL} but ANTHROPIC_API_KEY is not set"
    assert caught.value.hint == "export ANTHROPIC_API_KEY=..., or use model: scripted for an offline run"
    deferred = build_agent(AgentSpec(name="critic", model=MODEL), settings, defer_missing_key=True)
    with pytest.raises(ConfigError) as caught:  # built for a replay: the first real call needs the key
        await deferred.run(AgentCall(input="hi", step="s"))
    assert caught.value.message == f"agents.critic uses {MODEL} but ANTHROPIC_API_KEY is not set"
    assert fake_llm.requests == []


def roles_alternate_from_user(messages: list[dict[str, Any]]) -> bool:
    roles = [m["role"] for m in messages]
    return roles[:1] == ["user"] and all(a != b for a, b in itertools.pairwise(roles))


async def test_messages_start_with_a_user_turn_and_alternate(fake_llm: FakeLLM) -> None:
    fake_llm.reply("ok")
    agent = make(fake_llm, system_prompt="Help.")
    # A bounded history can start with an assistant turn and hold two turns of one role in a row.
    history = (
        ChatMessage("assistant", "Summary of the earlier conversation: a trip."),
        ChatMessage("assistant", "Who is it for?"),
        ChatMessage("user", "My family"),
    )
    call = AgentCall(input="June too", step="s", history=(*history, ChatMessage("user", "In June")))
    await agent.run(call)

    body = fake_llm.last.body
    assert body["messages"] == [
        {"role": "user", "content": LEADING_USER_TURN},
        {"role": "assistant", "content": "Summary of the earlier conversation: a trip.\n\nWho is it for?"},
        {"role": "user", "content": "My family\n\nIn June\n\nJune too"},
    ]
    assert body["system"] == "Help."
    # The trace (agent.prompt) shows exactly what is sent.
    assert [m.to_dict() for m in agent.prompt(call)] == [{"role": "system", "content": "Help."}, *body["messages"]]


CONVERSATION = """\
version: "0.1"
agents:
  bot: {model: "anthropic:claude-3-5-haiku-latest", max_retries: 0}
steps:
  - kind: loop
    name: chat
    loop:
      conversation: true
      max_loops: 3
      history_management: {strategy: truncate_tokens, max_tokens: 12}
      body:
        - {kind: step, name: talk, uses: agents.bot}
        - {kind: hitl, name: answer, message: "{{ steps.talk.output }}"}
"""


async def test_a_truncated_conversation_is_sent_as_anthropic_requires(fake_llm: FakeLLM, tmp_path: Path) -> None:
    for question in ("Who is it for?", "By when should it be done?", "Done."):
        fake_llm.reply(question)
    path = tmp_path / "flow.yaml"
    path.write_text(CONVERSATION, encoding="utf-8")
    store = MemoryStore()
    outcome = await Engine(store=store, human=ScriptedHuman(["My family", "June", "Thanks"])).run(
        load_pipeline(path, fake_llm.settings()), "Plan a trip"
    )
    assert outcome.status == "completed", outcome.error
    bodies = [request.body["messages"] for request in fake_llm.requests]
    assert all(roles_alternate_from_user(messages) for messages in bodies)
    # The third call keeps only the question its answer needs: the history starts with an assistant turn.
    assert bodies[2] == [
        {"role": "user", "content": LEADING_USER_TURN},
        {"role": "assistant", "content": "By when should it be done?"},
        {"role": "user", "content": "June"},
    ]
    sent = [e.payload["messages"] for e in await store.events(outcome.run_id) if e.kind == "agent.prompt"]
    assert sent == bodies
