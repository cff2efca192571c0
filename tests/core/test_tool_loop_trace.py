"""What a tool loop tells its watchers: each turn's ``agent.prompt`` event holds the messages as sent, the calls
an assistant message asked for (one JSON text, so that each message is text only and the store keeps a turn's
messages once: the next turn's list extends it) and which call a tool's result answers included, masked like
the rest; the
reporter is told of each call as it starts and ends, of an approval's question before it is asked (so that a
spinner stops first), and of each model turn's record."""

from __future__ import annotations

import contextlib
import json
import sqlite3
from pathlib import Path
from typing import Any

from core import AgentStep, ChatMessage, Engine, Pipeline, Redactor
from core.agents import ScriptedAgent
from core.model import codec
from core.model.tools import ToolCall
from core.steps.kinds import ToolUse
from core.store import MemoryStore, open_store
from core.testing import RecordingReporter, ScriptedHuman
from tests.support.tool_loops import FunctionTool

API_KEY = "sk-proj-Ab12Cd34Ef56Gh78Ij90Kl"


def _step(tool: FunctionTool, replies: list[Any]) -> Pipeline:
    use = ToolUse(tools=(tool,), max_tool_calls=20, agent="helper")
    return Pipeline(steps=(AgentStep(name="answer", agent=ScriptedAgent(replies), tools=use),))


async def test_a_turn_s_prompt_event_holds_the_calls_and_results_it_was_sent_masked() -> None:
    tool = FunctionTool("lookup", lambda arguments: f"found, key {API_KEY}")
    replies: list[Any] = [{"tool": "lookup", "arguments": {"note": f"key {API_KEY}"}}, "Found."]
    store = MemoryStore()
    outcome = await Engine(store=store).run(_step(tool, replies), "Look it up.")
    assert outcome.status == "completed", outcome.error
    prompts = {e.path: e.payload["messages"] for e in await store.events(outcome.run_id) if e.kind == "agent.prompt"}
    assert prompts["answer/model/1"] == [{"role": "user", "content": "Look it up."}]  # as before: role and content
    assert prompts["answer/model/2"] == [
        {"role": "user", "content": "Look it up."},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": '[{"id": "call_1", "name": "lookup", "arguments": {"note": "key [REDACTED]"}}]',  # one text
        },
        {"role": "tool", "content": "found, key [REDACTED]", "tool_call_id": "call_1"},
    ]


def test_the_redactor_masks_a_message_s_tool_parts_once_per_message() -> None:
    redactor = Redactor()
    asked = ChatMessage("assistant", "", tool_calls=(ToolCall("c1", "lookup", {"token": "abc", "id": "42"}),))
    result = ChatMessage("tool", f"key {API_KEY}", tool_call_id="c1", name="lookup")
    first = redactor.messages([asked, result])
    assert json.loads(first[0]["tool_calls"]) == [
        {"id": "c1", "name": "lookup", "arguments": {"token": "[REDACTED]", "id": "42"}}
    ]
    assert first[1] == {"role": "tool", "content": "key [REDACTED]", "tool_call_id": "c1"}
    again = redactor.messages([asked, result])
    assert again[0] is first[0] and again[1] is first[1]  # the same masked dicts: a message is masked once


async def test_the_reporter_is_told_of_each_call_its_approval_and_each_turn() -> None:
    tool = FunctionTool("delete", lambda arguments: "deleted", approve="ask")
    replies: list[Any] = [{"tool": "delete", "arguments": {"id": "7"}}, "Deleted."]
    reporter = RecordingReporter()
    engine = Engine(store=MemoryStore(), human=ScriptedHuman(["y"]), reporter=reporter)
    outcome = await engine.run(_step(tool, replies), "Delete 7.")
    assert outcome.status == "completed", outcome.error
    assert reporter.started == ["answer", "answer/tool/1", "answer/tool/1/approve"]
    assert [(r.path, r.kind) for r in reporter.finished] == [
        ("answer/model/1", "model"),
        ("answer/tool/1/approve", "hitl"),
        ("answer/tool/1", "tool"),
        ("answer/model/2", "model"),
        ("answer", "step"),
    ]


async def test_a_loop_s_prompts_are_stored_once_each_extending_the_last(tmp_path: Path) -> None:
    """Each turn's messages are the last turn's and the newest call and result: the SQLite store keeps each
    prompt as the last one's list plus what is new (``core.store.rows.shared_lists``), so a loop of N calls
    stores O(N) messages, not O(N²). Each message must be text only for that (its calls as one JSON text)."""
    tool = FunctionTool("lookup", lambda arguments: f"found {arguments['n']}")
    replies: list[Any] = [*({"tool": "lookup", "arguments": {"n": n}} for n in range(12)), "Done."]
    async with await open_store(str(tmp_path / "flujo.db")) as store:
        outcome = await Engine(store=store).run(_step(tool, replies), "Look up twelve.")
        assert outcome.status == "completed", outcome.error
    with contextlib.closing(sqlite3.connect(tmp_path / "flujo.db")) as db:
        stored = [codec.grow(codec.unpack(body)) for (body,) in db.execute("SELECT body FROM texts")]
    # Turn K sends 2K - 1 messages; from turn 5 (nine messages) on, a prompt is a stored list. Whole each
    # time, they would be 9 + 11 + ... + 25 = 153 messages; extending the last, 9 and then 2 a turn.
    assert sum(body.count('"role"') for body in stored) == 9 + 2 * 8
