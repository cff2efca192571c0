"""A tool-using agent step in a ``conversation: true`` loop, over two runs of one thread (issue 32): what the
thread keeps (``flujo threads show``, text and ``--json``), the loop's ``output: {text:
conversation_history}`` and what the next run's model is sent hold the question and the answers only; no
tool call, no tool's result, no call JSON. The tool calls are in the journal and the trace (lens), not in
the conversation.

The blueprint is compiled as any, then its agent step is given an in-test tool (``tests.support.tool_loops``);
the runs are made through the engine into a SQLite store, then read with the real ``flujo threads``.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from blueprints import load_pipeline
from core import Engine, Pipeline, RunOutcome, Settings
from core.steps.kinds import ToolUse
from core.store import open_store
from core.testing import ScriptedHuman
from flujo_cli import exit_codes
from tests.support.cli_helpers import flujo
from tests.support.tool_loops import FunctionTool, with_tools

CALCULATOR = """\
version: "0.1"
name: calculator
agents:
  helper:
    model: scripted
    replies:
      - {tool: add, arguments: {a: 2, b: 2}}
      - "It is 4."
      - {tool_calls: [{name: add, arguments: {a: 4, b: 3}}, {name: add, arguments: {a: 7, b: 0}}], text: "Adding."}
      - "It is 7."
steps:
  - kind: loop
    name: chat
    loop:
      conversation: true
      max_loops: 1
      body:
        - {kind: step, name: answer, uses: agents.helper}
        - {kind: hitl, name: more, message: "{{ steps.answer.output }}"}
      output: {text: conversation_history}
"""
# What a tool loop could leave behind: its results, its calls' JSON, the text said with the calls.
ARTIFACTS = ('"tool"', "tool_call", "arguments", "Adding.", "call_1")


def _pipeline(tmp_path: Path, tool: FunctionTool) -> Pipeline:
    blueprint = tmp_path / "calculator.yaml"
    blueprint.write_text(CALCULATOR, encoding="utf-8")
    compiled = load_pipeline(blueprint, Settings())
    return with_tools(compiled, "answer", ToolUse(tools=(tool,), agent="helper"))


def _total(arguments: Any) -> str:
    return f"sum={arguments['a'] + arguments['b']}"


async def _two_runs(db: Path, pipeline: Pipeline) -> list[RunOutcome]:
    db.parent.mkdir(parents=True, exist_ok=True)
    async with await open_store(str(db)) as store:
        first = await Engine(store=store, human=ScriptedHuman(["Thanks"])).run(pipeline, "2+2?", thread="sums")
        second = await Engine(store=store, human=ScriptedHuman(["Bye"])).run(pipeline, "4+3?", thread="sums")
    return [first, second]


def _no_artifact(text: str, where: str) -> None:
    found = [artifact for artifact in ("sum=", *ARTIFACTS) if artifact in text]
    assert not found, f"{where} holds {found}"


def test_threads_and_the_loop_s_text_hold_no_tool_artifact(state_db: Path, tmp_path: Path) -> None:
    tool = FunctionTool("add", _total)
    first, second = asyncio.run(_two_runs(state_db, _pipeline(tmp_path, tool)))
    assert (first.status, second.status) == ("completed", "completed"), (first.error, second.error)
    assert [arguments for arguments, _ in tool.calls] == [{"a": 2, "b": 2}, {"a": 4, "b": 3}, {"a": 7, "b": 0}]
    assert first.output == "User: 2+2?\nAssistant: It is 4.\nUser: Thanks"
    assert second.output == f"{first.output}\nUser: 4+3?\nAssistant: It is 7.\nUser: Bye"  # the thread's, all of it

    code, out, err = flujo(["threads", "show", "sums", "--json"])
    assert code == exit_codes.OK, err
    turns = json.loads(out)["turns"]
    assert [(t["role"], t["content"]) for t in turns] == [
        ("user", "2+2?"),
        ("assistant", "It is 4."),
        ("user", "Thanks"),
        ("user", "4+3?"),
        ("assistant", "It is 7."),
        ("user", "Bye"),
    ]
    _no_artifact(out, "threads show --json")
    code, out, err = flujo(["threads", "show", "sums"])
    assert code == exit_codes.OK, err
    assert "  Assistant: It is 4." in out.splitlines() and "  Assistant: It is 7." in out.splitlines()
    _no_artifact(out, "threads show")

    async def sent() -> list[dict[str, Any]]:
        async with await open_store(str(state_db), mode="read") as store:
            events = await store.events(second.run_id)
        return [e.payload for e in events if e.kind == "agent.prompt" and e.path == "chat/1/answer/model/1"]

    [prompt] = asyncio.run(sent())  # the second run's first turn: the first run's conversation, then its input
    assert [(m["role"], m["content"]) for m in prompt["messages"]] == [
        ("user", "2+2?"),
        ("assistant", "It is 4."),
        ("user", "Thanks"),
        ("user", "4+3?"),
    ]
    _no_artifact(json.dumps(prompt), "the next run's first prompt")
