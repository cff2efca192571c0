"""A run as OpenTelemetry spans in the GenAI conventions (``lens.otel``), read with the SDK's in-memory exporter.

The runs are made by the engine (a scripted model asking for in-test tools, one call approved by the person)
into a store, or written straight into one (``tests/support/lens_runs.py``: a sub-workflow's child run, a
summary, failed steps, questions, a thread); then read back (``lens.load_run``, masked), planned
(``lens.otel.plan``) and made into the SDK's spans (``lens.otel.sending.make_spans``).
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from core import AgentStep, Engine, HitlStep, Pipeline, Redactor, RunStore, Template
from core.agents import ScriptedAgent
from core.steps.kinds import ToolUse
from core.store import MemoryStore, open_store
from core.testing import ScriptedHuman
from lens import load_run
from lens.otel.plan import plan_spans
from lens.otel.sending import make_spans
from lens.otel.target import OtlpTarget
from tests.support.lens_runs import CHILD, DEMO, THREADED, record_demo, record_others
from tests.support.tool_loops import FunctionTool

API_KEY = "sk-proj-Ab12Cd34Ef56Gh78Ij90Kl"
PASSWORD = "Tr0ub4dor&3xyz"
RUN = "07e1000000000001"
REPLIES: tuple[Any, ...] = (
    {"tool": "lookup", "arguments": {"id": "42", "note": f"key {API_KEY}"}},
    {"tool": "delete", "arguments": {"id": "7"}},
    "Customer 42 is Ada.",
)
CONTENT = {
    "gen_ai.input.messages",
    "gen_ai.output.messages",
    "gen_ai.tool.call.arguments",
    "gen_ai.tool.call.result",
    "flujo.question.message",
    "flujo.question.answer",
}


def _support(store: RunStore) -> Engine:
    return Engine(store=store, human=ScriptedHuman(["y"]))


async def _tool_run(store: RunStore) -> None:
    lookup = FunctionTool("lookup", lambda arguments: f"customer {arguments['id']}: Ada, password={PASSWORD}")
    delete = FunctionTool("delete", lambda arguments: "deleted", approve="ask")
    use = ToolUse(tools=(lookup, delete), agent="helper")
    pipeline = Pipeline(steps=(AgentStep(name="answer", agent=ScriptedAgent(REPLIES), tools=use),), name="support")
    outcome = await _support(store).run(pipeline, f"Who is customer 42? My key is {API_KEY}", run_id=RUN)
    assert outcome.status == "completed", outcome.error


async def _spans(store: RunStore, run_id: str, **options: Any) -> list[ReadableSpan]:
    snapshot = await load_run(store, run_id, redactor=Redactor())
    exporter = InMemorySpanExporter()
    exporter.export(make_spans(plan_spans(snapshot, **options)))
    return list(exporter.get_finished_spans())


def _one(spans: Sequence[ReadableSpan], name: str) -> ReadableSpan:
    [found] = [span for span in spans if span.name == name]
    return found


def _parent(span: ReadableSpan) -> int | None:
    return span.parent.span_id if span.parent is not None else None


def _attributes(span: ReadableSpan) -> dict[str, Any]:
    return dict(span.attributes or {})


async def test_a_tool_loop_is_an_agent_span_over_its_model_calls_and_tool_calls() -> None:
    store = MemoryStore()
    await _tool_run(store)
    spans = await _spans(store, RUN)

    assert sorted(span.name for span in spans) == [
        "chat scripted", "chat scripted", "chat scripted", "execute_tool delete", "execute_tool lookup",
        "invoke_agent answer", "invoke_workflow support",
    ]  # fmt: skip
    run, agent = _one(spans, "invoke_workflow support"), _one(spans, "invoke_agent answer")
    assert run.parent is None and _parent(agent) == run.context.span_id
    for span in spans:
        assert span.context.trace_id == int(RUN + "0" * 16, 16)  # the run's id, then zeros
        if span is not run and span is not agent:
            assert _parent(span) == agent.context.span_id, span.name
    calls = [span for span in spans if span.name == "chat scripted"]
    assert {span.kind for span in calls} == {SpanKind.CLIENT} and agent.kind == SpanKind.INTERNAL
    assert [_attributes(s)["flujo.step.path"] for s in sorted(calls, key=lambda s: s.start_time or 0)] == [
        "answer/model/1", "answer/model/2", "answer/model/3",
    ]  # fmt: skip
    assert {_attributes(span)["gen_ai.operation.name"] for span in calls} == {"chat"}
    assert _attributes(calls[0]) | {"gen_ai.provider.name": "flujo", "gen_ai.request.model": "scripted"} == (
        _attributes(calls[0])
    )
    assert _attributes(run)["gen_ai.operation.name"] == "invoke_workflow"
    assert _attributes(run)["gen_ai.workflow.name"] == "support"
    assert _attributes(agent)["gen_ai.operation.name"] == "invoke_agent"
    assert _attributes(agent)["gen_ai.agent.name"] == "answer"

    lookup, delete = _one(spans, "execute_tool lookup"), _one(spans, "execute_tool delete")
    assert _attributes(lookup) | {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "lookup"} == (
        _attributes(lookup)
    )
    # The ids the model gave its calls (a scripted model numbers the calls of each of its turns).
    assert _attributes(lookup)["gen_ai.tool.call.id"] == _attributes(delete)["gen_ai.tool.call.id"] == "call_1"
    # The person's approval of the call is an event of the call's span, with its path and how long it waited.
    [asked] = delete.events
    assert asked.name == "flujo.question"
    assert asked.attributes is not None and asked.attributes["flujo.step.path"] == "answer/tool/2/approve"
    assert isinstance(asked.attributes["flujo.wait_s"], float) and asked.attributes["flujo.wait_s"] >= 0
    assert all(span.status.status_code == StatusCode.UNSET for span in spans)


async def test_a_call_the_person_declined_is_no_error() -> None:
    store = MemoryStore()
    lookup = FunctionTool("lookup", lambda arguments: "customer 42: Ada")
    delete = FunctionTool("delete", lambda arguments: "deleted", approve="ask")
    use = ToolUse(tools=(lookup, delete), agent="helper")
    pipeline = Pipeline(steps=(AgentStep(name="answer", agent=ScriptedAgent(REPLIES), tools=use),), name="support")
    outcome = await Engine(store=store, human=ScriptedHuman(["n"])).run(pipeline, "Who is 42?", run_id=RUN)
    assert outcome.status == "completed", outcome.error
    spans = await _spans(store, RUN)
    delete_span = _one(spans, "execute_tool delete")
    assert _attributes(delete_span)["flujo.tool.declined"] is True
    assert "error.type" not in _attributes(delete_span)
    assert all(span.status.status_code == StatusCode.UNSET for span in spans)


async def test_content_is_left_out_unless_asked_and_then_masked_as_lens_shows_it() -> None:
    store = MemoryStore()
    await _tool_run(store)

    for span in await _spans(store, RUN):
        assert not CONTENT & set(_attributes(span)), span.name
        for event in span.events:
            assert not CONTENT & set(event.attributes or {}), span.name
        assert PASSWORD not in json.dumps(_attributes(span))

    spans = await _spans(store, RUN, capture_content=True)
    everything = json.dumps([[_attributes(s), [dict(e.attributes or {}) for e in s.events]] for s in spans])
    assert API_KEY not in everything and PASSWORD not in everything
    lookup = _attributes(_one(spans, "execute_tool lookup"))
    assert json.loads(str(lookup["gen_ai.tool.call.arguments"])) == {"id": "42", "note": "key [REDACTED]"}
    assert lookup["gen_ai.tool.call.result"] == "customer 42: Ada, password=[REDACTED]"
    first = min((s for s in spans if s.name == "chat scripted"), key=lambda s: s.start_time or 0)
    assert json.loads(str(_attributes(first)["gen_ai.input.messages"])) == [
        {"role": "user", "parts": [{"type": "text", "content": "Who is customer 42? My key is [REDACTED]"}]}
    ]
    assert json.loads(str(_attributes(first)["gen_ai.output.messages"])) == [
        {
            "role": "assistant",
            "parts": [
                {"type": "tool_call", "id": "call_1", "name": "lookup",
                 "arguments": {"id": "42", "note": "key [REDACTED]"}},
            ],
            "finish_reason": "tool_call",
        }
    ]  # fmt: skip
    last = max((s for s in spans if s.name == "chat scripted"), key=lambda s: s.start_time or 0)
    sent = json.loads(str(_attributes(last)["gen_ai.input.messages"]))
    response = {"type": "tool_call_response", "id": "call_1", "response": "deleted"}
    assert sent[-1] == {"role": "tool", "parts": [response]}
    [asked] = _one(spans, "execute_tool delete").events
    assert asked.attributes is not None and asked.attributes["flujo.question.answer"] == "y"


async def test_the_same_run_gives_the_same_spans_again_at_its_stored_times(tmp_path: Path) -> None:
    async with await open_store(str(tmp_path / "flujo.db")) as store:
        await _tool_run(store)
        first, again = await _spans(store, RUN), await _spans(store, RUN)
        steps = {step.path: step for step in await store.steps(RUN)}
        record = await store.get_run(RUN)

    def shape(spans: Sequence[ReadableSpan]) -> list[tuple[Any, ...]]:
        return sorted((s.name, s.context.span_id, _parent(s), s.start_time, s.end_time) for s in spans)

    assert shape(first) == shape(again)
    assert len({span.context.span_id for span in first}) == len(first)
    assert record is not None and record.finished_at is not None
    run = _one(first, "invoke_workflow support")
    assert (run.start_time, run.end_time) == (round(record.created_at * 1e9), round(record.finished_at * 1e9))
    tool = _one(first, "execute_tool lookup")
    stored = steps["answer/tool/1"]
    assert tool.start_time == round(stored.started_at * 1e9)
    assert tool.end_time == round((stored.started_at + stored.duration_s) * 1e9)


async def test_a_child_run_a_summary_failures_usage_and_questions() -> None:
    store = MemoryStore()
    await record_demo(store, secret=API_KEY)
    spans = await _spans(store, DEMO)
    run, child = _one(spans, "invoke_workflow plan_trip"), _one(spans, "invoke_workflow review")
    # The sub-workflow's run is a workflow span of the same trace, under the run that started it.
    assert _parent(child) == run.context.span_id and child.context.trace_id == run.context.trace_id
    assert _attributes(child)["flujo.run.id"] == CHILD and _attributes(child)["flujo.run.parent_id"] == DEMO
    assert _parent(_one(spans, "invoke_agent critique")) == child.context.span_id
    assert [e.attributes and e.attributes["flujo.step.path"] for e in child.events] == ["approve"]

    # Each model call: the model and provider from the agent's id, tokens and cost from its reply.
    clarify = [s for s in spans if s.name == "invoke_agent clarify"]
    assert len(clarify) == 2
    assert [_attributes(span)["flujo.step.path"] for span in clarify] == ["chat/1/clarify", "chat/2/clarify"]
    [call] = [s for s in spans if s.name == "chat gpt-4o-mini" and _parent(s) == clarify[0].context.span_id]
    called = _attributes(call)
    assert (called["gen_ai.provider.name"], called["gen_ai.request.model"]) == ("openai", "gpt-4o-mini")
    assert (called["gen_ai.usage.input_tokens"], called["gen_ai.usage.output_tokens"]) == (120, 12)
    assert called["flujo.usage.cost_usd"] == pytest.approx(0.000025)
    # The summary made for the second call is a model call under that agent step.
    [summary] = [s for s in spans if _attributes(s).get("flujo.purpose") == "summarize"]
    assert _parent(summary) == clarify[1].context.span_id

    # The run failed: its span says so, and so do the failed steps that are no span of their own.
    assert run.status.status_code == StatusCode.ERROR
    assert run.status.description == "template failed: 'steps.final' is undefined [REDACTED]"
    assert _attributes(run)["error.type"] == "failed"
    failed = [dict(e.attributes or {}) for e in run.events if e.name == "flujo.step.failed"]
    assert [f["flujo.step.path"] for f in failed] == ["reviews/facts/check", "report"]
    questions = [dict(e.attributes or {}) for e in run.events if e.name == "flujo.question"]
    assert [q["flujo.step.path"] for q in questions] == ["get_goal", "chat/1/answer"]
    assert API_KEY not in json.dumps([_attributes(s) for s in spans])


async def test_a_thread_is_the_session_of_every_span() -> None:
    store = MemoryStore()
    await record_others(store)
    spans = await _spans(store, THREADED)
    assert {span.name for span in spans} == {"invoke_workflow travel_notes", "invoke_agent note", "chat scripted"}
    for span in spans:
        assert _attributes(span)["session.id"] == "trip"
        assert _attributes(span)["gen_ai.conversation.id"] == "trip"


async def test_live_spans_of_a_resumed_run_are_sent_once_and_its_run_span_when_it_ends() -> None:
    """``since``: each process sends the spans it made; the run's span goes when the run ends, not at a pause."""
    store = MemoryStore()
    agent = ScriptedAgent(("What is your name?", "Hello, Ada."))
    pipeline = Pipeline(
        steps=(
            AgentStep(name="ask", agent=agent),
            HitlStep(name="name", message=Template("Your name?")),
            AgentStep(name="greet", agent=agent),
        ),
        name="greeter",
    )
    took = time.time()
    paused = await Engine(store=store, human=ScriptedHuman([])).run(pipeline, "hi", run_id=RUN)
    assert paused.status == "paused"
    snapshot = await load_run(store, RUN, redactor=Redactor())
    before = plan_spans(snapshot, since=took)
    assert sorted(span.name for span in before) == ["chat scripted", "invoke_agent ask"]  # no run span yet

    took = time.time()
    resumed = await Engine(store=store, human=ScriptedHuman(["Ada"])).resume(pipeline, RUN)
    assert resumed.status == "completed"
    snapshot = await load_run(store, RUN, redactor=Redactor())
    after = plan_spans(snapshot, since=took)
    assert sorted(span.name for span in after) == ["chat scripted", "invoke_agent greet", "invoke_workflow greeter"]
    whole = plan_spans(snapshot)
    assert sorted(span.span_id for span in [*before, *after]) == sorted(span.span_id for span in whole)
    [run] = [span for span in after if span.parent_id is None]
    assert [event.attributes["flujo.step.path"] for event in run.events] == ["name"]


@pytest.mark.parametrize(
    ("endpoint", "url"),
    [
        ("http://localhost:4318", "http://localhost:4318/v1/traces"),
        ("http://localhost:4318/", "http://localhost:4318/v1/traces"),
        ("http://localhost:6006/v1/traces", "http://localhost:6006/v1/traces"),
        ("https://otel.example.com/api/public/otel", "https://otel.example.com/api/public/otel/v1/traces"),
    ],
)
def test_an_endpoint_is_a_collector_s_base_url_as_opentelemetry_s_variable_gives_it(endpoint: str, url: str) -> None:
    assert OtlpTarget(endpoint).traces_url == url


async def test_a_run_paused_at_a_tool_call_s_approval_sends_its_calls_under_the_agent_step_to_come() -> None:
    """The agent step's record is committed when its tool loop ends; the turns and calls sent before (at the
    pause) are under its span all the same, which the resumed run sends."""
    store = MemoryStore()
    lookup = FunctionTool("lookup", lambda arguments: "Ada")
    delete = FunctionTool("delete", lambda arguments: "deleted", approve="ask")
    use = ToolUse(tools=(lookup, delete), agent="helper")
    pipeline = Pipeline(steps=(AgentStep(name="answer", agent=ScriptedAgent(REPLIES), tools=use),), name="support")
    took = time.time()
    paused = await Engine(store=store, human=ScriptedHuman([])).run(pipeline, "Who is 42?", run_id=RUN)
    assert paused.status == "paused"
    before = plan_spans(await load_run(store, RUN, redactor=Redactor()), since=took)
    took = time.time()
    resumed = await Engine(store=store, human=ScriptedHuman(["y"])).resume(pipeline, RUN)
    assert resumed.status == "completed", resumed.error
    snapshot = await load_run(store, RUN, redactor=Redactor())
    after = plan_spans(snapshot, since=took)
    whole = {span.span_id: span for span in plan_spans(snapshot)}

    assert sorted(span.name for span in before) == ["chat scripted", "chat scripted", "execute_tool lookup"]
    [agent] = [span for span in whole.values() if span.name == "invoke_agent answer"]
    assert {span.parent_id for span in before} == {agent.span_id}
    assert agent in after and not [span for span in before if span.span_id in {s.span_id for s in after}]
    assert {span.span_id: span.parent_id for span in [*before, *after]} == {
        span_id: span.parent_id for span_id, span in whole.items()
    }
