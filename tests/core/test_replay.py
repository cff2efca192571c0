"""``core.replay`` through the Engine: a run recorded in a store, then run again served from its recording
(``Engine(replay=Replay(...))``), with recordings edited as a case file may be (a tool call's arguments)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from core import AgentStep, Engine, Pipeline, RecordedCall, Recording, Redactor, Replay, ReplayDiverged, load_recording
from core.agents.base import BaseAgent
from core.agents.offline import ScriptedAgent
from core.model.calls import AgentCall, AgentReply
from core.steps.kinds import ToolUse
from core.store import MemoryStore
from core.testing import FuncAgent
from tests.support.tool_loops import FunctionTool

QUESTION = "What is 2 + 3?"


def adder() -> FunctionTool:
    return FunctionTool("add", lambda arguments: arguments["a"] + arguments["b"])


def pipeline(tool: FunctionTool) -> Pipeline:
    agent = ScriptedAgent([{"tool": "add", "arguments": {"a": 2, "b": 3}}, "It is 5."])
    use = ToolUse(tools=(tool,), max_tool_calls=4, agent="helper")
    return Pipeline(steps=(AgentStep(name="answer", agent=agent, tools=use),))


async def recorded(store: MemoryStore) -> Recording:
    tool = adder()
    outcome = await Engine(store=store).run(pipeline(tool), QUESTION)
    assert outcome.status == "completed" and outcome.output == "It is 5."
    assert [arguments for arguments, _ in tool.calls] == [{"a": 2, "b": 3}]
    return await load_recording(store, outcome.run_id, Redactor())


def with_arguments(recording: Recording, arguments: dict[str, Any]) -> Recording:
    """The recording with its tool call's arguments replaced (a case file edited by hand)."""
    data = recording.to_dict()
    [call] = [call for call in data["calls"] if call["kind"] == "tool"]
    call["arguments"] = arguments
    return Recording.from_dict(data)


async def test_an_unchanged_run_is_served_its_turns_and_tool_results_without_running_the_tool() -> None:
    store = MemoryStore()
    recording = await recorded(store)
    assert [(call.path, call.kind) for call in recording.calls] == [
        ("answer/model/1", "agent"),
        ("answer/tool/1", "tool"),
        ("answer/model/2", "agent"),
    ]
    tool, replay = adder(), Replay(recording)
    outcome = await Engine(store=store, replay=replay).run(pipeline(tool), QUESTION)
    assert outcome.status == "completed" and outcome.output == "It is 5."
    assert tool.calls == []  # served: the tool did not run
    assert replay.report()["clean"] is True and replay.report()["replayed_calls"] == 3


async def test_a_tool_call_whose_arguments_differ_from_the_recorded_ones_diverges_with_their_diff() -> None:
    store = MemoryStore()
    recording = with_arguments(await recorded(store), {"a": 2, "b": 4})
    tool = adder()
    outcome = await Engine(store=store, replay=Replay(recording)).run(pipeline(tool), QUESTION)
    assert outcome.status == "failed" and outcome.failed_step == "answer/tool/1"
    error = outcome.error
    assert isinstance(error, ReplayDiverged)
    assert (error.path, error.reason) == ("answer/tool/1", "the tool call differs from the recorded one")
    assert error.diff.splitlines() == [
        "--- recorded answer/tool/1",
        "+++ new answer/tool/1",
        "@@ -1,7 +1,7 @@",
        " {",
        '   "arguments": {',
        '     "a": 2,',
        '-    "b": 4',
        '+    "b": 3',
        "   },",
        '   "tool": "add"',
        " }",
    ]
    assert tool.calls == []  # it stopped before the call


async def test_with_live_the_tool_that_diverged_runs_and_the_run_goes_on_for_real() -> None:
    store = MemoryStore()
    recording = with_arguments(await recorded(store), {"a": 2, "b": 4})
    tool, replay = adder(), Replay(recording, mode="live")
    outcome = await Engine(store=store, replay=replay).run(pipeline(tool), QUESTION)
    assert outcome.status == "completed" and outcome.output == "It is 5."
    assert [arguments for arguments, _ in tool.calls] == [{"a": 2, "b": 3}]
    report = replay.report()
    assert (report["clean"], report["replayed_calls"]) == (False, 1)  # the first turn; the second was live
    assert [divergence["path"] for divergence in report["diverged"]] == ["answer/tool/1"]
    record = await store.get_run(outcome.run_id)
    assert record is not None and record.options is not None
    assert record.options["replay_report"]["diverged_at"] == "answer/tool/1"
    assert '+    "b": 3' in record.options["replay_report"]["diff"].splitlines()


def test_a_recording_knows_the_calls_made_inside_each_path() -> None:
    """What a served workflow tool's child did, or a finished step of a resumed run held, is looked up, not
    searched for among all the calls (a replay of a long run stays linear)."""
    paths = ["work/model/1", "work/tool/1", "work/tool/1/find", "work/tool/1/find/model/1", "work/model/2", "next"]
    recording = Recording("r", tuple(RecordedCall(path, "agent") for path in paths))
    assert recording.inside("work/tool/1") == (2, 3)
    assert recording.inside("work") == (0, 1, 2, 3, 4)
    assert recording.inside("next") == () and recording.inside("work/tool") == (1, 2, 3)
    replay = Replay(recording)
    replay.resumed(["work/tool/1"])  # a finished call: it, and what it did inside
    assert replay.log.used == {1, 2, 3}


class Waiting(BaseAgent):
    """An agent whose call never ends (until cancelled); ``called`` is set when it starts."""

    def __init__(self) -> None:
        self.called = asyncio.Event()

    @property
    def label(self) -> str:
        return "waiting"

    async def run(self, call: AgentCall) -> AgentReply:
        self.called.set()
        await asyncio.Event().wait()
        raise AssertionError("never answered")


async def test_a_replay_interrupted_records_how_far_it_had_come() -> None:
    """Ctrl-C (a cancelled run) in a live replay: the run is interrupted with its replay's report, so that
    its resume goes on as it left off (live from where it diverged)."""
    store = MemoryStore()
    agents = (FuncAgent(lambda text: f"one: {text}"), FuncAgent(lambda text: f"two: {text}"))
    recorded_run = await Engine(store=store).run(
        Pipeline(steps=tuple(AgentStep(name=name, agent=agent) for name, agent in zip("ab", agents, strict=True))),
        "hi",
    )
    recording = await load_recording(store, recorded_run.run_id, Redactor())
    waiting = Waiting()  # step b's agent now: its prompt is the same, its path another (c): a divergence
    pipeline = Pipeline(steps=(AgentStep(name="a", agent=agents[0]), AgentStep(name="c", agent=waiting)))
    engine = Engine(store=store, replay=Replay(recording, mode="live"))
    task = asyncio.create_task(engine.run(pipeline, "hi", run_id="cancelled"))
    await waiting.called.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    record = await store.get_run("cancelled")
    assert record is not None and record.status == "interrupted" and record.options is not None
    report = record.options["replay_report"]
    assert (report["replayed_calls"], report["diverged_at"], report["clean"]) == (1, "c", False)
