"""``command:`` tools (core.tools.command_tool) in an agent step's tool loop: the arguments go to the program's
stdin as JSON and its stdout comes back (parsed as JSON when it parses); it runs under the rules of ``command:``
agents (the run's facts in its environment, its process group recorded, bounded in time and output); a program
that fails, runs out of time or prints too much is an error the model reads, never a failed run."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from core import AgentStep, BoundsSettings, Engine, Pipeline, use_bounds
from core.agents.offline import ScriptedAgent
from core.model.events import ProcessStarted
from core.model.records import StepRecord
from core.steps.kinds import ToolUse
from core.store import MemoryStore
from core.testing import ScriptedHuman
from core.tools.command_tool import CommandTool
from core.tools.kinds import build_runner_tool
from core.tools.spec import ToolSpec

FACTS = (
    "import json, os, sys; arguments = json.load(sys.stdin); "
    "print(json.dumps({'got': arguments, 'run': os.environ['FLUJO_RUN_ID'], "
    "'path': os.environ['FLUJO_STEP_PATH'], 'attempt': os.environ['FLUJO_ATTEMPT']}))"
)


def command_tool(code: str, **fields: Any) -> CommandTool:
    tool = build_runner_tool(ToolSpec(name="lookup", command=(sys.executable, "-c", code), **fields))
    assert isinstance(tool, CommandTool)
    return tool


def pipeline(agent: ScriptedAgent, tool: CommandTool) -> Pipeline:
    return Pipeline(steps=(AgentStep(name="answer", agent=agent, tools=ToolUse(tools=(tool,), agent="helper")),))


async def records(store: MemoryStore, run_id: str) -> dict[str, StepRecord]:
    return {record.path: record for record in await store.steps(run_id)}


async def test_the_arguments_go_to_stdin_and_the_json_stdout_is_the_result() -> None:
    agent = ScriptedAgent([{"tool": "lookup", "arguments": {"id": "42"}}, "found"])
    store = MemoryStore()
    outcome = await Engine(store=store).run(pipeline(agent, command_tool(FACTS)), "who is 42?")
    assert outcome.status == "completed", outcome.error
    output = (await records(store, outcome.run_id))["answer/tool/1"].output
    facts = {"got": {"id": "42"}, "run": outcome.run_id, "path": "answer/tool/1", "attempt": "1"}
    assert output["value"] == facts and json.loads(output["content"]) == facts and output["error"] is False
    if sys.platform.startswith("linux"):  # its process group is recorded, for a resumed run to end what is left
        events = [event.data for event in await store.events(outcome.run_id) if event.path == "answer/tool/1"]
        assert any(isinstance(event, ProcessStarted) and event.agent == "tool:lookup" for event in events)


async def test_text_on_stdout_is_the_result_as_text() -> None:
    agent = ScriptedAgent([{"tool": "lookup", "arguments": {}}, "ok"])
    store = MemoryStore()
    outcome = await Engine(store=store).run(pipeline(agent, command_tool("print('Ada Lovelace')")), "who?")
    assert outcome.status == "completed", outcome.error
    output = (await records(store, outcome.run_id))["answer/tool/1"].output
    assert output["content"] == "Ada Lovelace" and output["value"] == "Ada Lovelace"


async def test_the_definition_is_the_blueprint_s_or_says_what_runs() -> None:
    schema = {"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]}
    given = command_tool("print(1)", description="Look up a customer by id", input_schema=schema)
    assert given.approve == "never"
    definition = await given.definition(MemoryToolSessions())
    assert (definition.name, definition.description, dict(definition.input_schema)) == (
        "lookup", "Look up a customer by id", schema,
    )  # fmt: skip
    plain = await command_tool("print(1)", approve="ask").definition(MemoryToolSessions())
    assert plain.description.startswith("Runs ") and plain.input_schema["type"] == "object"
    assert command_tool("print(1)", approve="ask").approve == "ask"


class MemoryToolSessions:
    """What a tool that holds nothing is given as the run's sessions."""

    def get(self, key: str) -> Any:
        return None

    def put(self, key: str, value: Any, close: Any) -> None:
        raise AssertionError("a command tool holds nothing")

    async def aclose(self) -> list[str]:
        return []


@pytest.mark.parametrize(
    ("code", "fields", "says"),
    [
        (
            "import sys; print('no customer 42', file=sys.stderr); sys.exit(2)",
            {},
            "exited with status 2: no customer 42",
        ),
        ("import time; time.sleep(600)", {"timeout": 0.5}, "did not finish within 0.5 s"),
        ("print('x' * 5000)", {}, "printed more than 2,000 bytes"),
    ],
    ids=["exit-status", "timeout", "too-much-output"],
)
async def test_a_failing_program_is_an_error_the_model_reads(code: str, fields: dict[str, Any], says: str) -> None:
    use_bounds(BoundsSettings(agent_output_max_bytes=2000))  # this test's task only
    agent = ScriptedAgent([{"tool": "lookup", "arguments": {"id": "42"}}, "Sorry, the lookup failed."])
    store = MemoryStore()
    outcome = await Engine(store=store).run(pipeline(agent, command_tool(code, **fields)), "who is 42?")
    assert outcome.status == "completed", outcome.error
    assert outcome.output == "Sorry, the lookup failed."
    output = (await records(store, outcome.run_id))["answer/tool/1"].output
    assert output["error"] is True
    assert output["content"].startswith("Error: tools.lookup: ") and says in output["content"], output["content"]


async def test_a_program_that_does_not_exist_is_an_error_the_model_reads() -> None:
    tool = build_runner_tool(ToolSpec(name="lookup", command=("no-such-program-flujo",)))
    assert isinstance(tool, CommandTool)
    agent = ScriptedAgent([{"tool": "lookup", "arguments": {}}, "no luck"])
    store = MemoryStore()
    outcome = await Engine(store=store).run(pipeline(agent, tool), "go")
    assert outcome.status == "completed", outcome.error
    output = (await records(store, outcome.run_id))["answer/tool/1"].output
    assert output["error"] is True and "cannot start no-such-program-flujo" in output["content"]


async def test_a_resumed_run_does_not_run_a_finished_command_again(tmp_path: Path) -> None:
    count = tmp_path / "count"
    code = f"import pathlib; p = pathlib.Path({str(count)!r}); p.write_text(p.read_text() + 'x' if p.exists() else 'x')"
    ask = command_tool(code, approve="ask")
    replies: list[Any] = [{"tool": "lookup", "arguments": {}}, {"tool": "lookup", "arguments": {}}, "done"]
    store = MemoryStore()
    first = await Engine(store=store, human=ScriptedHuman(["y"])).run(pipeline(ScriptedAgent(replies), ask), "go")
    assert first.status == "paused", first.error  # the second call waits for the person
    assert count.read_text() == "x"
    resumed = await Engine(store=store, human=ScriptedHuman(["y"])).resume(
        pipeline(ScriptedAgent(replies), ask), first.run_id
    )
    assert resumed.status == "completed", resumed.error
    assert count.read_text() == "xx"  # the first call ran once, the second once


def test_an_empty_command_is_refused_in_one_line() -> None:
    from core.model.errors import ConfigError

    with pytest.raises(ConfigError, match=r"tools\.lookup: command is empty"):
        CommandTool(ToolSpec(name="lookup", command=()))
