"""Resume correctness: a run paused, failed or crashed mid-way and resumed ends exactly like a run that was
never interrupted (same output, same context, same loop iteration counts), and a committed step never
executes again.

Each scenario builds its pipeline from a factory, so every attempt gets fresh agents (as a new process
would); a shared ``Calls`` log counts executions across attempts. The pipelines end with a ``snapshot``
step whose output is the whole context view, so comparing outputs compares contexts.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

import pytest

from core import (
    AgentStep,
    ConditionalStep,
    Engine,
    Expression,
    HitlStep,
    HumanQuestion,
    LoopStep,
    MapStep,
    ParallelStep,
    Pipeline,
    RunError,
    RunOutcome,
    StepRecord,
    Template,
    TraceEvent,
)
from core.agents import ScriptedAgent
from core.store import MemoryStore
from core.testing import FuncAgent, ScriptedHuman

SNAPSHOT = AgentStep(name="snapshot", input=Template("{{ context }}"))


def expression(source: str) -> Callable[[Any], Any]:
    compiled = Expression(source)
    return lambda scope: compiled.evaluate(scope)


class Calls:
    """Counts agent executions by step name, across attempts."""

    def __init__(self) -> None:
        self.count: Counter[str] = Counter()

    def agent(self, name: str, fn: Callable[[Any], Any]) -> FuncAgent:
        def call(value: Any) -> Any:
            self.count[name] += 1
            return fn(value)

        return FuncAgent(call)


class PathHuman:
    """Answers every question with a value derived from where it was asked (deterministic under concurrency)."""

    def __init__(self, *, silent: Sequence[str] = ()) -> None:
        self.silent = set(silent)  # paths left unanswered: asking there pauses the run
        self.asked: list[str] = []

    async def ask(self, question: HumanQuestion) -> str | None:
        self.asked.append(question.path)
        return None if question.path in self.silent else f"answer@{question.path}"


class Crash(BaseException):
    """Stands for kill -9: raised by the store, so nothing after it is recorded."""


class CrashingStore(MemoryStore):
    """A MemoryStore that crashes the run instead of recording its ``crash_at``-th step (1-based)."""

    def __init__(self, crash_at: int | None) -> None:
        super().__init__()
        self.crash_at = crash_at
        self.recorded = 0

    async def record_step(self, step: StepRecord, events: Sequence[TraceEvent]) -> None:
        if self.crash_at is not None and self.recorded + 1 == self.crash_at:
            raise Crash(step.path)
        self.recorded += 1
        await super().record_step(step, events)


async def loop_iterations(store: MemoryStore, run_id: str) -> dict[str, int]:
    """The iteration count of the last ``loop.exit`` event of each loop path."""
    return {e.path: e.payload["iterations"] for e in await store.events(run_id) if e.kind == "loop.exit"}


async def straight(factory: Callable[[Calls], Pipeline], input: Any = None) -> tuple[RunOutcome, MemoryStore, Calls]:
    calls, store = Calls(), MemoryStore()
    outcome = await Engine(store=store, human=PathHuman()).run(factory(calls), input)
    assert outcome.status == "completed", outcome.error
    return outcome, store, calls


def nested_pipeline(calls: Calls) -> Pipeline:
    """conditional › loop (init, context writes, hitl) › map, then parallel with a hitl in one branch."""
    loop = LoopStep(
        name="refine",
        max_loops=5,
        init=lambda ctx, _: ctx.scratchpad.update(rounds=[]),
        body=(
            AgentStep(
                name="draft",
                agent=calls.agent("draft", lambda n: {"n": n + 1, "rounds": [n]}),
                updates_context=True,
            ),
            HitlStep(name="review", message=Template("Round {{ steps.draft.output.n }}?"), sink_to="last_review"),
            MapStep(
                name="each",
                over=Expression("[1, 2]"),
                body=(AgentStep(name="times", agent=calls.agent("times", lambda x: x * 10)),),
            ),
            AgentStep(name="next", input=Template("{{ steps.draft.output.n }}")),
        ),
        exit_when=expression("previous_step >= 3"),
    )
    return Pipeline(
        steps=(
            AgentStep(name="start", agent=calls.agent("start", lambda x: x)),
            ConditionalStep(
                name="route",
                condition=expression("previous_step == 0"),
                branches=(("true", (loop,)), ("false", (AgentStep(name="skip"),))),
            ),
            ParallelStep(
                name="fan",
                branches=(
                    ("ask", (HitlStep(name="confirm", message=Template("Confirm {{ previous_step }}?")),)),
                    ("work", (AgentStep(name="work", agent=calls.agent("work", lambda x: f"worked {x}")),)),
                ),
            ),
            SNAPSHOT,
        )
    )


@pytest.mark.parametrize(
    "pause_at",
    [
        "route/true/refine/2/review",  # inside a loop inside a conditional
        "fan/ask/confirm",  # inside a parallel branch whose sibling is done
    ],
)
async def test_pause_then_resume_matches_an_uninterrupted_run(pause_at: str) -> None:
    expected, expected_store, _ = await straight(nested_pipeline, 0)

    calls, store = Calls(), MemoryStore()
    paused = await Engine(store=store, human=PathHuman(silent=[pause_at])).run(nested_pipeline(calls), 0)
    assert paused.status == "paused" and paused.pause is not None and paused.pause.path == pause_at
    before = Counter(calls.count)

    resumed = await Engine(store=store, human=PathHuman()).resume(nested_pipeline(calls), paused.run_id)
    assert resumed.status == "completed", resumed.error
    assert resumed.output == expected.output
    assert await loop_iterations(store, paused.run_id) == await loop_iterations(expected_store, expected.run_id)
    assert resumed.replayed > 0
    # every agent ran exactly as often, over both attempts, as in the uninterrupted run
    _, _, fresh = await straight(nested_pipeline, 0)
    assert calls.count == fresh.count
    assert all(calls.count[name] >= count for name, count in before.items())


async def test_pause_inside_a_map_item_resumes_at_that_item() -> None:
    def pipeline(calls: Calls) -> Pipeline:
        return Pipeline(
            steps=(
                MapStep(
                    name="m",
                    over=Expression("previous_step"),
                    body=(
                        AgentStep(name="double", agent=calls.agent("double", lambda x: x * 2)),
                        HitlStep(name="ok", message=Template("{{ previous_step }} ok?"), sink_to="seen"),
                    ),
                ),
                SNAPSHOT,
            )
        )

    expected, _, _ = await straight(pipeline, [1, 2, 3])
    calls, store = Calls(), MemoryStore()
    paused = await Engine(store=store, human=PathHuman(silent=["m/1/ok"])).run(pipeline(calls), [1, 2, 3])
    assert paused.status == "paused"
    assert calls.count["double"] == 2
    resumed = await Engine(store=store, human=PathHuman()).resume(pipeline(calls), paused.run_id)
    assert resumed.output == expected.output
    assert calls.count["double"] == 3  # items 0 and 1 were replayed
    assert resumed.output["hitl_history"][1]["message"] == "4 ok?"


async def test_failed_step_runs_again_on_resume_and_earlier_steps_do_not() -> None:
    attempts = {"n": 0}

    def flaky(x: Any) -> Any:
        attempts["n"] += 1
        if attempts["n"] == 2:  # the second call fails, once
            raise RunError("provider hiccup")
        return x + 1

    def pipeline(calls: Calls) -> Pipeline:
        return Pipeline(
            steps=(
                AgentStep(name="before", agent=calls.agent("before", lambda x: x)),
                LoopStep(
                    name="l",
                    max_loops=3,
                    body=(AgentStep(name="inc", agent=calls.agent("inc", flaky), sink_to="last"),),
                ),
                SNAPSHOT,
            )
        )

    calls, store = Calls(), MemoryStore()
    failed = await Engine(store=store).run(pipeline(calls), 0)
    assert failed.status == "failed" and failed.failed_step == "l/2/inc"
    resumed = await Engine(store=store).resume(pipeline(calls), failed.run_id)
    assert resumed.status == "completed"
    assert resumed.output["scratchpad"] == {"last": 3}
    assert calls.count == {"before": 1, "inc": 4}  # 3 iterations + the failed call, "before" once
    assert (await loop_iterations(store, failed.run_id))["l"] == 3


@pytest.mark.parametrize("crash_at", range(1, 26))  # the pipeline commits 25 steps: a crash at each of them
async def test_crash_at_any_commit_then_resume_matches_an_uninterrupted_run(crash_at: int) -> None:
    expected, _, fresh = await straight(nested_pipeline, 0)
    total = sum(fresh.count.values())

    calls, store = Calls(), CrashingStore(crash_at)
    with pytest.raises(Crash):
        await Engine(store=store, human=PathHuman()).run(nested_pipeline(calls), 0, run_id="crashy")
    assert (await store.get_run("crashy")).status == "running"  # type: ignore[union-attr]
    store.crash_at = None
    resumed = await Engine(store=store, human=PathHuman()).resume(nested_pipeline(calls), "crashy")
    assert resumed.status == "completed", resumed.error
    assert resumed.output == expected.output
    # only the step in flight when the store "died" may have executed twice
    assert total <= sum(calls.count.values()) <= total + 1


async def test_branch_failure_ignored_by_a_completed_parallel_is_not_retried_on_resume() -> None:
    """The parallel completed without the failed branch; resuming later must not run that branch again
    (it would spend a call, and a now-successful branch would change a context already built on)."""
    state = {"fail": True}

    def flaky(_: Any) -> Any:
        if state["fail"]:
            raise RunError("flaky")
        return {"late": "change"}

    def pipeline(calls: Calls) -> Pipeline:
        return Pipeline(
            steps=(
                ParallelStep(
                    name="p",
                    on_branch_failure="ignore",
                    branches=(
                        ("bad", (AgentStep(name="x", agent=calls.agent("x", flaky), updates_context=True),)),
                        (
                            "good",
                            (AgentStep(name="y", agent=calls.agent("y", lambda _: {"ok": 1}), updates_context=True),),
                        ),
                    ),
                ),
                HitlStep(name="ask", message=Template("go on?")),
                SNAPSHOT,
            )
        )

    calls, store = Calls(), MemoryStore()
    paused = await Engine(store=store, human=ScriptedHuman([])).run(pipeline(calls), None)
    assert paused.status == "paused"
    state["fail"] = False
    resumed = await Engine(store=store, human=ScriptedHuman(["yes"])).resume(pipeline(calls), paused.run_id)
    assert resumed.status == "completed"
    assert calls.count == {"x": 1, "y": 1}
    assert resumed.output["scratchpad"] == {"ok": 1}
    assert "x" not in resumed.output["steps"]


async def test_resume_reproduces_values_that_json_would_change() -> None:
    """Outputs and the run input come back from the store as JSON (integer keys become strings, tuples
    lists); the first attempt must see the same values, or a template that worked before a pause fails
    after it."""

    def pipeline(calls: Calls) -> Pipeline:
        return Pipeline(
            steps=(
                AgentStep(name="table", agent=calls.agent("table", lambda _: {1: "one", 2: ("t", "wo")})),
                HitlStep(name="ask", message=Template("which?")),
                AgentStep(
                    name="pick",
                    input=Template("{{ [steps.table.output['1'], steps.table.output['2'], initial_prompt['3']] }}"),
                ),
            )
        )

    calls, store = Calls(), MemoryStore()
    paused = await Engine(store=store, human=ScriptedHuman([])).run(pipeline(calls), {3: "three"})
    assert paused.status == "paused"
    resumed = await Engine(store=store, human=ScriptedHuman(["1"])).resume(pipeline(calls), paused.run_id)
    straight_run = await Engine(store=MemoryStore(), human=ScriptedHuman(["1"])).run(pipeline(Calls()), {3: "three"})
    assert resumed.status == straight_run.status == "completed"
    assert resumed.output == straight_run.output == ["one", ["t", "wo"], "three"]


async def test_agent_mutating_its_input_or_context_cannot_change_run_state() -> None:
    """Only an agent's return value changes state (it is what the journal replays): an agent that mutates
    the value it was given, or the context view, must not change the run's context."""

    def sneaky(value: Any) -> Any:
        value["sneaky"] = True
        return "done"

    class ContextMutator(FuncAgent):
        async def run(self, call: Any) -> Any:
            call.context["scratchpad"]["sneaky"] = True
            return await super().run(call)

    pipeline = Pipeline(
        steps=(
            AgentStep(name="make", input=Template("{{ {'a': 1} }}"), sink_to="made"),
            AgentStep(name="mutate", agent=FuncAgent(sneaky)),
            AgentStep(name="peek", agent=ContextMutator(lambda _: "peeked")),
            SNAPSHOT,
        )
    )
    outcome = await Engine(store=MemoryStore()).run(pipeline, None)
    assert outcome.status == "completed"
    assert outcome.output["scratchpad"] == {"made": {"a": 1}}
    assert outcome.output["steps"]["make"] == {"output": {"a": 1}}


async def test_failed_parallel_branch_resumes_without_rerunning_its_finished_sibling() -> None:
    state = {"fail": True}

    def flaky(x: Any) -> Any:
        if state["fail"]:
            state["fail"] = False
            raise RunError("flaky once")
        return {"b": x}

    def pipeline(calls: Calls) -> Pipeline:
        return Pipeline(
            steps=(
                ParallelStep(
                    name="p",
                    branches=(
                        (
                            "a",
                            (
                                AgentStep(name="a1", agent=calls.agent("a1", lambda x: {"a": x}), updates_context=True),
                                HitlStep(name="qa", message=Template("a?"), sink_to="qa"),
                            ),
                        ),
                        (
                            "b",
                            (
                                LoopStep(
                                    name="lb",
                                    max_loops=2,
                                    body=(AgentStep(name="b1", agent=calls.agent("b1", flaky), updates_context=True),),
                                ),
                            ),
                        ),
                    ),
                ),
                SNAPSHOT,
            )
        )

    calls, store = Calls(), MemoryStore()
    failed = await Engine(store=store, human=PathHuman()).run(pipeline(calls), 1)
    assert failed.status == "failed" and failed.failed_step == "p/b/lb/1/b1"
    resumed = await Engine(store=store, human=PathHuman()).resume(pipeline(calls), failed.run_id)
    assert resumed.status == "completed"
    assert calls.count == {"a1": 1, "b1": 3}  # a1 replayed; b1: the failed call, then two iterations
    assert resumed.output["scratchpad"] == {"a": 1, "qa": "answer@p/a/qa", "b": {"b": 1}}  # 2 iterations
    assert [entry["step"] for entry in resumed.output["hitl_history"]] == ["qa"]


async def test_a_replayed_step_of_a_scripted_model_skips_its_reply_and_its_repair() -> None:
    """A scripted model whose first reply did not match its output_schema took the next reply as the repair:
    the step took two replies, so replaying it skips two, and the step after the pause gets the reply it got
    in an uninterrupted run."""

    def pipeline() -> Pipeline:  # a fresh agent each attempt, as a new process would have
        schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
        model = ScriptedAgent(["not json", {"n": 1}, {"n": 2}], output_schema=schema)
        return Pipeline(
            steps=(
                AgentStep(name="first", agent=model),
                HitlStep(name="ask", message=Template("go on?")),
                AgentStep(name="second", agent=model),
            )
        )

    uninterrupted = await Engine(store=MemoryStore(), human=ScriptedHuman(["yes"])).run(pipeline(), "go")
    assert uninterrupted.output == {"n": 2}
    store = MemoryStore()
    paused = await Engine(store=store, human=ScriptedHuman([])).run(pipeline(), "go")
    assert paused.status == "paused"
    resumed = await Engine(store=store, human=ScriptedHuman(["yes"])).resume(pipeline(), paused.run_id)
    assert (resumed.status, resumed.output) == ("completed", {"n": 2})
