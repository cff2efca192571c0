"""An Anthropic agent in a tool loop, over real HTTP against the fake server on 127.0.0.1: ``tools``, ``tool_use``
blocks (streamed as ``input_json_delta`` pieces, and not) and the results of one reply's calls sent back together
as one user message of ``tool_result`` blocks."""

from __future__ import annotations

import itertools
from typing import Any

from core import AgentCall, ChatMessage, Engine
from core.agents import AgentSpec, Backoff, build_agent
from core.agents.anthropic_chat import alternating, wire_messages
from core.model.tools import ToolCall
from core.store import MemoryStore
from core.testing import RecordingReporter
from tests.support.fakes.openai_server import FakeLLM
from tests.support.tool_doubles import ADD, ADD_SCHEMA, AddTool, tool_pipeline

FAST = Backoff(base_delay=0.001, max_delay=0.05)
WIRE_TOOLS = [{"name": "add", "description": "Add two integers", "input_schema": ADD_SCHEMA}]


def make(fake: FakeLLM, **spec: Any) -> Any:
    spec.setdefault("model", "anthropic:claude-3-5-haiku-latest")
    return build_agent(AgentSpec(name="helper", **spec), fake.settings(), backoff=FAST)


def roles_alternate_from_user(messages: list[dict[str, Any]]) -> bool:
    roles = [message["role"] for message in messages]
    return bool(roles) and roles[0] == "user" and all(a != b for a, b in itertools.pairwise(roles))


async def test_two_calls_in_one_streamed_reply_go_back_in_one_user_message(fake_llm: FakeLLM) -> None:
    fake_llm.reply("Adding both.", tool_calls=[("add", {"a": 1, "b": 2}), ("add", {"a": 3, "b": 4})], usage=(40, 9))
    fake_llm.reply("3 and 7.", usage=(60, 3))
    tool = AddTool()
    reporter = RecordingReporter()
    store = MemoryStore()
    agent = make(fake_llm, system_prompt="Use the tools.")
    outcome = await Engine(store=store, reporter=reporter).run(tool_pipeline(agent, tool), "Add 1+2 and 3+4")

    assert outcome.status == "completed", outcome.error
    assert outcome.output == "3 and 7."
    assert tool.calls == [{"a": 1, "b": 2}, {"a": 3, "b": 4}]
    assert "".join(reporter.text) == "Adding both.3 and 7."
    first, second = fake_llm.bodies
    assert first["tools"] == WIRE_TOOLS and first["stream"] is True and first["system"] == "Use the tools."
    assert second["messages"] == [
        {"role": "user", "content": "Add 1+2 and 3+4"},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Adding both."},
                {"type": "tool_use", "id": "toolu_1", "name": "add", "input": {"a": 1, "b": 2}},
                {"type": "tool_use", "id": "toolu_2", "name": "add", "input": {"a": 3, "b": 4}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": "3"},
                {"type": "tool_result", "tool_use_id": "toolu_2", "content": "7"},
            ],
        },
    ]
    assert roles_alternate_from_user(second["messages"])
    records = {record.path: record for record in await store.steps(outcome.run_id)}
    usage = records["answer"].usage
    assert (usage.input_tokens, usage.output_tokens, usage.requests) == (100, 12, 2)


async def test_a_failed_call_goes_back_with_is_error(fake_llm: FakeLLM) -> None:
    fake_llm.reply("", tool_calls=[("mul", {"a": 2, "b": 3})])
    fake_llm.reply("I cannot multiply.")
    outcome = await Engine(store=MemoryStore()).run(tool_pipeline(make(fake_llm), AddTool()), "2 * 3?")

    assert outcome.status == "completed", outcome.error
    sent = fake_llm.bodies[1]["messages"]
    assert sent[1]["content"] == [{"type": "tool_use", "id": "toolu_1", "name": "mul", "input": {"a": 2, "b": 3}}]
    (result,) = sent[2]["content"]
    assert result["type"] == "tool_result" and result["tool_use_id"] == "toolu_1" and result["is_error"] is True
    assert "no tool named 'mul'" in result["content"]


async def test_a_reply_not_streamed_carries_its_tool_use_blocks(fake_llm: FakeLLM) -> None:
    fake_llm.reply("Let me add.", tool_calls=[("add", {"a": 2, "b": 3})], usage=(15, 8))
    agent = make(fake_llm)
    sent = agent.tool_messages([ChatMessage("user", "2 + 3?")], [ADD], "native")

    turn = await agent.tool_turn(AgentCall(input="2 + 3?", step="s"), sent, [ADD], "native")

    assert "stream" not in fake_llm.last.body and fake_llm.last.body["tools"] == WIRE_TOOLS
    assert turn.text == "Let me add." and turn.tool_calls == (ToolCall("toolu_1", "add", {"a": 2, "b": 3}),)
    assert (turn.usage.input_tokens, turn.usage.output_tokens) == (15, 8)


async def test_streamed_input_that_is_not_json_is_the_calls_arguments_error(fake_llm: FakeLLM) -> None:
    fake_llm.reply("", tool_calls=[("add", '{"a": 2, "b"')])
    deltas: list[str] = []
    agent = make(fake_llm)
    call = AgentCall(input="2 + 3?", step="s", on_text=deltas.append)

    turn = await agent.tool_turn(call, [ChatMessage("user", "2 + 3?")], [ADD], "native")

    (asked,) = turn.tool_calls
    assert asked.id == "toolu_1" and asked.arguments == '{"a": 2, "b"' and asked.arguments_error is not None
    assert deltas == [] and turn.text == ""


def test_the_results_of_one_reply_stay_together_and_the_turns_still_alternate() -> None:
    call = ToolCall("toolu_1", "add", {"a": 1, "b": 2})
    other = ToolCall("toolu_2", "add", {"a": 3, "b": 4})
    prompt = alternating([ChatMessage("system", "Be brief."), ChatMessage("user", "one"), ChatMessage("user", "two")])
    loop = [
        ChatMessage("assistant", "", tool_calls=(call, other)),
        ChatMessage("tool", "3", tool_call_id="toolu_1", name="add"),
        ChatMessage("tool", "Error: boom", tool_call_id="toolu_2", name="add"),
    ]

    sent = alternating([*prompt, *loop])  # what an agent's prompt does to it never merges a call or a result

    assert sent[1:] == [ChatMessage("user", "one\n\ntwo"), *loop]
    assert wire_messages(sent) == [
        {"role": "user", "content": "one\n\ntwo"},
        {
            "role": "assistant",
            "content": [
                {"type": "tool_use", "id": "toolu_1", "name": "add", "input": {"a": 1, "b": 2}},
                {"type": "tool_use", "id": "toolu_2", "name": "add", "input": {"a": 3, "b": 4}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": "3"},
                {"type": "tool_result", "tool_use_id": "toolu_2", "content": "Error: boom", "is_error": True},
            ],
        },
    ]


async def test_in_json_mode_the_reply_form_is_stated_in_the_system_prompt_and_no_tools_are_sent(
    fake_llm: FakeLLM,
) -> None:
    fake_llm.reply({"tool": "add", "arguments": {"a": 2, "b": 3}}).reply({"answer": "5"})
    tool = AddTool()
    agent = make(fake_llm, system_prompt="Add.")
    outcome = await Engine(store=MemoryStore()).run(tool_pipeline(agent, tool, mode="json"), "2+3?")

    assert outcome.status == "completed", outcome.error
    assert outcome.output == "5" and tool.calls == [{"a": 2, "b": 3}]
    first, second = fake_llm.bodies
    assert "tools" not in first and "tools" not in second
    assert first["system"].startswith("Add.\n\nYou can use tools.")
    assert second["messages"] == [
        {"role": "user", "content": "2+3?"},
        {"role": "assistant", "content": '{"tool": "add", "arguments": {"a": 2, "b": 3}}'},
        {"role": "user", "content": "Result of add: 5"},
    ]
