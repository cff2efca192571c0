"""A tool loop in a process of its own, which a test can SIGKILL at any point of the loop
(tests/core/test_tool_loop_kills.py).

    python -m tests.support.tool_loop_driver run|resume RUN_ID FOLDER

runs (or resumes) run ``RUN_ID`` of ``pipeline()`` against the SQLite store ``FOLDER/flujo.db`` and prints
how it ended as one line of JSON. The scripted model asks for two calls of the ``append`` tool, one per
turn, then answers; the second call asks the person first (a scripted ``y``). ``append`` appends a line
to ``FOLDER/effects`` (its visible side effect: the line names the call's argument and which attempt of
the call it was, ``ToolCallContext.attempt``); every model turn made (not replayed) appends a line to
``FOLDER/turns``.

With ``TOOL_LOOP_STOP=<point>`` in its environment, the process stops at that point of the loop: it
writes the point's name to ``FOLDER/stopped`` and waits there until it is killed (or until the process
that started it is gone). The points, in the order the loop passes them (``POINTS``):

* ``model/K``: inside model turn K, its reply made but not returned, so not committed;
* ``model/K/committed``: turn K's record committed (the reporter is told of it);
* ``tool/2/approve/committed``: the person's answer to the second call's question committed;
* ``tool/N/before`` and ``tool/N/after``: inside call N, before and after its side effect (not committed);
* ``tool/N/committed``: call N's record committed;
* ``answer/committed``: the agent step's record committed (the run not yet marked completed).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from core import AgentCall, AgentStep, ChatMessage, Engine, NullReporter, Pipeline, StepRecord
from core.agents import ScriptedAgent
from core.model.tools import Approve, ModelTurn, ToolCallContext, ToolDef, ToolMode, ToolOutcome
from core.ports import ToolSessions
from core.steps.kinds import ToolUse
from core.store import open_store
from core.testing import ScriptedHuman

STOP = "TOOL_LOOP_STOP"
POINTS = (
    "model/1",
    "model/1/committed",
    "tool/1/before",
    "tool/1/after",
    "tool/1/committed",
    "model/2",
    "model/2/committed",
    "tool/2/approve/committed",
    "tool/2/before",
    "tool/2/after",
    "tool/2/committed",
    "model/3",
    "model/3/committed",
    "answer/committed",
)
REPLIES: tuple[Any, ...] = (
    {"tool": "append", "arguments": {"line": "first"}},
    {"tool": "append_checked", "arguments": {"line": "second"}},
    "Appended two lines.",
)
ANSWER = "Appended two lines."


def stop_at(point: str, folder: Path) -> None:
    """Stop here when the test asked for ``point``: say so in ``folder/stopped``, then wait to be killed."""
    if os.environ.get(STOP) != point:
        return
    starter = os.getppid()
    said = folder / "stopped.part"
    said.write_text(point, encoding="utf-8")
    said.rename(folder / "stopped")  # whole when it appears
    # Not a deadline: the test kills this process; a test that died leaves none waiting for ever (this
    # process is handed to another parent when its own ends).
    while os.getppid() == starter:
        time.sleep(0.02)
    sys.exit(1)


def _log(path: Path, line: str) -> None:
    with path.open("a", encoding="utf-8") as file:
        file.write(line + "\n")
        file.flush()
        os.fsync(file.fileno())  # on disk before the point after it, where the process may be killed


class AppendTool:
    """Appends ``line`` to ``FOLDER/effects`` with the attempt it is; returns what it appended."""

    def __init__(self, name: str, folder: Path, *, approve: Approve = "never") -> None:
        self._name = name
        self._approve: Approve = approve
        self.folder = folder

    @property
    def name(self) -> str:
        return self._name

    @property
    def approve(self) -> Approve:
        return self._approve

    async def definition(self, sessions: ToolSessions) -> ToolDef:
        schema = {"type": "object", "properties": {"line": {"type": "string"}}, "required": ["line"]}
        return ToolDef(self._name, "Append a line to the effects file", schema)

    async def call(self, arguments: Mapping[str, Any], where: ToolCallContext, sessions: ToolSessions) -> ToolOutcome:
        number = where.path.rsplit("/", 1)[1]
        stop_at(f"tool/{number}/before", self.folder)
        _log(self.folder / "effects", f"{arguments['line']} attempt {where.attempt}")
        stop_at(f"tool/{number}/after", self.folder)
        return ToolOutcome(f"appended {arguments['line']!r}", arguments["line"])


class StoppingModel(ScriptedAgent):
    """The scripted model, which logs each turn it makes and may stop inside one."""

    def __init__(self, replies: Sequence[Any], folder: Path) -> None:
        super().__init__(replies)
        self.folder = folder
        self.turn = 0

    def replayed(self) -> None:
        super().replayed()
        self.turn += 1

    async def tool_turn(
        self, call: AgentCall, messages: Sequence[ChatMessage], tools: Sequence[ToolDef], mode: ToolMode
    ) -> ModelTurn:
        self.turn += 1
        turn = await super().tool_turn(call, messages, tools, mode)
        _log(self.folder / "turns", f"turn {self.turn}")
        stop_at(f"model/{self.turn}", self.folder)
        return turn


class StoppingReporter(NullReporter):
    """Stops right after the record of a point ``…/committed`` is committed (the engine then tells it)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def step_finished(self, record: StepRecord) -> None:
        point = record.path.removeprefix("answer/") if record.path != "answer" else "answer"
        stop_at(f"{point}/committed", self.folder)


def pipeline(folder: Path) -> Pipeline:
    tools = (AppendTool("append", folder), AppendTool("append_checked", folder, approve="ask"))
    use = ToolUse(tools=tools, max_tool_calls=4, agent="writer")
    return Pipeline(steps=(AgentStep(name="answer", agent=StoppingModel(REPLIES, folder), tools=use),), name="tools")


async def drive(command: str, run_id: str, folder: Path) -> dict[str, Any]:
    human = ScriptedHuman(["y"])
    async with await open_store(str(folder / "flujo.db")) as store:
        engine = Engine(store=store, human=human, reporter=StoppingReporter(folder))
        if command == "run":
            outcome = await engine.run(pipeline(folder), "Append two lines.", run_id=run_id)
        else:
            outcome = await engine.resume(pipeline(folder), run_id)
    return {
        "status": outcome.status,
        "output": outcome.output,
        "error": outcome.error.message if outcome.error is not None else None,
        "asked": [question.step for question in human.asked],
    }


def main(argv: Sequence[str]) -> None:
    command, run_id, folder = argv
    print(json.dumps(asyncio.run(drive(command, run_id, Path(folder)))), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
