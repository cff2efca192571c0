"""Lens on a run whose agent step used tools (issue 32): the model turns (``P/model/K``) and tool calls
(``P/tool/N``, with their arguments, result, duration and approval ``P/tool/N/approve``) are the agent step's
children in ``lens show`` and ``lens trace``, plain and ``--json``; a secret in a tool's arguments or result
is masked there, though the journal keeps it whole (a resumed run sends the model what it was sent). Also a
run paused at an approval, and a call whose process died before its record was committed.

The runs are made by the engine (Python API: a scripted model asking for in-test tools) into a SQLite store,
then read through the real ``flujo lens`` command.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from core import AgentStarted, AgentStep, Engine, Pipeline, Redactor, RunOutcome, RunRecord, StepRecord, TraceEvent
from core.agents import ScriptedAgent
from core.steps.kinds import ToolUse
from core.store import MemoryStore, open_store
from core.testing import ScriptedHuman
from flujo_cli import exit_codes
from lens import StepNode, build_tree, load_run
from lens.labels import label
from tests.support.cli_helpers import flujo
from tests.support.tool_loops import FunctionTool

API_KEY = "sk-proj-Ab12Cd34Ef56Gh78Ij90Kl"
PASSWORD = "Tr0ub4dor&3xyz"
RUN = "7001100c00000001"
REPLIES: tuple[Any, ...] = (
    {"tool": "lookup", "arguments": {"id": "42", "note": f"key {API_KEY}"}},
    {
        "tool_calls": [{"name": "lookup", "arguments": {"id": "7"}}, {"name": "delete", "arguments": {"id": "7"}}],
        "text": "Checking two things.",
    },
    "Customer 42 is Ada.",
)
LOOP_PATHS = [
    "answer/model/1",
    "answer/tool/1",
    "answer/model/2",
    "answer/tool/2",
    "answer/tool/3",
    "answer/model/3",
]


def _lookup(arguments: Any) -> str:
    return f"customer {arguments['id']}: Ada, password={PASSWORD}"


async def _record(db: Path, answers: Sequence[str]) -> RunOutcome:
    lookup = FunctionTool("lookup", _lookup)
    delete = FunctionTool("delete", lambda arguments: "deleted", approve="ask")
    use = ToolUse(tools=(lookup, delete), agent="helper")
    pipeline = Pipeline(steps=(AgentStep(name="answer", agent=ScriptedAgent(REPLIES), tools=use),), name="support")
    db.parent.mkdir(parents=True, exist_ok=True)
    async with await open_store(str(db)) as store:
        engine = Engine(store=store, human=ScriptedHuman(answers))
        return await engine.run(pipeline, "Who is customer 42?", run_id=RUN)


@pytest.fixture
def declined(state_db: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The run, the person declining the ``delete`` call; lens output is not cut at 80 columns."""
    monkeypatch.setenv("COLUMNS", "200")
    outcome = asyncio.run(_record(state_db, ["n"]))
    assert outcome.status == "completed", outcome.error
    assert outcome.output == "Customer 42 is Ada."
    return state_db


def _no_secret(text: str) -> None:
    assert API_KEY not in text and PASSWORD not in text
    assert "[REDACTED]" in text


def test_the_journal_keeps_a_tool_s_arguments_and_result_whole(declined: Path) -> None:
    async def read() -> dict[str, StepRecord]:
        async with await open_store(str(declined), mode="read") as store:
            return {step.path: step for step in await store.steps(RUN)}

    steps = asyncio.run(read())
    call = steps["answer/tool/1"]
    assert call.input == {"id": "call_1", "arguments": {"id": "42", "note": f"key {API_KEY}"}}
    assert call.output["content"] == f"customer 42: Ada, password={PASSWORD}"
    assert steps["answer/tool/3"].output["declined"] is True
    assert steps["answer/tool/3/approve"].output == "n"


def test_show_has_the_turns_and_calls_as_children_of_the_agent_step(declined: Path) -> None:
    code, out, err = flujo(["lens", "show", RUN])
    assert code == exit_codes.OK, err
    steps = [line for line in out.splitlines() if "✓" in line and "·" in line and "run " not in line]
    names = [line.strip("│├└─ ").split("  ")[0] for line in steps]
    assert names == [
        "✓ answer",
        "✓ turn 1",
        "✓ lookup",
        "✓ turn 2",
        "✓ lookup",
        "✓ delete",
        "✓ approve:delete",
        "✓ turn 3",
    ]
    depth = [len(line) - len(line.lstrip("│├└─ ")) for line in steps]
    assert depth[1:6] == [depth[1]] * 5 and depth[1] > depth[0]  # the agent step's children, side by side
    assert depth[6] > depth[5]  # the approval below its call
    assert "not recorded" not in out and "?" not in "".join(names)  # no step made of a path's segment
    assert 'in    {"id": "42", "note": "key [REDACTED]"}' in out
    assert "out   customer 42: Ada, password=[REDACTED]" in out
    assert "out   declined by the person" in out
    assert 'out   Checking two things. ⏎ calls lookup({"id": "7"}) ⏎ calls delete({"id": "7"})' in out
    _no_secret(out)


def test_trace_shows_each_call_with_its_arguments_result_and_approval(declined: Path) -> None:
    code, out, err = flujo(["lens", "trace", RUN, "--expand", "all"])
    assert code == exit_codes.OK, err
    assert 'tool.call  lookup({"id": "42", "note": "key [REDACTED]"}) → customer 42: Ada,' in out  # then it wraps
    assert 'tool.call  delete({"id": "7"}) declined by the person' in out
    assert 'asked Allow helper to call delete({"id": "7"})? [y/N]  answered n' in out
    # Turn 3 was sent what the model asked for and what each call gave back.
    assert 'assistant calls lookup({"id": "42", "note": "key [REDACTED]"})' in out
    assert "assistant Checking two things." in out and 'calls delete({"id": "7"})' in out
    assert "reply   Checking two things." in out
    assert "tool      The person declined this call of delete; it was not run." in out
    _no_secret(out)
    code, out, err = flujo(["lens", "trace", RUN])  # collapsed
    assert code == exit_codes.OK, err
    _no_secret(out)


def _children(node: dict[str, Any]) -> list[tuple[str, str | None, str]]:
    return [(child["path"], child["kind"], child["status"]) for child in node["children"]]


@pytest.mark.parametrize("command", ["show", "trace"])
def test_the_json_documents_nest_the_loop_under_the_agent_step(declined: Path, command: str) -> None:
    code, out, err = flujo(["lens", command, RUN, "--json"])
    assert code == exit_codes.OK, err
    document = json.loads(out)
    [answer] = document["steps" if command == "show" else "spans"]
    assert (answer["path"], answer["kind"], answer["usage"]["requests"]) == ("answer", "step", 3)
    kinds = {"model": "model", "tool": "tool"}
    assert _children(answer) == [(path, kinds[path.split("/")[1]], "completed") for path in LOOP_PATHS]
    delete = answer["children"][4]
    assert (delete["name"], delete["input"]["arguments"], delete["output"]["declined"]) == ("delete", {"id": "7"}, True)
    assert _children(delete) == [("answer/tool/3/approve", "hitl", "completed")]
    assert [child["name"] for child in answer["children"]] == [
        "turn 1",
        "lookup",
        "turn 2",
        "lookup",
        "delete",
        "turn 3",
    ]
    if command == "trace":
        turn = answer["children"][5]
        [prompt] = [event["payload"] for event in turn["events"] if event["kind"] == "agent.prompt"]
        asked = [m for m in prompt["messages"] if m.get("tool_calls")]
        names = [[call["name"] for call in json.loads(m["tool_calls"])] for m in asked]  # one JSON text each
        assert names == [["lookup"], ["lookup", "delete"]]
        results = [m["tool_call_id"] for m in prompt["messages"] if m["role"] == "tool"]
        assert results == ["call_1", "call_1", "call_2"]
    _no_secret(out)


def test_a_run_paused_at_an_approval_shows_the_question_below_its_call(state_db: Path) -> None:
    outcome = asyncio.run(_record(state_db, []))
    assert outcome.status == "paused" and outcome.pause is not None
    assert outcome.pause.path == "answer/tool/3/approve"
    code, out, err = flujo(["lens", "show", RUN, "--json"])
    assert code == exit_codes.OK, err
    [answer] = json.loads(out)["steps"]
    assert answer["status"] == "paused"
    assert _children(answer) == [
        ("answer/model/1", "model", "completed"),
        ("answer/tool/1", "tool", "completed"),
        ("answer/model/2", "model", "completed"),
        ("answer/tool/2", "tool", "completed"),
        ("answer/tool/3", None, "paused"),
    ]
    waiting = answer["children"][4]
    assert waiting["name"] == "call 3"
    assert [(c["type"], c["path"], c["status"]) for c in waiting["children"]] == [
        ("step", "answer/tool/3/approve", "paused")
    ]


async def test_a_call_whose_process_died_before_its_commit_shows_its_attempt() -> None:
    store = MemoryStore()
    await store.create_run(RunRecord("dead000000000001", "support", "interrupted", input="go", created_at=1.0))
    turn = {"text": "", "tool_calls": [{"id": "call_1", "name": "lookup", "arguments": {"id": "42"}}], "model": "m"}
    await store.record_step(
        StepRecord("dead000000000001", "answer/model/1", "answer", "model", "completed", output=turn, started_at=2.0),
        [],
    )
    started = AgentStarted(agent="tool:lookup", attempt=1)
    await store.record_events(
        "dead000000000001", [TraceEvent(started.kind, "answer/tool/1", started.to_payload(), 3.0)]
    )
    root = build_tree(await load_run(store, "dead000000000001", redactor=Redactor()))
    [answer] = root.children
    assert isinstance(answer, StepNode) and answer.status == "interrupted"
    turn_node, call = answer.children
    assert isinstance(turn_node, StepNode) and isinstance(call, StepNode)
    assert (turn_node.name, call.name, call.status) == ("turn 1", "call 1", "interrupted")
    assert [label(event).plain for event in call.children] == ["agent.started  tool:lookup started, attempt 1"]


def test_a_tool_s_name_picks_its_calls(declined: Path) -> None:
    code, out, err = flujo(["lens", "trace", RUN, "--step", "lookup", "--expand", "none"])
    assert code == exit_codes.OK, err  # its two calls are not two steps of one name
    assert out.count("tool.call  lookup(") == 2 and "delete" not in out and "turn 1" not in out
    code, out, err = flujo(["lens", "trace", RUN, "--step", "answer/delete", "--json"])
    assert code == exit_codes.OK, err
    [answer] = json.loads(out)["spans"]
    assert [child["name"] for child in answer["children"]] == ["delete"]
