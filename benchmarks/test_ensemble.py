"""Cost of an ensemble round, excluding the participants' own time (issue 17).

Target: flat — a round at round 1,000 costs no more than 1.5 x a round at round 10. Four instant
participants speak every round: two Python scripts (each sent the JSON envelope) and two ``echo`` models
(each sent its point of view of the bounded history); one dependency has a condition. Each round goes
through the real policy: readiness, the concurrent calls, each turn committed with its ``agent.prompt`` /
``agent.reply`` trace events (in-memory store), and the state applied. Run with ``make bench``; figures
are in docs/performance.md.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from pytest_benchmark.fixture import BenchmarkFixture

from core import (
    Dependency,
    EnsembleStep,
    Expression,
    HistoryPolicy,
    NullReporter,
    Participant,
    Redactor,
    RunContext,
    RunRecord,
)
from core.agents import EchoAgent, PythonAgent
from core.conversation import Turn
from core.policies.dispatch import run_steps
from core.policies.ensemble import Conversation
from core.policies.frame import Frame
from core.store import MemoryStore

ROUNDS_PER_MEASURE = 10
SAID = "The budget matters most; I need it by the end of next month, before the team offsite."


async def notes(envelope: dict[str, Any]) -> dict[str, Any]:
    return {"notes": envelope["turn"], "seen": len(envelope["history"])}


async def tally(envelope: dict[str, Any]) -> dict[str, Any]:
    return {"tally": envelope["turn"]}


def _step() -> EnsembleStep:
    many = 10**6
    return EnsembleStep(
        name="chat",
        participants=(
            Participant("notes", agent=PythonAgent(notes), max_turns=many),
            Participant("tally", agent=PythonAgent(tally), max_turns=many, depends_on=(Dependency("notes"),)),
            Participant(
                "critic",
                agent=EchoAgent(system_prompt="You critique. " * 10),
                max_turns=many,
                depends_on=(Dependency("tally", condition=Expression("context.get('n', 0) >= 0")),),
            ),
            Participant("writer", agent=EchoAgent(system_prompt="You write. " * 10), max_turns=many),
        ),
        max_total_turns=many,
        timeout_seconds=None,
        history=HistoryPolicy(strategy="truncate_tokens", max_tokens=1024, max_turns=40),
    )


@pytest.mark.parametrize("rounds", [10, 1000], ids=["round_10", "round_1000"])
def test_round_at_conversation_length(benchmark: BenchmarkFixture, rounds: int) -> None:
    step = _step()
    store = MemoryStore()
    runner = asyncio.new_event_loop()
    runner.run_until_complete(store.create_run(RunRecord(run_id="bench", pipeline_name="bench", status="running")))
    frame = Frame(run_id="bench", store=store, human=NullHuman(), reporter=NullReporter(), redactor=Redactor())
    conversation = Conversation(step, "Plan the offsite", RunContext(), "chat", frame, run_steps)
    state = conversation.state
    for number in range(1, rounds + 1):  # the conversation so far, as if played
        spoken = [
            (p, [], Turn(number, p.name, {"said": SAID, "n": number}, 0.0, 0.0, f"chat/{number}/{p.name}"))
            for p in step.participants
        ]
        state.apply(spoken)

    async def play() -> None:
        for _ in range(ROUNDS_PER_MEASURE):
            assert await conversation.play_round() == "played"

    benchmark.pedantic(lambda: runner.run_until_complete(play()), rounds=30, warmup_rounds=2)
    runner.close()


class NullHuman:
    async def ask(self, question: Any) -> str | None:
        return None
