"""The tool loop of an agent step (core.policies.tool_loop), with a scripted model and in-test tools: calls run
and their results go back, the journal replays finished turns and calls, approval is a question, the bound
holds, and nothing of the loop enters the conversation."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from core import AgentStep, Conversation, Engine, LoopStep, Pipeline
from core.agents.offline import ScriptedAgent
from core.model.calls import ChatMessage
from core.model.tools import Approve, ToolCallContext, ToolDef, ToolOutcome
from core.ports import ToolSessions
from core.steps.kinds import ToolUse
from core.store import MemoryStore
from core.testing import ScriptedHuman


class AddTool:
    """Adds ``a`` and ``b``; counts its calls (a visible side effect)."""

    def __init__(self, approve: Approve = "never") -> None:
        self.calls: list[Mapping[str, Any]] = []
        self._approve: Approve = approve

    @property
    def name(self) -> str:
        return "add"

    @property
    def approve(self) -> Approve:
        return self._approve

    async def definition(self, sessions: ToolSessions) -> ToolDef:
        schema = {
            "type": "object",
            "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
            "required": ["a", "b"],
        }
        return ToolDef("add", "Add two integers", schema)

    async def call(self, arguments: Mapping[str, Any], where: ToolCallContext, sessions: ToolSessions) -> ToolOutcome:
        self.calls.append(dict(arguments))
        total = arguments["a"] + arguments["b"]
        return ToolOutcome(str(total), total)


def pipeline(agent: ScriptedAgent, tool: AddTool, *, max_calls: int = 8) -> Pipeline:
    use = ToolUse(tools=(tool,), max_tool_calls=max_calls, agent="helper")
    return Pipeline(steps=(AgentStep(name="answer", agent=agent, tools=use),))


async def test_the_model_calls_a_tool_and_answers_with_its_result() -> None:
    agent = ScriptedAgent([{"tool": "add", "arguments": {"a": 2, "b": 3}}, "It is 5."])
    tool = AddTool()
    store = MemoryStore()
    outcome = await Engine(store=store).run(pipeline(agent, tool), "What is 2 + 3?")
    assert outcome.status == "completed", outcome.error
    assert outcome.output == "It is 5."
    assert tool.calls == [{"a": 2, "b": 3}]
    records = {record.path: record for record in await store.steps(outcome.run_id)}
    assert set(records) == {"answer", "answer/model/1", "answer/tool/1", "answer/model/2"}
    assert records["answer/tool/1"].name == "add" and records["answer/tool/1"].output["content"] == "5"
    assert records["answer"].usage.requests == 2  # both turns, counted once: the turns' records hold none
    assert records["answer/model/1"].usage.requests == 0
    second = list(agent.calls)[1]
    assert second.input == "What is 2 + 3?"


async def test_a_bad_argument_and_an_unknown_tool_go_back_to_the_model_as_errors() -> None:
    agent = ScriptedAgent(
        [
            {"tool_calls": [{"name": "add", "arguments": {"a": "two", "b": 3}}, {"name": "mul", "arguments": {}}]},
            "Sorry.",
        ]
    )
    tool = AddTool()
    store = MemoryStore()
    outcome = await Engine(store=store).run(pipeline(agent, tool), "hi")
    assert outcome.status == "completed", outcome.error
    assert tool.calls == []
    records = {record.path: record for record in await store.steps(outcome.run_id)}
    assert records["answer/tool/1"].output["error"] is True
    assert "schema" in records["answer/tool/1"].output["content"]
    assert "no tool named 'mul'" in records["answer/tool/2"].output["content"]


async def test_past_max_tool_calls_the_step_fails_with_one_line_naming_the_agent() -> None:
    agent = ScriptedAgent([{"tool": "add", "arguments": {"a": 1, "b": 1}}])  # asks for ever
    tool = AddTool()
    outcome = await Engine(store=MemoryStore()).run(pipeline(agent, tool, max_calls=3), "loop")
    assert outcome.status == "failed"
    assert outcome.error is not None and "'helper'" in outcome.error.message and "(3)" in outcome.error.message
    assert len(tool.calls) == 3


async def test_a_resumed_run_repeats_no_finished_turn_nor_call() -> None:
    replies: list[Any] = [
        {"tool": "add", "arguments": {"a": 1, "b": 2}},
        {"tool": "add", "arguments": {"a": 3, "b": 4}},
        "done",
    ]
    tool = AddTool(approve="ask")
    store = MemoryStore()
    # The second call asks the person, who is not there: the run pauses after one call.
    first = await Engine(store=store, human=ScriptedHuman(["y"])).run(pipeline(ScriptedAgent(replies), tool), "go")
    assert first.status == "paused", first.error
    assert first.pause is not None and first.pause.path == "answer/tool/2/approve"
    assert tool.calls == [{"a": 1, "b": 2}]
    agent = ScriptedAgent(replies)
    resumed = await Engine(store=store, human=ScriptedHuman(["yes"])).resume(pipeline(agent, tool), first.run_id)
    assert resumed.status == "completed", resumed.error
    assert resumed.output == "done"
    assert tool.calls == [{"a": 1, "b": 2}, {"a": 3, "b": 4}]  # the first call was not made again
    assert len(agent.calls) == 1  # only the final turn was asked of the model again


async def test_a_declined_call_tells_the_model_so() -> None:
    agent = ScriptedAgent([{"tool": "add", "arguments": {"a": 1, "b": 2}}, "ok, not adding"])
    tool = AddTool(approve="ask")
    store = MemoryStore()
    outcome = await Engine(store=store, human=ScriptedHuman(["n"])).run(pipeline(agent, tool), "go")
    assert outcome.status == "completed", outcome.error
    assert tool.calls == []
    records = {record.path: record for record in await store.steps(outcome.run_id)}
    assert records["answer/tool/1/approve"].output == "n"
    assert records["answer/tool/1"].output["declined"] is True


async def test_tool_messages_never_enter_the_conversation() -> None:
    agent = ScriptedAgent([{"tool": "add", "arguments": {"a": 2, "b": 2}}, "four"])
    tool = AddTool()
    use = ToolUse(tools=(tool,), agent="helper")
    loop = LoopStep(
        name="chat",
        body=(AgentStep(name="answer", agent=agent, tools=use),),
        max_loops=2,
        conversation=Conversation(),
    )
    outcome = await Engine(store=MemoryStore()).run(Pipeline(steps=(loop,)), "2+2?")
    assert outcome.status == "completed", outcome.error
    last = list(agent.calls)[-1]
    roles = [message.role for message in last.history]
    assert "tool" not in roles
    assert all(not isinstance(m, ChatMessage) or not m.tool_calls for m in last.history)
    said = [*(m.content for m in last.history), last.input]
    assert said == ["2+2?", "four"]  # the question and the answer; no call, no result


async def test_a_simulated_person_answers_the_approval_question_as_any_other() -> None:
    from core import Answering, SimulatedPerson

    ada = ScriptedAgent(["yes"], name="ada")
    person = SimulatedPerson(ada, "agents.ada")
    agent = ScriptedAgent([{"tool": "add", "arguments": {"a": 1, "b": 2}}, "3"])
    tool = AddTool(approve="ask")
    store = MemoryStore()
    engine = Engine(store=store, answering=Answering(simulated_user=person))
    outcome = await engine.run(pipeline(agent, tool), "go")
    assert outcome.status == "completed", outcome.error
    assert tool.calls == [{"a": 1, "b": 2}]
    [note] = engine.answering.log.notes
    assert (note.path, note.step, note.source) == ("answer/tool/1/approve", "approve:add", "simulated")
    [asked] = ada.calls
    assert asked.input == 'Allow helper to call add({"a": 1, "b": 2})? [y/N]'


async def test_a_scripted_answer_after_tools_is_checked_against_the_output_schema() -> None:
    schema = {"type": "object", "properties": {"sum": {"type": "integer"}}, "required": ["sum"]}
    agent = ScriptedAgent([{"tool": "add", "arguments": {"a": 2, "b": 3}}, '{"sum": 5}'], output_schema=schema)
    outcome = await Engine(store=MemoryStore()).run(pipeline(agent, AddTool()), "2+3")
    assert outcome.status == "completed", outcome.error
    assert outcome.output == {"sum": 5}
    wrong = ScriptedAgent([{"tool": "add", "arguments": {"a": 2, "b": 3}}, "five"], output_schema=schema)
    failed = await Engine(store=MemoryStore()).run(pipeline(wrong, AddTool()), "2+3")
    assert failed.status == "failed" and failed.error is not None and "output_schema" in failed.error.message


async def test_the_tools_definitions_count_against_the_window() -> None:
    from core.model.calls import AgentCall
    from core.model.errors import PromptTooLarge
    from core.policies.tool_loop import fit_window

    agent = ScriptedAgent(["hi"], prompt_budget=60)
    step = AgentStep(name="answer", agent=agent)
    call = AgentCall(input="What is 2 + 3?", step="answer")
    small = [ToolDef("add", "Add", {"type": "object"})]
    assert fit_window(step, agent, agent, call, [], small, "native")  # fits
    large = [ToolDef("add", "Add two integers. " * 40, {"type": "object"})]
    try:
        fit_window(step, agent, agent, call, [], large, "native")
    except PromptTooLarge as exc:
        assert exc.budget < 60  # what the definitions leave of the window
    else:
        raise AssertionError("a prompt whose tools' definitions overflow the window was let through")
