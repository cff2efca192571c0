"""Engine semantics with in-test agents: each policy, isolation, signals, journal replay."""

from __future__ import annotations

from typing import Any

import pytest

from core import (
    AgentStep,
    ConditionalStep,
    Engine,
    Expression,
    HitlStep,
    Limits,
    LoopStep,
    MapStep,
    ParallelStep,
    Pipeline,
    RunError,
    Template,
)
from core.store import MemoryStore
from core.testing import FuncAgent, RecordingReporter, ScriptedHuman


def exit_when(source: str) -> Any:
    expression = Expression(source)
    return lambda scope: expression.evaluate(scope)


async def run(pipeline: Pipeline, input: Any = None, answers: list[str] | None = None) -> tuple[Any, MemoryStore]:
    store = MemoryStore()
    engine = Engine(store=store, human=ScriptedHuman(answers or []))
    return await engine.run(pipeline, input), store


async def test_steps_chain_outputs_and_templates_see_steps() -> None:
    upper = FuncAgent(lambda text: text.upper())
    pipeline = Pipeline(
        steps=(
            AgentStep(name="shout", agent=upper),
            AgentStep(name="wrap", input=Template("<{{ steps.shout.output }}|{{ initial_prompt }}>")),
        )
    )
    outcome, store = await run(pipeline, "hi")
    assert outcome.status == "completed"
    assert outcome.output == "<HI|hi>"
    records = await store.steps(outcome.run_id)
    assert [r.path for r in records] == ["shout", "wrap"]
    assert all(r.status == "completed" for r in records)
    events = await store.events(outcome.run_id)
    prompts = [e for e in events if e.kind == "agent.prompt"]
    assert prompts and prompts[0].payload["messages"] == [{"role": "user", "content": "hi"}]


async def test_hitl_answers_validate_and_sink() -> None:
    pipeline = Pipeline(
        steps=(
            HitlStep(
                name="age",
                message=Template("How old?"),
                input_schema={"type": "integer", "minimum": 0},
                sink_to="scratchpad.age",
            ),
            AgentStep(name="echo", input=Template("{{ context.scratchpad.age + 1 }}")),
        )
    )
    outcome, _ = await run(pipeline, answers=["41"])
    assert outcome.status == "completed"
    assert outcome.output == 42


async def test_scripted_answer_rejected_by_schema_fails_clearly() -> None:
    pipeline = Pipeline(steps=(HitlStep(name="age", message=Template("How old?"), input_schema={"type": "integer"}),))
    outcome, store = await run(pipeline, answers=["forty"])
    assert outcome.status == "failed"
    assert outcome.error is not None and "rejected" in outcome.error.message
    assert outcome.failed_step == "age"
    assert (await store.steps(outcome.run_id))[0].status == "failed"


async def test_hitl_without_answer_pauses_and_resume_replays_without_rerunning() -> None:
    agent = FuncAgent(lambda text: f"reply to {text}")
    pipeline = Pipeline(
        steps=(
            AgentStep(name="first", agent=agent),
            HitlStep(name="ask", message=Template("About {{ previous_step }}?")),
            AgentStep(name="second", agent=agent),
        )
    )
    store = MemoryStore()
    paused = await Engine(store=store, human=ScriptedHuman([])).run(pipeline, "x")
    assert paused.status == "paused"
    assert paused.pause is not None and paused.pause.message == "About reply to x?"
    assert (await store.get_run(paused.run_id)).status == "paused"  # type: ignore[union-attr]
    assert agent.calls == ["x"]

    resumed = await Engine(store=store, human=ScriptedHuman(["yes"])).resume(pipeline, paused.run_id)
    assert resumed.status == "completed"
    assert resumed.output == "reply to yes"
    assert agent.calls == ["x", "yes"]  # "first" was replayed from the journal, not called again
    assert agent.replays == 1  # ...and the agent was told, so a scripted agent moves to its next reply
    assert resumed.replayed == 1
    assert [r.path for r in await store.steps(paused.run_id)] == ["first", "ask", "second"]


async def test_loop_exits_on_expression_and_counts_iterations() -> None:
    counter = FuncAgent(lambda n: n + 1)
    pipeline = Pipeline(
        steps=(
            LoopStep(
                name="count",
                body=(AgentStep(name="inc", agent=counter),),
                max_loops=10,
                exit_when=exit_when("previous_step >= 3"),
            ),
        )
    )
    outcome, store = await run(pipeline, 0)
    assert outcome.output == 3
    assert counter.calls == [0, 1, 2]
    exit_event = next(e for e in await store.events(outcome.run_id) if e.kind == "loop.exit")
    assert exit_event.payload["reason"] == "condition"
    assert exit_event.payload["iterations"] == 3


async def test_loop_reaching_max_loops_completes_not_fails() -> None:
    pipeline = Pipeline(
        steps=(LoopStep(name="l", body=(AgentStep(name="inc", agent=FuncAgent(lambda n: n + 1)),), max_loops=4),)
    )
    outcome, store = await run(pipeline, 0)
    assert outcome.status == "completed"
    assert outcome.output == 4
    exit_event = next(e for e in await store.events(outcome.run_id) if e.kind == "loop.exit")
    assert exit_event.payload["reason"] == "max_loops"


async def test_failed_branch_leaves_parent_context_untouched() -> None:
    def fail(_: Any) -> Any:
        raise RunError("second step broke")

    pipeline = Pipeline(
        steps=(
            ParallelStep(
                name="p",
                branches=(
                    (
                        "bad",
                        (
                            AgentStep(name="w", agent=FuncAgent(lambda _: {"poison": True}), updates_context=True),
                            AgentStep(name="x", agent=FuncAgent(fail)),
                        ),
                    ),
                    ("good", (AgentStep(name="g", agent=FuncAgent(lambda _: {"fine": 1}), updates_context=True),)),
                ),
                on_branch_failure="ignore",
            ),
            AgentStep(name="show", input=Template("{{ context.scratchpad }}")),
        )
    )
    outcome, _ = await run(pipeline)
    assert outcome.status == "completed"
    assert outcome.output == {"fine": 1}


async def test_isolation_merge_only_on_success() -> None:
    calls = {"n": 0}

    def agent(_: Any) -> Any:
        calls["n"] += 1
        return {"mark": calls["n"]}

    pipeline = Pipeline(
        steps=(
            LoopStep(
                name="l",
                body=(AgentStep(name="w", agent=FuncAgent(agent), updates_context=True),),
                max_loops=2,
                init=lambda ctx, _: ctx.scratchpad.setdefault("log", []).append("init"),
            ),
            AgentStep(name="out", input=Template("{{ context.scratchpad }}")),
        )
    )
    outcome, _ = await run(pipeline, None)
    assert outcome.output == {"log": ["init"], "mark": 2}


async def test_parallel_runs_branches_keeps_order_and_reduces() -> None:
    pipeline = Pipeline(
        steps=(
            ParallelStep(
                name="p",
                branches=(
                    ("a", (AgentStep(name="a1", agent=FuncAgent(lambda x: [x, "a"]), updates_context=False),)),
                    ("b", (AgentStep(name="b1", agent=FuncAgent(lambda x: [x, "b"])),)),
                ),
                reduce="concat",
            ),
        )
    )
    outcome, _ = await run(pipeline, "in")
    assert outcome.output == ["in", "a", "in", "b"]


async def test_parallel_dedupe_keeps_first_occurrences_compared_as_json() -> None:
    outputs: dict[str, Any] = {
        "a": [1, {"x": 1, "y": 2}, "tea"],
        "b": [1.0, True, 1, {"y": 2, "x": 1}],
        "c": "tea",
        "d": [False, 0, None, [1, 2], [1, 2]],
    }
    pipeline = Pipeline(
        steps=(
            ParallelStep(
                name="p",
                branches=tuple(
                    (name, (AgentStep(name=f"{name}1", agent=FuncAgent(lambda _, v=value: v)),))
                    for name, value in outputs.items()
                ),
                reduce="dedupe",
            ),
        )
    )
    outcome, _ = await run(pipeline, "in")
    assert outcome.output == [1, {"x": 1, "y": 2}, "tea", 1.0, True, False, 0, None, [1, 2]]
    kinds = [type(item) for item in outcome.output]
    assert kinds == [int, dict, str, float, bool, bool, int, type(None), list]


async def test_parallel_merge_and_conflict() -> None:
    def branches(strategy: Any) -> Pipeline:
        return Pipeline(
            steps=(
                ParallelStep(
                    name="p",
                    branches=(
                        ("a", (AgentStep(name="a", agent=FuncAgent(lambda _: {"k": 1}), updates_context=True),)),
                        ("b", (AgentStep(name="b", agent=FuncAgent(lambda _: {"k": 2}), updates_context=True),)),
                    ),
                    merge_strategy=strategy,
                ),
                AgentStep(name="show", input=Template("{{ context.scratchpad.k | default('none') }}")),
            )
        )

    assert (await run(branches("merge_scratchpad")))[0].output == 2
    assert (await run(branches("keep_first")))[0].output == 1
    assert (await run(branches("no_merge")))[0].output == "none"
    conflict, _ = await run(branches("error_on_conflict"))
    assert conflict.status == "failed" and conflict.error is not None
    assert "both set scratchpad.k" in conflict.error.message


async def test_parallel_branch_failure_ignore_and_propagate() -> None:
    def boom(_: Any) -> Any:
        raise RunError("branch broke")

    def pipeline(policy: Any) -> Pipeline:
        return Pipeline(
            steps=(
                ParallelStep(
                    name="p",
                    branches=(
                        ("ok", (AgentStep(name="ok", agent=FuncAgent(lambda x: "fine")),)),
                        ("bad", (AgentStep(name="bad", agent=FuncAgent(boom)),)),
                    ),
                    on_branch_failure=policy,
                ),
            )
        )

    ignored, _ = await run(pipeline("ignore"))
    assert ignored.status == "completed" and ignored.output == {"ok": "fine"}
    propagated, _ = await run(pipeline("propagate"))
    assert propagated.status == "failed" and propagated.error is not None
    assert "branch broke" in propagated.error.message


async def test_conditional_picks_branch_default_and_missing() -> None:
    def pipeline(default: bool) -> Pipeline:
        return Pipeline(
            steps=(
                ConditionalStep(
                    name="c",
                    condition=exit_when("previous_step > 5"),
                    branches=(
                        ("true", (AgentStep(name="big", input=Template("big")),)),
                        ("false", (AgentStep(name="small", input=Template("small")),)),
                    ),
                ),
                ConditionalStep(
                    name="d",
                    condition=exit_when("'x'"),
                    branches=(("y", (AgentStep(name="y", input=Template("y")),)),),
                    default_branch=(AgentStep(name="dflt", input=Template("default")),) if default else None,
                ),
            )
        )

    outcome, store = await run(pipeline(True), 9)
    assert outcome.output == "default"
    paths = [r.path for r in await store.steps(outcome.run_id)]
    assert "c/true/big" in paths and "d/default/dflt" in paths
    missing, _ = await run(pipeline(False), 1)
    assert missing.status == "failed" and missing.error is not None
    assert "matches no branch" in missing.error.message


async def test_map_runs_body_per_item_in_order() -> None:
    pipeline = Pipeline(
        steps=(
            MapStep(
                name="m",
                over=Expression("previous_step"),
                body=(AgentStep(name="sq", agent=FuncAgent(lambda n: n * n)),),
            ),
        )
    )
    outcome, store = await run(pipeline, [1, 2, 3])
    assert outcome.output == [1, 4, 9]
    assert [r.path for r in await store.steps(outcome.run_id)][:3] == ["m/0/sq", "m/1/sq", "m/2/sq"]
    bad, _ = await run(pipeline, 5)
    assert bad.status == "failed" and bad.error is not None and "not a list" in bad.error.message


async def test_token_limit_stops_run_and_keeps_outputs() -> None:
    agent = FuncAgent(lambda n: n + 1, tokens=60)
    pipeline = Pipeline(
        steps=(LoopStep(name="l", body=(AgentStep(name="inc", agent=agent),), max_loops=10),),
        limits=Limits(max_tokens=100),
    )
    outcome, store = await run(pipeline, 0)
    assert outcome.status == "limit_reached"
    assert outcome.detail is not None and "120 tokens used, limit is 100" in outcome.detail
    assert [r.output for r in await store.steps(outcome.run_id) if r.name == "inc"] == [1, 2]


async def test_stop_signal_is_not_swallowed_inside_parallel_and_loop() -> None:
    pipeline = Pipeline(
        steps=(
            LoopStep(
                name="l",
                body=(
                    ParallelStep(
                        name="p",
                        branches=(
                            ("q", (HitlStep(name="q", message=Template("?")),)),
                            ("r", (AgentStep(name="r", input=Template("r")),)),
                        ),
                    ),
                ),
                max_loops=3,
            ),
        )
    )
    outcome, _ = await run(pipeline)
    assert outcome.status == "paused"
    assert outcome.pause is not None and outcome.pause.path == "l/1/p/q/q"


async def test_secrets_are_redacted_in_trace_events_but_outputs_kept() -> None:
    secret = "sk-" + "a" * 30
    pipeline = Pipeline(steps=(AgentStep(name="s", agent=FuncAgent(lambda x: f"key {x}")),))
    outcome, store = await run(pipeline, secret)
    assert outcome.output == f"key {secret}"  # the run's data is never altered
    events = await store.events(outcome.run_id)
    assert events and all(secret not in repr(e.payload) for e in events)


async def test_reporter_sees_steps_in_order() -> None:
    reporter = RecordingReporter()
    store = MemoryStore()
    pipeline = Pipeline(steps=(AgentStep(name="a"), AgentStep(name="b")))
    await Engine(store=store, reporter=reporter).run(pipeline, 1)
    assert reporter.started == ["a", "b"]
    assert [r.name for r in reporter.finished] == ["a", "b"]


async def test_reporter_is_told_of_every_event_as_the_store_keeps_it() -> None:
    """``events_committed``: each commit's events, in the store's order (what ``flujo run --events`` writes):
    a loop's agent calls, a question's answer, parallel branches."""
    reporter = RecordingReporter()
    store = MemoryStore()
    pipeline = Pipeline(
        steps=(
            LoopStep(
                name="chat",
                body=(
                    AgentStep(name="ask", agent=FuncAgent(lambda x: f"{x}?")),
                    HitlStep(name="answer", message=Template("?")),
                ),
                max_loops=2,
            ),
            ParallelStep(
                name="p",
                branches=(("a", (AgentStep(name="a1", agent=FuncAgent(str)),)), ("b", (AgentStep(name="b1"),))),
            ),
        )
    )
    outcome = await Engine(store=store, reporter=reporter, human=ScriptedHuman(["x", "y"])).run(pipeline, "go")
    assert outcome.status == "completed", outcome.error
    assert reporter.events == await store.events(outcome.run_id)
    assert {event.kind for event in reporter.events} >= {"agent.prompt", "hitl.answer", "loop.exit", "parallel.done"}


@pytest.mark.parametrize("bad", ["{{ nope }}", "{{ steps.missing.output }}"])
async def test_template_errors_fail_the_step_with_a_clear_message(bad: str) -> None:
    outcome, _ = await run(Pipeline(steps=(AgentStep(name="t", input=Template(bad)),)))
    assert outcome.status == "failed" and outcome.error is not None
    assert "undefined" in outcome.error.message


async def test_reporter_is_told_model_replies_only() -> None:
    from core.agents import ScriptedAgent

    reporter = RecordingReporter()
    pipeline = Pipeline(
        steps=(
            AgentStep(name="bot", agent=ScriptedAgent(["hello"])),
            AgentStep(name="script", agent=FuncAgent(lambda x: x + "!")),
            AgentStep(name="pass"),
        )
    )
    outcome = await Engine(store=MemoryStore(), reporter=reporter).run(pipeline, "in")
    assert outcome.output == "hello!"
    assert reporter.replies == [("bot", "hello")]


async def test_a_broken_human_input_fails_the_run_instead_of_leaving_it_running() -> None:
    class BrokenHuman:
        async def ask(self, question: Any) -> str | None:
            raise OSError("terminal went away")

    store = MemoryStore()
    pipeline = Pipeline(steps=(HitlStep(name="q", message=Template("?")),))
    outcome = await Engine(store=store, human=BrokenHuman()).run(pipeline)
    assert outcome.status == "failed"
    assert outcome.error is not None and "terminal went away" in outcome.error.message
    assert (await store.get_run(outcome.run_id)).status == "failed"  # type: ignore[union-attr]


async def test_agent_finished_in_one_loop_does_not_stop_the_next() -> None:
    from core.agents import ScriptedAgent

    def finished(scope: Any) -> bool:
        command = scope["context"]["scratchpad"].get("last_agent_command") or {}
        return command.get("action") == "finish"

    pipeline = Pipeline(
        steps=(
            LoopStep(
                name="first",
                body=(AgentStep(name="a", agent=ScriptedAgent([{"action": "finish"}])),),
                exit_when=finished,
            ),
            LoopStep(
                name="second",
                body=(AgentStep(name="b", agent=ScriptedAgent(["one", "two", "three"])),),
                max_loops=3,
                exit_when=finished,
            ),
        )
    )
    outcome, _ = await run(pipeline, "go")
    assert outcome.output == "three"
