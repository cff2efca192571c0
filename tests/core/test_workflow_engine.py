"""Sub-workflows in core (no YAML): a WorkflowStep runs its pipeline as a child run linked to the parent.

Each scenario builds its pipelines from a factory, so every attempt gets fresh agents (as a new process
would); a shared ``Calls`` log counts executions across attempts.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from core import (
    AgentStep,
    Conversation,
    Engine,
    HitlStep,
    Limits,
    LoopStep,
    OutputMapping,
    Pipeline,
    RunError,
    RunRecord,
    StepRecord,
    Template,
    TraceEvent,
    WorkflowStep,
)
from core.policies.workflow import child_run_id
from core.store import MemoryStore
from core.testing import FuncAgent, RecordingReporter, ScriptedHuman
from tests.core.test_engine_resume import Calls, Crash


def child_pipeline(calls: Calls) -> Pipeline:
    """draft (agent) → approve (HITL) → final (agent): the review sub-workflow."""
    return Pipeline(
        name="review",
        steps=(
            AgentStep(name="draft", agent=calls.agent("draft", lambda text: f"draft of {text}"), sink_to="draft"),
            HitlStep(name="approve", message=Template("Approve {{ previous_step }}?"), sink_to="verdict"),
            AgentStep(
                name="final",
                agent=calls.agent("final", lambda answer: f"final ({answer})"),
                input=Template("{{ context.scratchpad.draft }} / {{ previous_step }}"),
            ),
        ),
    )


def parent_pipeline(calls: Calls, **workflow: Any) -> Pipeline:
    """start → review (sub-workflow) → after, whose output shows what came back."""
    options: dict[str, Any] = {"outputs": (OutputMapping(child="scratchpad.verdict", parent="scratchpad.approved"),)}
    options.update(workflow)
    return Pipeline(
        name="parent",
        steps=(
            AgentStep(name="start", agent=calls.agent("start", lambda text: text.upper())),
            WorkflowStep(name="review", pipeline=child_pipeline(calls), **options),
            AgentStep(
                name="after",
                input=Template("{{ previous_step }} | approved: {{ context.scratchpad.approved }}"),
            ),
        ),
    )


async def children_of(store: MemoryStore, parent: str) -> list[RunRecord]:
    return [run for run in await store.list_runs(limit=100) if run.parent_run_id == parent]


async def test_child_runs_as_a_linked_run_and_its_result_is_mapped_back() -> None:
    calls, store = Calls(), MemoryStore()
    outcome = await Engine(store=store, human=ScriptedHuman(["yes"])).run(parent_pipeline(calls), "tea", run_id="p1")
    assert outcome.status == "completed", outcome.error
    assert outcome.output == "final (draft of TEA / yes) | approved: yes"
    [child] = await children_of(store, "p1")
    assert child.run_id == child_run_id("p1", "review")
    assert (child.status, child.pipeline_name, child.input, child.output) == (
        "completed", "review", "TEA", "final (draft of TEA / yes)",
    )  # fmt: skip
    # The child's steps are in the child run; the parent holds the workflow step itself.
    assert [s.path for s in await store.steps(child.run_id)] == ["draft", "approve", "final"]
    parent_steps = await store.steps("p1")
    assert [(s.path, s.kind) for s in parent_steps] == [("start", "step"), ("review", "workflow"), ("after", "step")]
    [linked] = [e for e in await store.events("p1") if e.kind == "workflow.child"]
    assert linked.payload == {"child_run_id": child.run_id, "pipeline": "review"}


async def test_child_sees_only_what_the_parent_passes() -> None:
    """By default the input is the child's initial prompt and nothing else of the parent reaches it;
    input_to places the input; inherit_context adds a copy of the parent's scratchpad, never more."""
    probe = AgentStep(name="probe", input=Template("{{ context }}"))
    child = Pipeline(name="child", steps=(probe,))
    for options, prompt, scratchpad in (
        ({}, "hello", {}),
        ({"input_to": "scratchpad"}, None, {"initial_input": "hello"}),
        ({"input_to": "scratchpad", "input": Template('{{ {"a": 1} }}')}, None, {"a": 1}),
        ({"input_to": "both", "input_key": "q", "inherit_context": True}, "hello", {"secret": 1, "q": "hello"}),
    ):
        options = {"input": Template("hello"), **options}
        parent = Pipeline(
            steps=(
                AgentStep(name="note", agent=FuncAgent(lambda _: {"secret": 1}), updates_context=True),
                WorkflowStep(name="sub", pipeline=child, **options),
            )
        )
        outcome = await Engine(store=MemoryStore()).run(parent, "start")
        assert outcome.status == "completed", outcome.error
        assert outcome.output["initial_prompt"] == prompt
        assert outcome.output["scratchpad"] == scratchpad
        assert outcome.output["steps"] == {}
        assert outcome.output["conversation_history"] == []


async def test_pause_in_the_child_pauses_the_parent_and_resume_continues_inside() -> None:
    calls, store = Calls(), MemoryStore()
    engine = Engine(store=store, human=ScriptedHuman())
    paused = await engine.run(parent_pipeline(calls), "tea", run_id="p2")
    assert paused.status == "paused" and paused.pause is not None
    assert (paused.pause.step, paused.pause.path, paused.pause.message) == (
        "approve", "review/approve", "Approve draft of TEA?",
    )  # fmt: skip
    child_id = child_run_id("p2", "review")
    parent_record, child_record = await store.get_run("p2"), await store.get_run(child_id)
    assert parent_record is not None and child_record is not None
    assert (parent_record.status, parent_record.pause_path) == ("paused", "review/approve")
    assert (child_record.status, child_record.pause_path) == ("paused", "approve")

    with pytest.raises(RunError, match=f"run {child_id} is a sub-workflow of run p2; resume that run instead"):
        await Engine(store=store, human=ScriptedHuman(["yes"])).resume(child_pipeline(calls), child_id)

    resumed = await Engine(store=store, human=ScriptedHuman(["yes"])).resume(parent_pipeline(calls), "p2")
    assert resumed.status == "completed", resumed.error
    assert resumed.output == "final (draft of TEA / yes) | approved: yes"
    assert resumed.replayed == 2  # start (parent) and draft (child)
    assert calls.count == {"start": 1, "draft": 1, "final": 1}  # no step of the child ran twice
    assert len(await children_of(store, "p2")) == 1
    assert [s.path for s in await store.steps(child_id)] == ["draft", "approve", "final"]
    child_record = await store.get_run(child_id)
    assert child_record is not None and child_record.status == "completed"


class CrashingStore(MemoryStore):
    """Crashes (like kill -9) instead of recording the step at ``crash_path`` of any run."""

    def __init__(self, crash_path: str | None) -> None:
        super().__init__()
        self.crash_path = crash_path

    async def record_step(self, step: StepRecord, events: Sequence[TraceEvent]) -> None:
        if step.path == self.crash_path:
            raise Crash(step.path)
        await super().record_step(step, events)


@pytest.mark.parametrize("crash_path", ["draft", "approve", "final", "review"])
async def test_a_run_left_running_mid_child_resumes_inside_the_child(crash_path: str) -> None:
    calls, store = Calls(), CrashingStore(crash_path)
    with pytest.raises(Crash):
        await Engine(store=store, human=ScriptedHuman(["yes"])).run(parent_pipeline(calls), "tea", run_id="p3")
    child_id = child_run_id("p3", "review")
    child_status = "completed" if crash_path == "review" else "running"  # "review": the parent's own commit
    assert [(r.run_id, r.status) for r in await store.list_runs()] == [(child_id, child_status), ("p3", "running")]
    store.crash_path = None
    resumed = await Engine(store=store, human=ScriptedHuman(["yes"])).resume(parent_pipeline(calls), "p3")
    assert resumed.status == "completed", resumed.error
    assert resumed.output == "final (draft of TEA / yes) | approved: yes"
    # Only the step in flight at the crash runs again.
    again = {"draft": "draft", "approve": None, "final": "final", "review": None}[crash_path]
    assert calls.count == {"start": 1, "draft": 1, "final": 1} | ({again: 2} if again else {})
    assert {r.status for r in await store.list_runs()} == {"completed"}


async def test_child_failure_fails_the_parent_at_the_inner_step_and_resume_retries_it() -> None:
    attempts: list[str] = []

    def flaky(value: Any) -> Any:
        attempts.append(value)
        if len(attempts) == 1:
            raise RunError("the critic is away")
        return f"ok {value}"

    child = Pipeline(name="c", steps=(AgentStep(name="critic", agent=FuncAgent(flaky)),))
    parent = Pipeline(steps=(WorkflowStep(name="review", pipeline=child),))
    store = MemoryStore()
    failed = await Engine(store=store).run(parent, "x", run_id="p4")
    assert (failed.status, failed.failed_step) == ("failed", "review/critic")
    assert failed.error is not None and failed.error.message == "the critic is away"
    child_record = await store.get_run(child_run_id("p4", "review"))
    assert child_record is not None and (child_record.status, child_record.error) == ("failed", "the critic is away")
    resumed = await Engine(store=store).resume(parent, "p4")
    assert (resumed.status, resumed.output) == ("completed", "ok x")


async def test_child_usage_counts_in_the_parent_and_its_limits() -> None:
    child = Pipeline(
        name="c",
        steps=(
            AgentStep(name="one", agent=FuncAgent(lambda x: x, tokens=30)),
            AgentStep(name="two", agent=FuncAgent(lambda x: x, tokens=30)),
        ),
    )
    steps = (AgentStep(name="first", agent=FuncAgent(lambda x: x, tokens=10)), WorkflowStep(name="sub", pipeline=child))
    store = MemoryStore()
    done = await Engine(store=store).run(Pipeline(steps=steps), "x", run_id="p5")
    assert done.usage.total_tokens == 70
    child_record = await store.get_run(child_run_id("p5", "sub"))
    assert child_record is not None and child_record.usage.total_tokens == 60
    parent_record = await store.get_run("p5")
    assert parent_record is not None and parent_record.usage.total_tokens == 70

    limited = Pipeline(steps=steps, limits=Limits(max_tokens=50))
    stopped = await Engine(store=store).run(limited, "x", run_id="p6")
    assert stopped.status == "limit_reached" and stopped.usage.total_tokens == 70
    assert stopped.detail == "token limit reached: 70 tokens used, limit is 50"
    child_record = await store.get_run(child_run_id("p6", "sub"))
    assert child_record is not None and child_record.status == "limit_reached"


async def test_child_result_is_an_assistant_turn_of_the_parent_conversation() -> None:
    child = Pipeline(name="c", steps=(AgentStep(name="inner", input=Template("{{ context.conversation_history }}")),))
    loop = LoopStep(
        name="chat",
        max_loops=1,
        conversation=Conversation(),
        body=(WorkflowStep(name="sub", pipeline=child),),
    )
    parent = Pipeline(steps=(loop, AgentStep(name="show", input=Template("{{ context.conversation_history }}"))))
    outcome = await Engine(store=MemoryStore()).run(parent, "hi")
    assert outcome.status == "completed", outcome.error
    # The child saw no history; its result became the parent's assistant turn.
    assert outcome.output == [
        {"role": "user", "content": "hi", "tokens": 1},
        {"role": "assistant", "content": "[]", "tokens": 1},
    ]


async def test_child_steps_are_reported_at_their_place_in_the_parent() -> None:
    reporter = RecordingReporter()
    child = Pipeline(name="c", steps=(AgentStep(name="inner", agent=FuncAgent(lambda x: x)),))
    parent = Pipeline(steps=(WorkflowStep(name="sub", pipeline=child),))
    await Engine(store=MemoryStore(), reporter=reporter).run(parent, "x")
    assert reporter.started == ["sub", "sub/inner"]
    assert [r.path for r in reporter.finished] == ["sub/inner", "sub"]


async def test_nested_sub_workflows_pause_and_resume_through_the_top_run() -> None:
    calls, store = Calls(), MemoryStore()

    def top() -> Pipeline:
        middle = Pipeline(name="middle", steps=(WorkflowStep(name="inner", pipeline=child_pipeline(calls)),))
        return Pipeline(name="top", steps=(WorkflowStep(name="outer", pipeline=middle),))

    paused = await Engine(store=store).run(top(), "tea", run_id="p7")
    assert paused.pause is not None and paused.pause.path == "outer/inner/approve"
    middle_id = child_run_id("p7", "outer")
    inner_id = child_run_id(middle_id, "inner")
    statuses = {r.run_id: (r.status, r.parent_run_id, r.pause_path) for r in await store.list_runs()}
    assert statuses == {
        "p7": ("paused", None, "outer/inner/approve"),
        middle_id: ("paused", "p7", "inner/approve"),
        inner_id: ("paused", middle_id, "approve"),
    }
    resumed = await Engine(store=store, human=ScriptedHuman(["no"])).resume(top(), "p7")
    assert (resumed.status, resumed.output) == ("completed", "final (draft of tea / no)")
    assert calls.count == {"draft": 1, "final": 1}
    assert {r.status for r in await store.list_runs()} == {"completed"}


async def test_each_iteration_of_a_loop_gets_its_own_child_run() -> None:
    child = Pipeline(name="c", steps=(AgentStep(name="inner", input=Template("seen {{ initial_prompt }}")),))
    loop = LoopStep(name="again", max_loops=2, body=(WorkflowStep(name="sub", pipeline=child),))
    store = MemoryStore()
    outcome = await Engine(store=store).run(Pipeline(steps=(loop,)), "x", run_id="p8")
    assert outcome.output == "seen seen x"
    children = {r.run_id: r.input for r in await children_of(store, "p8")}
    assert children == {child_run_id("p8", "again/1/sub"): "x", child_run_id("p8", "again/2/sub"): "seen x"}


async def test_what_comes_back_is_what_the_step_names() -> None:
    """outputs copy named values; without them updates_context merges the child's scratchpad (its stop_when
    bookkeeping excepted); with neither only the output comes back; a missing path fails the step."""
    child = Pipeline(
        name="c",
        steps=(
            AgentStep(name="note", agent=FuncAgent(lambda _: {"action": "finish", "n": 2}), sink_to="kept"),
            AgentStep(name="last", input=Template("done")),
        ),
    )
    show = AgentStep(name="show", input=Template("{{ context.scratchpad }}"))
    cases: list[tuple[dict[str, Any], Any]] = [
        ({}, {}),
        ({"sink_to": "result"}, {"result": "done"}),
        ({"updates_context": True}, {"kept": {"action": "finish", "n": 2}}),
        (
            {"outputs": (OutputMapping("steps.note.output.n", "n"), OutputMapping("output", "context.scratchpad.o"))},
            {"n": 2, "o": "done"},
        ),
    ]
    for options, scratchpad in cases:
        parent = Pipeline(steps=(WorkflowStep(name="sub", pipeline=child, **options), show))
        outcome = await Engine(store=MemoryStore()).run(parent, "x")
        assert (outcome.status, outcome.output) == ("completed", scratchpad), options

    for path, message in (
        ("scratchpad.kept.gone", "sub-workflow 'sub' finished without scratchpad.kept.gone"),
        (
            "scratchpad.nope.deeper",
            "sub-workflow 'sub' finished without scratchpad.nope (outputs reads scratchpad.nope.deeper)",
        ),
    ):
        missing = WorkflowStep(name="sub", pipeline=child, outputs=(OutputMapping(path, "g"),))
        failed = await Engine(store=MemoryStore()).run(Pipeline(steps=(missing,)), "x")
        assert (failed.status, failed.failed_step) == ("failed", "sub")
        assert failed.error is not None and failed.error.message == message
