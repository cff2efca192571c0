"""``workflow:`` tools (core.tools.workflow_tool, run by core.policies.tool_workflow): a sub-workflow a model
calls runs as a child run at the call's ``P/tool/N`` path, with the arguments as its input and on a context of
its own; its output is the result; a failed child is an error the model reads and is never run again; a
question inside it pauses the run, and resume continues inside the child."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from core import AgentStep, Engine, HitlStep, Pipeline, StepRecord, Template, TraceEvent
from core.agents.offline import ScriptedAgent
from core.policies.workflow import child_run_id
from core.steps.kinds import ToolUse
from core.store import MemoryStore
from core.testing import FuncAgent, ScriptedHuman
from core.tools.kinds import build_runner_tool
from core.tools.spec import ToolSpec
from core.tools.workflow_tool import WorkflowTool
from tests.core.test_engine_resume import Calls, Crash

SCHEMA = {"type": "object", "properties": {"ticket": {"type": "string"}}, "required": ["ticket"]}


def triage(calls: Calls, *, fails: bool = False) -> Pipeline:
    """The sub-workflow: one agent that reads the ticket from the child's context (the arguments merged in)."""

    def judge(value: Any) -> Any:
        if fails:
            raise ValueError("the triage service is down")
        return f"urgent: {value}"

    agent = calls.agent("judge", judge)
    step = AgentStep(name="judge", agent=agent, input=Template("{{ context.scratchpad.ticket }}"))
    return Pipeline(name="triage", steps=(step,))


def workflow_tool(child: Pipeline, **fields: Any) -> WorkflowTool:
    spec = ToolSpec(name="triage", workflow="imports.triage", **fields)
    tool = build_runner_tool(spec, workflow=child)
    assert isinstance(tool, WorkflowTool)
    return tool


def parent(agent: ScriptedAgent, tool: WorkflowTool) -> Pipeline:
    use = ToolUse(tools=(tool,), agent="helper")
    return Pipeline(name="desk", steps=(AgentStep(name="answer", agent=agent, tools=use, sink_to="said"),))


async def records(store: MemoryStore, run_id: str) -> dict[str, StepRecord]:
    return {record.path: record for record in await store.steps(run_id)}


async def test_the_model_calls_a_sub_workflow_and_reads_its_output() -> None:
    calls, store = Calls(), MemoryStore()
    agent = ScriptedAgent([{"tool": "triage", "arguments": {"ticket": "printer on fire"}}, "It is urgent."])
    outcome = await Engine(store=store).run(parent(agent, workflow_tool(triage(calls))), "help", run_id="desk1")
    assert outcome.status == "completed", outcome.error
    assert outcome.output == "It is urgent."
    steps = await records(store, "desk1")
    call = steps["answer/tool/1"]
    assert (call.kind, call.name, call.status) == ("tool", "triage", "completed")
    assert call.output["content"] == "urgent: printer on fire" and call.output["error"] is False
    child = await store.get_run(child_run_id("desk1", "answer/tool/1"))
    assert child is not None and child.status == "completed" and child.parent_run_id == "desk1"
    assert child.input == {"ticket": "printer on fire"}
    assert [s.path for s in await store.steps(child.run_id)] == ["judge"]
    assert calls.count == {"judge": 1}


async def test_the_child_leaves_the_calling_step_s_context_alone() -> None:
    calls, store = Calls(), MemoryStore()
    agent = ScriptedAgent([{"tool": "triage", "arguments": {"ticket": "t"}}, "done"])
    seen = "{{ 'ticket' in context.scratchpad }} {{ 'judge' in context.steps }} {{ 'answer' in context.steps }}"
    look = AgentStep(name="look", agent=FuncAgent(lambda text: text), input=Template(seen))
    use = ToolUse(tools=(workflow_tool(triage(calls)),), agent="helper")
    outcome = await Engine(store=store).run(
        Pipeline(steps=(AgentStep(name="answer", agent=agent, tools=use), look)), "hi"
    )
    assert outcome.status == "completed", outcome.error
    assert outcome.output == "False False True"  # the child's input and steps stayed in the child


async def test_the_definition_is_the_blueprint_s_else_any_object() -> None:
    tool = workflow_tool(triage(Calls()), description="Triage a ticket", input_schema=SCHEMA)
    definition = await tool.definition(None)  # type: ignore[arg-type]  # it holds nothing
    assert (definition.name, definition.description, dict(definition.input_schema)) == (
        "triage", "Triage a ticket", SCHEMA,
    )  # fmt: skip
    plain = await workflow_tool(triage(Calls())).definition(None)  # type: ignore[arg-type]
    assert "imports.triage" in plain.description and plain.input_schema == {"type": "object", "properties": {}}


async def test_a_failed_child_is_an_error_the_model_reads_and_is_never_run_again() -> None:
    calls, store = Calls(), MemoryStore()
    replies: list[Any] = [
        {"tool": "triage", "arguments": {"ticket": "t"}},
        {"tool": "ask_first", "arguments": {}},
        "I could not triage it.",
    ]
    # A second tool, which asks the person first: nobody answers, so the run pauses after the failed call.
    asking = WorkflowTool(ToolSpec(name="ask_first", workflow="imports.x", approve="ask"), triage(Calls()))

    def desk(agent: ScriptedAgent) -> Pipeline:
        use = ToolUse(tools=(workflow_tool(triage(calls, fails=True)), asking), agent="helper")
        return Pipeline(name="desk", steps=(AgentStep(name="answer", agent=agent, tools=use),))

    first = await Engine(store=store).run(desk(ScriptedAgent(replies)), "help", run_id="desk2")
    assert first.status == "paused", first.error
    call = (await records(store, "desk2"))["answer/tool/1"]
    assert (call.kind, call.status, call.output["error"]) == ("tool", "completed", True)
    assert "the workflow triage failed" in call.output["content"]
    assert "the triage service is down" in call.output["content"]
    child = await store.get_run(child_run_id("desk2", "answer/tool/1"))
    assert child is not None and child.status == "failed"
    assert calls.count == {"judge": 1}
    resumed = await Engine(store=store, human=ScriptedHuman(["n"])).resume(desk(ScriptedAgent(replies)), "desk2")
    assert resumed.status == "completed", resumed.error
    assert resumed.output == "I could not triage it."
    assert calls.count == {"judge": 1}  # the failed child was not run again


async def test_a_question_in_the_child_pauses_the_run_and_resume_answers_it() -> None:
    calls, store = Calls(), MemoryStore()
    ask = HitlStep(name="confirm", message=Template("Is {{ context.scratchpad.ticket }} urgent?"))
    child = Pipeline(name="triage", steps=(ask, AgentStep(name="judge", agent=calls.agent("judge", str.upper))))
    replies: list[Any] = [{"tool": "triage", "arguments": {"ticket": "t-1"}}, "Triaged."]
    first = await Engine(store=store).run(parent(ScriptedAgent(replies), workflow_tool(child)), "go", run_id="desk3")
    assert first.status == "paused" and first.pause is not None
    assert first.pause.path == "answer/tool/1/confirm" and first.pause.message == "Is t-1 urgent?"
    agent = ScriptedAgent(replies)
    resumed = await Engine(store=store, human=ScriptedHuman(["yes"])).resume(
        parent(agent, workflow_tool(child)), "desk3"
    )
    assert resumed.status == "completed", resumed.error
    call = (await records(store, "desk3"))["answer/tool/1"]
    assert call.output["content"] == "YES" and call.kind == "tool"
    assert calls.count == {"judge": 1}
    assert len(agent.calls) == 1  # the turn that asked for the tool was replayed, not asked again


class CrashAfterTheChild(MemoryStore):
    """Crashes (as kill -9 would) instead of recording the tool loop's record of the call: the child run and
    its own record of the step are committed, the loop's is not."""

    async def record_step(self, step: StepRecord, events: Sequence[TraceEvent]) -> None:
        if step.path == "answer/tool/1" and step.kind == "tool":
            raise Crash(step.path)
        await super().record_step(step, events)


async def test_a_crash_after_the_child_finished_replays_its_output() -> None:
    calls, store = Calls(), CrashAfterTheChild()
    replies: list[Any] = [{"tool": "triage", "arguments": {"ticket": "t"}}, "Urgent."]
    with pytest.raises(Crash):
        await Engine(store=store).run(parent(ScriptedAgent(replies), workflow_tool(triage(calls))), "go", run_id="d4")
    store.record_step = MemoryStore.record_step.__get__(store)  # type: ignore[method-assign]  # no crash now
    resumed = await Engine(store=store).resume(parent(ScriptedAgent(replies), workflow_tool(triage(calls))), "d4")
    assert resumed.status == "completed", resumed.error
    assert resumed.output == "Urgent."
    assert calls.count == {"judge": 1}
    call = (await records(store, "d4"))["answer/tool/1"]
    assert call.kind == "workflow" and call.output == "urgent: t"  # the child's own record, replayed as the result


async def test_called_outside_a_tool_loop_it_says_it_cannot_run() -> None:
    from core.model.tools import ToolCallContext

    tool = workflow_tool(triage(Calls()))
    outcome = await tool.call({}, ToolCallContext(run_id="r", path="p"), None)  # type: ignore[arg-type]
    assert outcome.error and "only in an agent step's tool loop" in outcome.content
