"""Tools by JSON reply (tool mode ``json``, core.agents.json_tools): an OpenAI-compatible agent told to use it,
against the fake server on 127.0.0.1 (the request carries the reply's schema as ``response_format`` and never
``tools``; a reply cut short gets one repair request), and the real local model through a whole tool loop."""

from __future__ import annotations

import importlib.util
import json
from typing import Any

import pytest

from core import AgentCall, AgentOutputError, AgentStep, ChatMessage, Engine, Pipeline, Settings
from core.agents import AgentSpec, Backoff, build_agent
from core.agents.json_tools import turn_schema
from core.agents.local_chat import LocalChatAgent
from core.model.tools import ModelTurn, ToolCall
from core.steps.kinds import ToolUse
from core.store import MemoryStore
from core.testing import RecordingReporter
from tests.support.fakes.openai_server import FakeLLM
from tests.support.tool_doubles import ADD, ADD_SCHEMA, AddTool, tool_pipeline

FAST = Backoff(base_delay=0.001, max_delay=0.05)


def make(fake: FakeLLM, **spec: Any) -> Any:
    spec.setdefault("model", "openai:gpt-4o-mini")
    return build_agent(AgentSpec(name="helper", **spec), fake.settings(), backoff=FAST)


def test_the_reply_schema_has_a_branch_per_tool_and_one_for_the_answer() -> None:
    assert turn_schema([ADD], None) == {
        "anyOf": [
            {
                "type": "object",
                "properties": {"tool": {"const": "add"}, "arguments": ADD_SCHEMA},
                "required": ["tool", "arguments"],
                "additionalProperties": False,
            },
            {
                "type": "object",
                "properties": {"answer": {"type": "string"}},
                "required": ["answer"],
                "additionalProperties": False,
            },
        ]
    }


async def test_a_json_mode_loop_sends_the_schema_never_tools_and_words_the_loop_as_text(fake_llm: FakeLLM) -> None:
    fake_llm.reply({"tool": "add", "arguments": {"a": 2, "b": 3}}, usage=(40, 12))
    fake_llm.reply({"tool": "add", "arguments": {"a": 5, "b": 4}})
    fake_llm.reply({"answer": "It is 9."}, usage=(60, 6))
    tool = AddTool()
    store = MemoryStore()
    reporter = RecordingReporter()
    agent = make(fake_llm, system_prompt="You add numbers.", model_settings={"parallel_tool_calls": False})
    outcome = await Engine(store=store, reporter=reporter).run(tool_pipeline(agent, tool, mode="json"), "2+3+4?")

    assert outcome.status == "completed", outcome.error
    assert outcome.output == "It is 9."
    assert tool.calls == [{"a": 2, "b": 3}, {"a": 5, "b": 4}]
    assert reporter.text == ["It is 9."]  # the answer, once, when complete
    for body in fake_llm.bodies:
        assert "tools" not in body and "tool_choice" not in body and "parallel_tool_calls" not in body
        assert "stream" not in body
        assert body["response_format"] == {
            "type": "json_schema",
            "json_schema": {"name": "tool_turn", "schema": turn_schema([ADD], None)},
        }
    system = fake_llm.bodies[0]["messages"][0]
    assert system["role"] == "system" and system["content"].startswith("You add numbers.\n\n")
    assert "add: Add two integers" in system["content"] and json.dumps(ADD_SCHEMA) in system["content"]
    assert fake_llm.bodies[2]["messages"][1:] == [
        {"role": "user", "content": "2+3+4?"},
        {"role": "assistant", "content": '{"tool": "add", "arguments": {"a": 2, "b": 3}}'},
        {"role": "user", "content": "Result of add: 5"},
        {"role": "assistant", "content": '{"tool": "add", "arguments": {"a": 5, "b": 4}}'},
        {"role": "user", "content": "Result of add: 9"},
    ]
    records = {record.path: record for record in await store.steps(outcome.run_id)}
    assert records["answer/tool/1"].input["id"] == "call_1" and records["answer/tool/2"].input["id"] == "call_2"
    assert records["answer"].usage.requests == 3 and records["answer"].usage.input_tokens == 40 + 10 + 60
    # The trace shows the messages exactly as sent.
    prompts = {e.path: e.payload["messages"] for e in await store.events(outcome.run_id) if e.kind == "agent.prompt"}
    assert prompts["answer/model/3"] == fake_llm.bodies[2]["messages"]


async def test_a_reply_cut_short_gets_one_repair_request(fake_llm: FakeLLM) -> None:
    fake_llm.reply('{"answer": "It is', usage=(30, 64))  # cut by max_tokens: not JSON
    fake_llm.reply({"answer": "5"}, usage=(50, 5))
    reporter = RecordingReporter()
    store = MemoryStore()
    outcome = await Engine(store=store, reporter=reporter).run(
        tool_pipeline(make(fake_llm), AddTool(), mode="json"), "2+3?"
    )

    assert outcome.status == "completed", outcome.error
    assert outcome.output == "5" and reporter.text == ["5"]
    first, repair = fake_llm.bodies
    assert repair["messages"][:-2] == first["messages"]
    assert repair["messages"][-2] == {"role": "assistant", "content": '{"answer": "It is'}
    assert repair["messages"][-1]["role"] == "user" and "not one valid JSON object" in repair["messages"][-1]["content"]
    assert "tools" not in repair and repair["response_format"] == first["response_format"]
    records = {record.path: record for record in await store.steps(outcome.run_id)}
    assert records["answer"].usage.requests == 2 and records["answer"].usage.output_tokens == 69


async def test_a_reply_still_cut_after_its_repair_fails_the_step_with_the_usage_of_every_turn(
    fake_llm: FakeLLM,
) -> None:
    fake_llm.reply({"tool": "add", "arguments": {"a": 2, "b": 3}})
    fake_llm.reply('{"tool": "add", "argu').reply("I think the answer")
    store = MemoryStore()
    outcome = await Engine(store=store).run(tool_pipeline(make(fake_llm), AddTool(), mode="json"), "2+3?")

    assert outcome.status == "failed"
    assert isinstance(outcome.error, AgentOutputError)
    assert "neither a tool call nor an answer" in outcome.error.message and len(fake_llm.requests) == 3
    records = {record.path: record for record in await store.steps(outcome.run_id)}
    assert records["answer"].status == "failed" and records["answer"].usage.requests == 3
    assert outcome.usage == records["answer"].usage


async def test_with_an_output_schema_the_answer_branch_is_that_schema(fake_llm: FakeLLM) -> None:
    schema = {"type": "object", "properties": {"total": {"type": "integer"}}, "required": ["total"]}
    fake_llm.reply({"tool": "add", "arguments": {"a": 2, "b": 3}})
    fake_llm.reply({"answer": {"total": 5}})
    agent = make(fake_llm, output_schema=schema)
    use = ToolUse(tools=(AddTool(),), mode="json", agent="helper")
    store = MemoryStore()
    outcome = await Engine(store=store).run(Pipeline(steps=(AgentStep(name="answer", agent=agent, tools=use),)), "2+3?")

    assert outcome.status == "completed", outcome.error
    assert outcome.output == {"total": 5}
    assert fake_llm.bodies[0]["response_format"]["json_schema"]["schema"] == turn_schema([ADD], schema)


async def test_an_agent_asking_for_json_object_states_the_schema_only_as_the_tools_text_says(
    fake_llm: FakeLLM,
) -> None:
    schema = {"type": "object", "properties": {"total": {"type": "integer"}}}
    settings = fake_llm.settings()
    settings.ollama.structured_output = "json_object"
    agent = build_agent(
        AgentSpec(name="helper", model="ollama:llama3", system_prompt="Add.", output_schema=schema), settings
    )
    sent = agent.tool_messages(agent.prompt(AgentCall(input="2+3?", step="s")), [ADD], "json")
    fake_llm.reply({"answer": {"total": 5}})

    turn = await agent.tool_turn(AgentCall(input="2+3?", step="s"), sent, [ADD], "json")

    assert turn.output == {"total": 5} and turn.text == '{"total": 5}'
    body = fake_llm.last.body
    assert body["response_format"] == {"type": "json_object"}
    system = body["messages"][0]["content"]
    assert system.startswith("Add.\n\nYou can use tools.")
    assert "Reply with a single JSON value" not in system  # the agent's own request for JSON gave way


def test_an_answer_that_is_data_survives_the_journal() -> None:
    """A resumed run that replays the answering turn (``P/model/K``) returns the same value, not its text."""
    turn = ModelTurn('{"total": 5}', (), model="m", output={"total": 5})
    again = ModelTurn.from_dict(json.loads(json.dumps(turn.to_dict())))
    assert again.answer == {"total": 5} and again.text == '{"total": 5}'
    assert ModelTurn.from_dict(ModelTurn("It is 5.").to_dict()).answer == "It is 5."


def test_the_local_model_takes_its_tool_turns_in_json() -> None:
    assert LocalChatAgent.tool_mode == "json"


def test_json_mode_words_calls_and_results_as_the_model_sees_them(fake_llm: FakeLLM) -> None:
    agent = make(fake_llm)
    messages = [
        ChatMessage("user", "2+3?"),
        ChatMessage("assistant", "", tool_calls=(ToolCall("call_1", "add", {"a": 2, "b": 3}),)),
        ChatMessage("tool", "5", tool_call_id="call_1", name="add"),
    ]
    sent = agent.tool_messages(messages, [ADD], "json")
    assert [(m.role, m.content) for m in sent[1:]] == [
        ("user", "2+3?"),
        ("assistant", '{"tool": "add", "arguments": {"a": 2, "b": 3}}'),
        ("user", "Result of add: 5"),
    ]
    assert sent[0].role == "system" and sent[0].content.startswith("You can use tools.")
    assert not any(m.tool_calls or m.tool_call_id for m in sent)
    assert agent.tool_messages(messages, [ADD], "json")[0] is sent[0]  # the same object each turn: masked once


@pytest.mark.slow
@pytest.mark.skipif(
    importlib.util.find_spec("xllamacpp") is None,
    reason="the llama.cpp binding xllamacpp is not installed (make install installs it)",
)
async def test_the_local_model_goes_through_a_tool_loop_that_ends_within_its_limit() -> None:
    spec = AgentSpec(
        name="helper",
        model="local",
        system_prompt="You add numbers with the add tool, then answer with the sum.",
        model_settings={"temperature": 0, "max_tokens": 128},  # a call's JSON takes ~40 tokens
    )
    agent = build_agent(spec, Settings())
    tool = AddTool()
    store = MemoryStore()
    # Measured: SmolLM2 calls add (with numbers of its own choosing), then answers; ~10 s with the load.
    outcome = await Engine(store=store).run(tool_pipeline(agent, tool, max_calls=3), "Add 17 and 25.")

    # Whatever the tiny model chooses, the loop ends: an answer, or the limit of calls.
    if outcome.status == "failed":
        assert outcome.error is not None and "max_tool_calls (3)" in outcome.error.message, outcome.error
    else:
        assert outcome.status == "completed" and isinstance(outcome.output, str)
    records = await store.steps(outcome.run_id)
    turns = sorted(r.path for r in records if r.kind == "model")
    calls = sorted(r.path for r in records if r.kind == "tool")
    assert turns == [f"answer/model/{k}" for k in range(1, len(turns) + 1)]
    assert calls == [f"answer/tool/{n}" for n in range(1, len(calls) + 1)]
    assert len(calls) <= 3 and len(turns) == len(calls) + 1  # the last turn answered, or asked for a 4th call
    for record in records:
        if record.kind == "tool":
            assert record.name == "add" and set(record.output) == {"content", "value", "error", "declined"}
        elif record.kind == "model":
            assert record.status == "completed" and isinstance(record.output["text"], str)
    prompts = [e for e in await store.events(outcome.run_id) if e.kind == "agent.prompt"]
    assert [e.path for e in prompts] == turns  # each turn's messages, as sent
    assert all(e.payload["messages"][0]["content"].startswith(spec.system_prompt or "") for e in prompts)
    assert all("You can use tools." in e.payload["messages"][0]["content"] for e in prompts)
    assert len(tool.calls) == sum(1 for r in records if r.kind == "tool" and not r.output["error"])
