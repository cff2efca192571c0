"""The ensemble engine (core.conversation.ensemble, core.policies.ensemble) driven from Python: rounds,
dependencies, conditions, limits, accumulated state, completion reasons, pause/resume and failures. the
design's success criteria are the first tests: agents execute multiple times in conditional loops, state
accumulates across turns, limits prevent infinite loops."""

from __future__ import annotations

import asyncio
import itertools
from typing import Any

from core import ChatMessage, Dependency, Engine, EnsembleStep, Expression, Limits, Participant, Pipeline, Template
from core.agents import AgentSpec, PythonAgent, ScriptedAgent, build_agent
from core.conversation import parse_reply
from core.store import MemoryStore
from core.testing import FuncAgent, RecordingReporter, ScriptedHuman
from tests.support.fakes.openai_server import FakeLLM


def run(step: EnsembleStep, data: Any = "go", *, answers: tuple[str, ...] = (), store: MemoryStore | None = None):
    store = store or MemoryStore()
    engine = Engine(store=store, human=ScriptedHuman(answers))
    return asyncio.run(engine.run(Pipeline(steps=(step,)), data)), store


def sequence(output: dict[str, Any]) -> list[tuple[int, str]]:
    return [(turn["turn"], turn["participant"]) for turn in output["history"]]


def analysis(**limits: Any) -> EnsembleStep:
    """The design's example: an extractor, an analyzer asking for clarification, the person, a synthesis."""
    analyzer = ScriptedAgent(
        replies=(
            '{"needs_clarification": true}',
            '```json\n{"needs_clarification": false}\n```',
            '{"final_analysis": "rows grow"}',
        )
    )
    synthesis = ScriptedAgent(replies=({"synthesis_complete": True},))
    return EnsembleStep(
        name="analysis",
        participants=(
            Participant("extractor", agent=PythonAgent(lambda env: {"rows": env["turn"]}), max_turns=2),
            Participant("analyzer", agent=analyzer, max_turns=3, depends_on=(Dependency("extractor"),)),
            Participant(
                "person",
                ask=Template("What do rows mean at turn {{ turn_count }}?"),
                max_turns=3,
                depends_on=(
                    Dependency(
                        "analyzer", condition=Expression("context.get('needs_clarification', False)"), max_executions=3
                    ),
                ),
            ),
            Participant(
                "synthesis",
                agent=synthesis,
                depends_on=(Dependency("person", condition=Expression("context.get('person')")),),
            ),
        ),
        **limits,
    )


def test_agents_execute_several_times_in_conditional_loops() -> None:
    outcome, _ = run(analysis(), answers=("sales per day",))
    assert outcome.status == "completed", outcome.error
    assert sequence(outcome.output) == [
        (1, "extractor"),
        (2, "extractor"),
        (2, "analyzer"),
        (3, "analyzer"),
        (3, "person"),  # needs_clarification was true after round 2
        (4, "analyzer"),
        (4, "synthesis"),  # the person answered in round 3; the person is not asked again: false now
    ]
    assert outcome.output["turn_count"] == 4
    assert outcome.output["completion_reason"] == "completed"


def test_state_accumulates_across_turns() -> None:
    outcome, _ = run(analysis(), answers=("sales per day",))
    state = outcome.output["final_state"]
    assert state["extractor"] == {"rows": 2}  # the latest output under the participant's name
    assert state["rows"] == 2  # a mapping output's keys at the top level
    assert state["needs_clarification"] is False  # a JSON reply in a ```json fence is parsed; later wins
    assert state["final_analysis"] == "rows grow"
    assert state["person"] == "sales per day"
    assert state["synthesis_complete"] is True


def test_a_dependency_cycle_is_stopped_by_the_turn_limit() -> None:
    ping = FuncAgent(lambda env: "ping")
    pong = FuncAgent(lambda env: "pong")
    step = EnsembleStep(
        name="chat",
        participants=(
            Participant("ping", agent=ping, max_turns=1000, depends_on=(Dependency("pong"),), requires_all=False),
            Participant("pong", agent=pong, max_turns=1000),
        ),
        max_total_turns=5,
    )
    outcome, _ = run(step)
    assert outcome.output["completion_reason"] == "turn_limit"
    assert outcome.output["turn_count"] == 5
    assert len(pong.calls) == 5 and len(ping.calls) == 4  # ping waits for pong's first turn


def test_max_agent_executions_and_max_executions_bound_a_participant() -> None:
    talker = FuncAgent(lambda env: "hi")
    listener = FuncAgent(lambda env: "ok")
    step = EnsembleStep(
        name="chat",
        participants=(
            Participant("talker", agent=talker, max_turns=10),
            Participant("listener", agent=listener, max_turns=10, depends_on=(Dependency("talker", max_executions=2),)),
        ),
        max_agent_executions={"talker": 4},
    )
    outcome, _ = run(step)
    assert outcome.output["completion_reason"] == "completed"
    assert len(talker.calls) == 4
    assert len(listener.calls) == 2


def test_the_timeout_cancels_calls_in_flight() -> None:
    async def slow(env: Any) -> str:
        await asyncio.sleep(60)
        return "never"

    step = EnsembleStep(
        name="chat",
        participants=(
            Participant("quick", agent=FuncAgent(lambda env: "done")),
            Participant("slow", agent=PythonAgent(slow), depends_on=(Dependency("quick"),)),
        ),
        timeout_seconds=0.3,
    )
    outcome, store = run(step)
    assert outcome.status == "completed"
    assert outcome.output["completion_reason"] == "timeout"
    assert sequence(outcome.output) == [(1, "quick")]
    assert outcome.output["turn_count"] == 1  # the cancelled round 2 said nothing: not a round played
    paths = [record.path for record in asyncio.run(store.steps(outcome.run_id))]
    assert "chat/2/slow" not in paths  # the cancelled call recorded nothing


def test_scripts_get_the_envelope_and_models_their_point_of_view() -> None:
    seen: list[Any] = []

    def script(env: Any) -> dict[str, Any]:
        seen.append(env)
        return {"step": env["turn"]}

    model = ScriptedAgent(replies=("noted",), system_prompt="You review.")
    step = EnsembleStep(
        name="chat",
        participants=(
            Participant("script", agent=PythonAgent(script), config={"mode": "fast"}, max_turns=2),
            Participant("model", agent=model, max_turns=2, depends_on=(Dependency("script"),)),
        ),
    )
    outcome, store = run(step, "topic")
    assert seen[1]["input"] == "topic"
    assert seen[1]["turn"] == 2 and seen[1]["agent"] == "script" and seen[1]["config"] == {"mode": "fast"}
    assert seen[1]["context"] == {"script": {"step": 1}, "step": 1}
    assert seen[1]["history"] == [{"turn": 1, "participant": "script", "output": {"step": 1}}]
    events = [e for e in asyncio.run(store.events(outcome.run_id)) if e.kind == "agent.prompt" and "model" in e.path]
    last = events[-1].payload["messages"]
    assert last[0] == {"role": "system", "content": "You review."}
    assert last[1:] == [
        {"role": "user", "content": "topic"},  # the ensemble's input opens the conversation
        {"role": "user", "content": 'script: {"step": 1}'},  # others' turns name the speaker
        {"role": "user", "content": 'script: {"step": 2}'},
        {"role": "assistant", "content": "noted"},  # its own turn (round 2, after script's in declaration order)
        {"role": "user", "content": "(round 3: it is your turn, model)"},  # it spoke last: a cue
    ]
    records = {r.path: r for r in asyncio.run(store.steps(outcome.run_id))}
    assert records["chat/3/model"].input == {"ensemble": "chat", "round": 3, "history_turns": 3}  # a reference


def test_a_person_pauses_the_run_and_resume_continues_the_round() -> None:
    step = analysis()
    store = MemoryStore()
    first, _ = run(step, store=store)
    assert first.status == "paused" and first.pause is not None
    assert first.pause.path == "analysis/3/person"
    engine = Engine(store=store, human=ScriptedHuman(["sales per day"]))
    resumed = asyncio.run(engine.resume(Pipeline(steps=(step,)), first.run_id))
    assert resumed.status == "completed", resumed.error
    assert resumed.replayed == 4  # rounds 1-2 and round 3's analyzer come from the journal
    assert sequence(resumed.output)[4] == (3, "person")
    paths = [record.path for record in asyncio.run(store.steps(first.run_id))]
    assert len(paths) == len(set(paths))  # no turn recorded twice


def test_a_failing_participant_fails_the_step_and_keeps_finished_turns() -> None:
    def broken(env: Any) -> Any:
        if env["turn"] == 2:
            raise ValueError("bad data")
        return "fine"

    step = EnsembleStep(
        name="chat",
        participants=(
            Participant("steady", agent=FuncAgent(lambda env: "ok"), max_turns=3),
            Participant("broken", agent=PythonAgent(broken), max_turns=3),
        ),
    )
    outcome, store = run(step)
    assert outcome.status == "failed"
    assert outcome.failed_step == "chat/2/broken"
    assert "bad data" in (outcome.error.message if outcome.error else "")
    statuses = {r.path: r.status for r in asyncio.run(store.steps(outcome.run_id))}
    assert statuses["chat/2/steady"] == "completed"  # its sibling's turn is kept for resume
    assert statuses["chat"] == "failed"


def test_parse_reply_reads_json_objects_only() -> None:
    assert parse_reply('{"a": 1}') == {"a": 1}
    assert parse_reply('```json\n{"a": 1}\n```') == {"a": 1}
    assert parse_reply("[1, 2]") == "[1, 2]"
    assert parse_reply("{not json") == "{not json"


def test_state_key_and_output_hook() -> None:
    step = EnsembleStep(
        name="chat",
        participants=(Participant("writer", agent=FuncAgent(lambda env: "draft"), state_key="text"),),
        output=lambda result, ctx, given: result["final_state"]["text"],
    )
    outcome, _ = run(step)
    assert outcome.output == "draft"


def test_agents_of_one_round_do_not_stream_into_each_other(fake_llm: FakeLLM) -> None:
    """Two models in one round are shown whole when they end (no interleaved streams); alone, a model streams."""
    settings = fake_llm.settings()
    first = build_agent(AgentSpec(name="first", model="openai:gpt-4o-mini"), settings)
    second = build_agent(AgentSpec(name="second", model="openai:gpt-4o-mini"), settings)
    step = EnsembleStep(
        name="chat",
        participants=(
            Participant("first", agent=first, max_turns=2),
            Participant("second", agent=second, depends_on=(Dependency("first"),), max_turns=1),
        ),
    )
    for text in ("one", "two", "two"):
        fake_llm.reply(text)
    reporter = RecordingReporter()
    engine = Engine(store=MemoryStore(), reporter=reporter)
    outcome = asyncio.run(engine.run(Pipeline(steps=(step,)), "go"))
    assert outcome.status == "completed", outcome.error
    assert "".join(reporter.text) == "one"  # round 1: first alone streamed; round 2: two at once did not
    assert [name for name, _ in reporter.replies] == ["first", "first", "second"] or [
        name for name, _ in reporter.replies
    ] == ["first", "second", "first"]
    streamed = [body.get("stream") for body in fake_llm.bodies]
    assert streamed[0] is True and not any(streamed[1:])


def test_usage_limits_are_reserved_per_call_across_a_round(fake_llm: FakeLLM) -> None:
    """Each of two models in one round would fit the token limit alone; together they would not: the second
    call is refused before it is sent, and the first, already under way, completes and is kept."""
    settings = fake_llm.settings()
    capped = {"max_tokens": 100}
    first = build_agent(AgentSpec(name="a", model="openai:gpt-4o-mini", model_settings=capped), settings)
    second = build_agent(AgentSpec(name="b", model="openai:gpt-4o-mini", model_settings=capped), settings)
    step = EnsembleStep(name="chat", participants=(Participant("a", agent=first), Participant("b", agent=second)))
    store = MemoryStore()
    engine = Engine(store=store)
    outcome = asyncio.run(engine.run(Pipeline(steps=(step,), limits=Limits(max_tokens=150)), "go"))
    assert outcome.status == "limit_reached"
    assert "before calling 'b'" in (outcome.detail or "")
    assert len(fake_llm.requests) == 1
    records = {r.path: r.status for r in asyncio.run(store.steps(outcome.run_id))}
    assert records == {"chat/1/a": "completed"}


class SlowHuman:
    """A person who takes ``delay`` seconds to answer."""

    def __init__(self, delay: float) -> None:
        self.delay = delay

    async def ask(self, question: Any) -> str:
        await asyncio.sleep(self.delay)
        return "take your time"


def test_the_timeout_does_not_count_time_waiting_for_the_person() -> None:
    step = EnsembleStep(
        name="chat",
        participants=(
            Participant("person", ask=Template("Ready?")),
            Participant("agent", agent=FuncAgent(lambda env: "after the answer"), depends_on=(Dependency("person"),)),
        ),
        timeout_seconds=2.0,
    )
    engine = Engine(store=MemoryStore(), human=SlowHuman(3.0))
    outcome = asyncio.run(engine.run(Pipeline(steps=(step,)), "go"))
    assert outcome.output["completion_reason"] == "completed"  # 3 s waiting for the person, yet no timeout
    assert sequence(outcome.output) == [(1, "person"), (2, "agent")]


def test_a_participant_is_sent_the_same_message_objects_round_after_round() -> None:
    """A participant's view of the conversation is made once per turn (``EnsembleState.views``): each round's
    prompt holds the very message objects of the one before, so a round costs its new turns to make, to
    mask in its trace and to store, not the conversation so far (it made every message again, each round)."""
    writer = ScriptedAgent(replies=tuple({"draft": n} for n in range(8)), system_prompt="You write.")
    critic = ScriptedAgent(replies=tuple(f"too long ({n})" for n in range(8)), system_prompt="You criticise.")
    step = EnsembleStep(
        name="review",
        participants=(
            Participant("writer", agent=writer, max_turns=6),
            Participant("critic", agent=critic, max_turns=6, depends_on=(Dependency("writer"),)),
        ),
    )
    outcome, _ = run(step, "a short story")
    assert outcome.status == "completed", outcome.error
    for agent in (writer, critic):
        histories = [call.history for call in agent.calls]
        assert len(histories) >= 5
        for earlier, later in itertools.pairwise(histories[1:]):
            shared = [message for message in earlier if message in later]
            assert len(shared) >= len(earlier) - 1  # the conversation grew: all but a cue are sent again
            assert all(any(message is again for again in later) for message in shared)
    assert ChatMessage("assistant", '{"draft": 0}') in writer.calls[-1].history  # its own turns: the assistant's
    assert ChatMessage("user", "critic: too long (0)") in writer.calls[-1].history  # others': named, the user's
