"""An OpenAI-compatible agent in a tool loop, over real HTTP against the fake server on 127.0.0.1: ``tools`` and
``tool_calls`` on the wire (streamed and not), whole loops through the engine (one call, several in one reply,
arguments that are not JSON, an unknown tool, a loop that never ends), and what the trace shows was sent."""

from __future__ import annotations

from typing import Any

from core import AgentCall, AgentStep, ChatMessage, Engine, Pipeline
from core.agents import AgentSpec, Backoff, build_agent
from core.model.tools import ToolCall
from core.steps.kinds import ToolUse
from core.store import MemoryStore
from core.testing import RecordingReporter
from tests.support.fakes.openai_server import FakeLLM
from tests.support.tool_doubles import ADD, ADD_SCHEMA, AddTool, tool_pipeline

FAST = Backoff(base_delay=0.001, max_delay=0.05)
WIRE_TOOLS = [
    {"type": "function", "function": {"name": "add", "description": "Add two integers", "parameters": ADD_SCHEMA}}
]


def make(fake: FakeLLM, **spec: Any) -> Any:
    spec.setdefault("model", "openai:gpt-4o-mini")
    return build_agent(AgentSpec(name="helper", **spec), fake.settings(), backoff=FAST)


async def test_a_tool_call_runs_and_its_result_goes_back_as_openai_words_it(fake_llm: FakeLLM) -> None:
    fake_llm.reply("", tool_calls=[("add", {"a": 2, "b": 3})], usage=(20, 7))
    fake_llm.reply("It is 5.", usage=(30, 4))
    tool = AddTool()
    store = MemoryStore()
    reporter = RecordingReporter()
    agent = make(fake_llm, system_prompt="Use the tools.")
    outcome = await Engine(store=store, reporter=reporter).run(tool_pipeline(agent, tool), "What is 2 + 3?")

    assert outcome.status == "completed", outcome.error
    assert outcome.output == "It is 5."
    assert tool.calls == [{"a": 2, "b": 3}]
    first, second = fake_llm.bodies
    assert first["tools"] == WIRE_TOOLS and second["tools"] == WIRE_TOOLS
    assert first["stream"] is True  # the engine streams: the text goes to the person as it comes
    assert first["messages"] == [
        {"role": "system", "content": "Use the tools."},
        {"role": "user", "content": "What is 2 + 3?"},
    ]
    assert second["messages"][2:] == [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "add", "arguments": '{"a": 2, "b": 3}'}}
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "5"},
    ]
    assert "".join(reporter.text) == "It is 5."
    records = {record.path: record for record in await store.steps(outcome.run_id)}
    assert records["answer/model/1"].output["tool_calls"] == [
        {"id": "call_1", "name": "add", "arguments": {"a": 2, "b": 3}}
    ]
    assert records["answer/tool/1"].name == "add" and records["answer/tool/1"].output["content"] == "5"
    usage = records["answer"].usage
    assert (usage.input_tokens, usage.output_tokens, usage.requests) == (50, 11, 2)
    assert outcome.usage == usage  # each turn counted once in the run's total too
    # The trace shows what each turn sent: the call and its result, masked like everything else.
    prompts = {e.path: e.payload["messages"] for e in await store.events(outcome.run_id) if e.kind == "agent.prompt"}
    assert prompts["answer/model/2"][2:] == [
        {
            "role": "assistant",
            "content": "",
            "tool_calls": '[{"id": "call_1", "name": "add", "arguments": {"a": 2, "b": 3}}]',  # one text
        },
        {"role": "tool", "content": "5", "tool_call_id": "call_1"},
    ]


async def test_several_calls_in_one_streamed_reply_each_run_and_each_result_goes_back(fake_llm: FakeLLM) -> None:
    fake_llm.reply("Adding both.", tool_calls=[("add", {"a": 1, "b": 2}), ("add", {"a": 3, "b": 4})])
    fake_llm.reply("3 and 7.")
    tool = AddTool()
    reporter = RecordingReporter()
    store = MemoryStore()
    outcome = await Engine(store=store, reporter=reporter).run(tool_pipeline(make(fake_llm), tool), "Add")

    assert outcome.status == "completed", outcome.error
    assert outcome.output == "3 and 7."
    assert tool.calls == [{"a": 1, "b": 2}, {"a": 3, "b": 4}]
    assert "".join(reporter.text) == "Adding both.3 and 7."  # the words said with the calls were streamed too
    messages = fake_llm.bodies[1]["messages"]
    assert messages[1]["content"] == "Adding both."
    assert [call["id"] for call in messages[1]["tool_calls"]] == ["call_1", "call_2"]
    assert messages[2:] == [
        {"role": "tool", "tool_call_id": "call_1", "content": "3"},
        {"role": "tool", "tool_call_id": "call_2", "content": "7"},
    ]
    paths = [record.path for record in await store.steps(outcome.run_id)]
    assert paths.count("answer/tool/1") == 1 and paths.count("answer/tool/2") == 1


async def test_arguments_that_are_not_json_go_back_to_the_model_as_an_error(fake_llm: FakeLLM) -> None:
    fake_llm.reply("", tool_calls=[("add", '{"a": 2, "b":')])  # streamed in pieces, and cut
    fake_llm.reply("Sorry.")
    tool = AddTool()
    store = MemoryStore()
    outcome = await Engine(store=store).run(tool_pipeline(make(fake_llm), tool), "2 + 3?")

    assert outcome.status == "completed", outcome.error
    assert tool.calls == []
    records = {record.path: record for record in await store.steps(outcome.run_id)}
    result = records["answer/tool/1"].output
    assert result["error"] is True and result["content"].startswith("Error: the arguments are not valid JSON")
    sent = fake_llm.bodies[1]["messages"]
    assert sent[1]["tool_calls"][0]["function"]["arguments"] == '{"a": 2, "b":'  # as the model gave them
    assert sent[2]["role"] == "tool" and sent[2]["content"] == result["content"]


async def test_an_unknown_tool_goes_back_to_the_model_as_an_error(fake_llm: FakeLLM) -> None:
    fake_llm.reply("", tool_calls=[("mul", {"a": 2, "b": 3})])
    fake_llm.reply("I cannot multiply.")
    tool = AddTool()
    outcome = await Engine(store=MemoryStore()).run(tool_pipeline(make(fake_llm), tool), "2 * 3?")

    assert outcome.status == "completed", outcome.error
    assert outcome.output == "I cannot multiply."
    result = fake_llm.bodies[1]["messages"][2]
    assert result["tool_call_id"] == "call_1" and "no tool named 'mul'" in result["content"]


async def test_a_model_that_never_stops_calling_fails_the_step_past_max_tool_calls(fake_llm: FakeLLM) -> None:
    for _ in range(3):
        fake_llm.reply("", tool_calls=[("add", {"a": 1, "b": 1})])
    tool = AddTool()
    outcome = await Engine(store=MemoryStore()).run(tool_pipeline(make(fake_llm), tool, max_calls=2), "loop")

    assert outcome.status == "failed"
    assert outcome.error is not None
    assert "'helper'" in outcome.error.message and "max_tool_calls (2)" in outcome.error.message
    assert len(tool.calls) == 2 and len(fake_llm.requests) == 3
    assert outcome.usage.requests == 3 and outcome.usage.input_tokens == 30


async def test_a_reply_not_streamed_carries_its_calls_and_bad_arguments_are_kept_as_text(fake_llm: FakeLLM) -> None:
    fake_llm.fail(500).reply("Let me add.", tool_calls=[("add", {"a": 2, "b": 3}), ("add", '{"a": ')], usage=(12, 9))
    agent = make(fake_llm)
    messages = [ChatMessage("user", "2 + 3?")]

    turn = await agent.tool_turn(
        AgentCall(input="2 + 3?", step="s"), agent.tool_messages(messages, [ADD], "native"), [ADD], "native"
    )

    body = fake_llm.last.body
    assert "stream" not in body and body["tools"] == WIRE_TOOLS
    assert turn.text == "Let me add." and turn.attempts == 2 and not turn.streamed
    first, second = turn.tool_calls
    assert first == ToolCall("call_1", "add", {"a": 2, "b": 3})
    assert second.id == "call_2" and second.arguments == '{"a": ' and second.arguments_error is not None
    assert (turn.usage.input_tokens, turn.usage.output_tokens, turn.usage.requests) == (12, 9, 1)
    assert turn.usage.cost_usd is not None and turn.usage.cost_usd > 0  # priced as any call of this model


async def test_an_answer_checked_against_the_output_schema_is_repaired_without_tools(fake_llm: FakeLLM) -> None:
    schema = {"type": "object", "properties": {"total": {"type": "integer"}}, "required": ["total"]}
    fake_llm.reply("", tool_calls=[("add", {"a": 2, "b": 3})])
    fake_llm.reply("The total is 5.")
    fake_llm.reply({"total": 5})
    tool = AddTool()
    agent = make(fake_llm, output_schema=schema)
    use = ToolUse(tools=(tool,), agent="helper")
    pipeline = Pipeline(steps=(AgentStep(name="answer", agent=agent, tools=use),))
    store = MemoryStore()
    outcome = await Engine(store=store).run(pipeline, "2 + 3?")

    assert outcome.status == "completed", outcome.error
    assert outcome.output == {"total": 5}
    first, second, repair = fake_llm.bodies
    assert first["response_format"]["json_schema"]["schema"] == schema and first["tools"] == WIRE_TOOLS
    assert "stream" not in second  # a structured answer is checked whole, not streamed
    assert repair["tool_choice"] == "none" and repair["tools"] == WIRE_TOOLS
    assert repair["messages"][-2]["content"] == "The total is 5."
    records = {record.path: record for record in await store.steps(outcome.run_id)}
    assert records["answer/model/2"].output["output"] == {"total": 5}
    assert records["answer"].usage.requests == 3
