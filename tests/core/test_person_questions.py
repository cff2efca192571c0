"""``ask_person``: the one function every place that asks a person calls (a hitl step today; any other
asker, such as an ensemble's person participant, the same way), used here without a hitl step."""

from __future__ import annotations

import asyncio

from core import ConversationTurn, HistoryPolicy, NoHuman, NullReporter, Redactor, SimulatedPerson, Usage
from core.agents import ScriptedAgent
from core.answering.order import Answering, AnswerNote
from core.answering.replay import RecordedAnswer, RecordedAnswers
from core.policies.frame import Frame
from core.policies.person import PersonQuestion, ask_person
from core.store import MemoryStore


def frame(answering: Answering) -> Frame:
    return Frame(
        run_id="r1", store=MemoryStore(), human=NoHuman(), reporter=NullReporter(), redactor=Redactor(),
        answering=answering,
    )  # fmt: skip


def test_any_asker_gets_a_simulated_answer_with_its_trace_and_usage() -> None:
    agent = ScriptedAgent(["too many", {"ok": True}], system_prompt="You are Ada.")
    person = SimulatedPerson(agent, "agents.ada")
    question = PersonQuestion(
        step="ada",
        path="talk/1/ada",
        message="Shall we go on?",
        input_schema={"type": "object", "required": ["ok"]},
        answered_by=person,
        heard=[ConversationTurn("user", "Hi"), ConversationTurn("assistant", "Hello Ada. Any questions?")],
    )
    here = frame(Answering())
    answer = asyncio.run(ask_person(question, here))
    assert (answer.value, answer.source, answer.by) == ({"ok": True}, "simulated", "agents.ada")
    assert answer.usage.requests == 2 and here.usage.requests == 2  # charged to the run as they were made
    first, second = (call for call in agent.calls)
    assert [(m.role, m.content) for m in first.history] == [("assistant", "Hi")]  # roles flipped
    assert first.input == "Hello Ada. Any questions?\n\nShall we go on?"  # its last turn is heard with the question
    assert "(Your answer 'too many' was not accepted: 'too many' is not of type 'object'." in second.input
    kinds = [event.kind for event in answer.events]
    assert kinds == ["agent.prompt", "agent.reply", "hitl.rejected", "agent.prompt", "agent.reply"]
    assert here.answering.log.notes == [AnswerNote("talk/1/ada", "ada", "simulated", "agents.ada")]


def test_a_recorded_answer_comes_before_the_simulated_person() -> None:
    agent = ScriptedAgent(["never used"])
    replay = RecordedAnswers("old", {"talk/1/ada": RecordedAnswer("talk/1/ada", "ada", "yes")})
    here = frame(Answering(replay=replay, simulated_user=SimulatedPerson(agent, "agents.ada")))
    answer = asyncio.run(ask_person(PersonQuestion(step="ada", path="talk/1/ada", message="Go on?"), here))
    assert (answer.value, answer.source, answer.by, answer.usage) == ("yes", "replayed", "old", Usage())
    assert not agent.calls
    other = asyncio.run(ask_person(PersonQuestion(step="ada", path="talk/2/ada", message="And now?"), here))
    assert other.source == "simulated" and here.answering.log.new_questions == ["talk/2/ada"]


def test_the_conversation_a_simulated_person_hears_is_bounded_like_any_history() -> None:
    agent = ScriptedAgent(["fine"])
    turns = [ConversationTurn("user" if i % 2 else "assistant", f"turn {i}") for i in range(10)]
    question = PersonQuestion(
        step="ada",
        path="talk/5/ada",
        message="And now?",
        answered_by=SimulatedPerson(agent, "agents.ada"),
        heard=turns,
        history=HistoryPolicy(strategy="truncate_turns", max_turns=4),
    )
    asyncio.run(ask_person(question, frame(Answering())))
    assert [m.content for m in agent.calls[0].history] == ["turn 6", "turn 7", "turn 8", "turn 9"]
    assert [m.role for m in agent.calls[0].history] == ["user", "assistant", "user", "assistant"]


def test_a_prompt_budget_bounds_what_a_simulated_person_hears() -> None:
    agent = ScriptedAgent(["fine"], prompt_budget=60)
    turns = [
        ConversationTurn("user", "word " * 100),
        ConversationTurn("assistant", "short"),
        ConversationTurn("user", "ok"),
    ]
    question = PersonQuestion(
        step="ada", path="ask", message="Go?", answered_by=SimulatedPerson(agent, "agents.ada"), heard=turns
    )
    asyncio.run(ask_person(question, frame(Answering())))
    assert [m.content for m in agent.calls[0].history] == ["short", "ok"]  # the long oldest turn did not fit
