"""Engine edges: control-flow signals stay signals everywhere, failed units of work leak nothing, parallel
merging, where a failure is reported, and errors from user hooks become recorded step failures."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from core import (
    Abort,
    AgentStep,
    ConditionalStep,
    Engine,
    Expression,
    HitlStep,
    LimitReached,
    Limits,
    LoopStep,
    MapStep,
    ParallelStep,
    Pause,
    Pipeline,
    RunError,
    RunOutcome,
    Step,
    Template,
)
from core.store import MemoryStore
from core.testing import FuncAgent, ScriptedHuman

SHOW = AgentStep(name="show", input=Template("{{ context }}"))


def expression(source: str) -> Callable[[Any], Any]:
    compiled = Expression(source)
    return lambda scope: compiled.evaluate(scope)


def fails(message: str = "broke") -> FuncAgent:
    def fn(_: Any) -> Any:
        raise RunError(message)

    return FuncAgent(fn)


def writes(**values: Any) -> FuncAgent:
    return FuncAgent(lambda _: dict(values))


async def run(*steps: Step, input: Any = None, answers: list[str] | None = None) -> tuple[RunOutcome, MemoryStore]:
    store = MemoryStore()
    pipeline = Pipeline(steps=steps)
    outcome = await Engine(store=store, human=ScriptedHuman(answers or [])).run(pipeline, input)
    return outcome, store


# --- control-flow signals -------------------------------------------------------------------------------


def raiser(signal: BaseException) -> Callable[[Any], Any]:
    def fn(_: Any) -> Any:
        raise signal

    return fn


SIGNALS: list[tuple[BaseException, str]] = [
    (Abort("stop now"), "aborted"),
    (LimitReached("token limit reached"), "limit_reached"),
    (Pause(step="s", path="s", message="wait"), "paused"),
]


@pytest.mark.parametrize(("signal", "status"), SIGNALS)
async def test_signals_from_agents_stay_signals_in_every_composite(signal: BaseException, status: str) -> None:
    agent = FuncAgent(raiser(signal))
    nested = ParallelStep(
        name="p",
        on_branch_failure="ignore",  # a signal is not a branch failure, whatever the policy
        branches=(
            ("ok", (AgentStep(name="fine"),)),
            (
                "deep",
                (
                    LoopStep(
                        name="l",
                        max_loops=2,
                        body=(
                            ConditionalStep(
                                name="c",
                                condition=expression("true"),
                                branches=(
                                    (
                                        "true",
                                        (
                                            MapStep(
                                                name="m",
                                                over=Expression("[1]"),
                                                body=(AgentStep(name="a", agent=agent),),
                                            ),
                                        ),
                                    ),
                                ),
                            ),
                        ),
                    ),
                ),
            ),
        ),
    )
    outcome, store = await run(nested)
    assert outcome.status == status
    assert outcome.error is None
    assert [r.path for r in await store.steps(outcome.run_id) if r.status == "failed"] == []


@pytest.mark.parametrize(("signal", "status"), SIGNALS)
async def test_signals_from_conditions_and_exit_checks_stay_signals(signal: BaseException, status: str) -> None:
    conditional, _ = await run(ConditionalStep(name="c", condition=raiser(signal), branches=(("x", ()),)))
    assert conditional.status == status
    loop, _ = await run(LoopStep(name="l", body=(AgentStep(name="a"),), exit_when=raiser(signal)))
    assert loop.status == status


async def test_pause_in_one_branch_with_a_failing_sibling_is_a_pause() -> None:
    outcome, _ = await run(
        ParallelStep(
            name="p",
            branches=(
                ("bad", (AgentStep(name="bad", agent=fails()),)),
                ("ask", (HitlStep(name="q", message=Template("?")),)),
            ),
        )
    )
    assert outcome.status == "paused"
    assert outcome.pause is not None and outcome.pause.path == "p/ask/q"


async def test_no_agent_is_called_once_a_parallel_sibling_has_spent_the_budget() -> None:
    calls: list[str] = []

    def spend(name: str) -> FuncAgent:
        return FuncAgent(lambda x: calls.append(name) or x, tokens=60)

    outcome = await run_with_limit(
        ParallelStep(
            name="p",
            branches=(
                ("a", (AgentStep(name="a1", agent=spend("a1")), AgentStep(name="a2", agent=spend("a2")))),
                ("b", (AgentStep(name="b1", agent=spend("b1")),)),
            ),
        ),
        max_tokens=100,
    )
    assert outcome.status == "limit_reached"
    assert calls == ["a1", "a2"]  # b1 would start with 120 of 100 tokens already spent


async def run_with_limit(step: Step, *, max_tokens: int) -> RunOutcome:
    pipeline = Pipeline(steps=(step,), limits=Limits(max_tokens=max_tokens))
    return await Engine(store=MemoryStore()).run(pipeline, 0)


# --- errors from hooks and values ------------------------------------------------------------------------


def broken_hook(*_: Any) -> Any:
    raise KeyError("missing_field")


@pytest.mark.parametrize(
    "step",
    [
        ConditionalStep(name="c", condition=broken_hook, branches=(("x", ()),)),
        LoopStep(name="l", body=(AgentStep(name="a"),), exit_when=broken_hook),
        LoopStep(name="l", body=(AgentStep(name="a"),), max_loops=2, next_input=broken_hook),
        LoopStep(name="l", body=(AgentStep(name="a"),), max_loops=1, output=broken_hook),
        MapStep(name="m", over=Expression("[1]"), body=(AgentStep(name="a"),), init=broken_hook),
        MapStep(name="m", over=Expression("[1]"), body=(AgentStep(name="a"),), finalize=broken_hook),
    ],
    ids=["condition", "exit", "next_input", "loop-output", "map-init", "map-finalize"],
)
async def test_a_hook_raising_any_exception_fails_its_step_and_the_run(step: Step) -> None:
    outcome, store = await run(step, input=1)  # no exception escapes Engine.run
    assert outcome.status == "failed"
    assert (
        outcome.error is not None and "KeyError" in outcome.error.message and "missing_field" in outcome.error.message
    )
    assert outcome.failed_step == step.name
    assert (await store.get_run(outcome.run_id)).status == "failed"  # type: ignore[union-attr]
    assert [(r.path, r.status) for r in await store.steps(outcome.run_id)][-1] == (step.name, "failed")


async def test_a_lone_expression_with_a_missing_name_inside_fails_the_step() -> None:
    outcome, store = await run(AgentStep(name="t", input=Template("{{ {'goal': steps.gaol.output} }}")))
    assert outcome.status == "failed" and outcome.error is not None
    assert "'gaol' is undefined" in outcome.error.message
    assert (await store.get_run(outcome.run_id)).status == "failed"  # type: ignore[union-attr]


@pytest.mark.parametrize("source", ["{{ context }}", "{{ steps }}", "{{ context.scratchpad }}"])
async def test_a_step_may_output_the_context_itself(source: str) -> None:
    """The output is a snapshot, not the live context: recording it must not make a structure that
    contains itself (which no store can serialise)."""
    outcome, store = await run(
        AgentStep(name="w", agent=writes(k=1), updates_context=True),
        AgentStep(name="snap", input=Template(source)),
        AgentStep(name="again", input=Template(source)),
    )
    assert outcome.status == "completed", outcome.error
    records = await store.steps(outcome.run_id)
    assert records[-1].output == outcome.output


# --- isolation and merging -------------------------------------------------------------------------------


async def test_failed_loop_iteration_and_map_item_leak_nothing_through_an_ignoring_parallel() -> None:
    state = {"n": 0}

    def second_fails(_: Any) -> Any:
        state["n"] += 1
        if state["n"] == 2:
            raise RunError("iteration 2 broke")
        return {"iter": state["n"]}

    outcome, _ = await run(
        AgentStep(name="base", agent=writes(base=True), updates_context=True),
        ParallelStep(
            name="p",
            on_branch_failure="ignore",
            branches=(
                (
                    "looping",
                    (
                        LoopStep(
                            name="l",
                            max_loops=3,
                            body=(
                                AgentStep(name="w", agent=FuncAgent(second_fails), updates_context=True),
                                HitlStep(name="note", message=Template("?"), sink_to="noted"),
                            ),
                        ),
                    ),
                ),
                (
                    "mapping",
                    (
                        MapStep(
                            name="m",
                            over=Expression("[1, 2]"),
                            body=(
                                AgentStep(name="mw", agent=writes(mapped=True), updates_context=True),
                                AgentStep(name="mx", agent=fails()),
                            ),
                        ),
                    ),
                ),
                ("fine", (AgentStep(name="f", agent=writes(fine=1), updates_context=True),)),
            ),
        ),
        SHOW,
        answers=["first"],
    )
    assert outcome.status == "completed", outcome.error
    context = outcome.output
    assert context["scratchpad"] == {"base": True, "fine": 1}
    assert context["hitl_history"] == []
    assert set(context["steps"]) == {"base", "f", "p"}


async def test_parallel_keeps_every_branch_hitl_answer_in_branch_order() -> None:
    outcome, _ = await run(
        HitlStep(name="before", message=Template("first?")),
        ParallelStep(
            name="p",
            branches=(
                ("a", (HitlStep(name="qa", message=Template("A?")),)),
                ("b", (HitlStep(name="qb", message=Template("B?")),)),
                ("c", (AgentStep(name="no_question"),)),
                ("d", (HitlStep(name="qd1", message=Template("D1?")), HitlStep(name="qd2", message=Template("D2?")))),
            ),
        ),
        SHOW,
        answers=["0", "1", "2", "3", "4"],
    )
    assert outcome.status == "completed"
    history = outcome.output["hitl_history"]
    assert [entry["step"] for entry in history] == ["before", "qa", "qb", "qd1", "qd2"]


async def test_parallel_inside_a_loop_publishes_this_iterations_outputs() -> None:
    counter = {"n": 0}

    def count(_: Any) -> int:
        counter["n"] += 1
        return counter["n"]

    outcome, _ = await run(
        LoopStep(
            name="l",
            max_loops=3,
            body=(
                ParallelStep(name="p", branches=(("a", (AgentStep(name="tick", agent=FuncAgent(count)),)),)),
                AgentStep(name="seen", input=Template("{{ steps.tick.output }}")),
            ),
        ),
    )
    assert outcome.output == 3


async def test_parallel_merge_strategies_between_branches() -> None:
    def parallel(strategy: Any) -> ParallelStep:
        return ParallelStep(
            name="p",
            merge_strategy=strategy,
            branches=(
                ("a", (AgentStep(name="a", agent=writes(k="a", only_a=1), updates_context=True),)),
                ("b", (AgentStep(name="b", agent=writes(k="b"), updates_context=True),)),
                ("c", (AgentStep(name="c"),)),  # writes nothing: must not reset k to the parent's value
            ),
        )

    base = AgentStep(name="base", agent=writes(k="parent"), updates_context=True)
    merged, _ = await run(base, parallel("merge_scratchpad"), SHOW)
    assert merged.output["scratchpad"] == {"k": "b", "only_a": 1}
    assert set(merged.output["steps"]) == {"base", "a", "b", "c", "p"}
    first, _ = await run(base, parallel("keep_first"), SHOW)
    assert first.output["scratchpad"] == {"k": "a", "only_a": 1}
    untouched, _ = await run(base, parallel("no_merge"), SHOW)
    assert untouched.output["scratchpad"] == {"k": "parent"}
    assert set(untouched.output["steps"]) == {"base", "p"}
    overwrite, _ = await run(base, parallel("overwrite"), SHOW)
    assert overwrite.output["scratchpad"] == {"k": "parent"}  # the last branch's whole context (c wrote nothing)
    conflict, _ = await run(base, parallel("error_on_conflict"), SHOW)
    assert conflict.status == "failed" and conflict.failed_step == "p"


async def test_later_scratchpad_writes_never_change_a_step_output() -> None:
    outcome, _ = await run(
        AgentStep(name="x", agent=writes(k=1), sink_to="cfg"),
        AgentStep(name="y", input=Template("extra"), sink_to="cfg.extra"),
        AgentStep(name="z", agent=FuncAgent(lambda _: ["a"]), sink_to="todo"),
        MapStep(
            name="m",
            over=Expression("[1]"),
            body=(AgentStep(name="b"),),
            init=lambda ctx, _: ctx.scratchpad["todo"].append("added"),
        ),
        SHOW,
    )
    assert outcome.status == "completed"
    assert outcome.output["scratchpad"] == {"cfg": {"k": 1, "extra": "extra"}, "todo": ["a", "added"]}
    assert outcome.output["steps"]["x"] == {"output": {"k": 1}}
    assert outcome.output["steps"]["z"] == {"output": ["a"]}


# --- where a failure is reported -------------------------------------------------------------------------


async def test_failed_step_names_the_failure_that_ended_the_run_not_an_ignored_one() -> None:
    outcome, _ = await run(
        ParallelStep(
            name="p",
            on_branch_failure="ignore",
            branches=(("bad", (AgentStep(name="x", agent=fails("ignored")),)), ("ok", (AgentStep(name="y"),))),
        ),
        LoopStep(name="l", max_loops=2, body=(AgentStep(name="later", agent=fails("fatal")),)),
    )
    assert outcome.status == "failed" and outcome.error is not None
    assert outcome.error.message == "fatal"
    assert outcome.failed_step == "l/1/later"


async def test_failed_step_matches_the_error_when_several_branches_fail() -> None:
    outcome, _ = await run(
        ParallelStep(
            name="p",
            branches=(
                ("one", (AgentStep(name="x", agent=fails("one broke")),)),
                ("two", (AgentStep(name="y", agent=fails("two broke")),)),
            ),
        ),
    )
    assert outcome.error is not None and outcome.error.message == "one broke"
    assert outcome.failed_step == "p/one/x"


async def test_resume_does_not_record_completed_composites_again() -> None:
    pipeline = Pipeline(
        steps=(
            LoopStep(name="l", max_loops=2, body=(AgentStep(name="a"),)),
            ParallelStep(name="p", branches=(("x", (AgentStep(name="b"),)),)),
            ConditionalStep(name="c", condition=expression("'k'"), branches=(("k", (AgentStep(name="d"),)),)),
            HitlStep(name="ask", message=Template("?")),
        )
    )
    store = MemoryStore()
    paused = await Engine(store=store).run(pipeline, 1)
    assert paused.status == "paused"
    resumed = await Engine(store=store, human=ScriptedHuman(["ok"])).resume(pipeline, paused.run_id)
    assert resumed.status == "completed"
    kinds = [e.kind for e in await store.events(paused.run_id)]
    assert kinds.count("loop.exit") == kinds.count("parallel.done") == kinds.count("conditional.branch") == 1
