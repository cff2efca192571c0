"""Cost of a conversational loop iteration, excluding model time (issue 4).

Targets: under 0.5 ms median per iteration for history preparation + injection + turn capture + trace
recording, and iteration 1,000 costing no more than 1.5 x iteration 10 with ``truncate_tokens`` (the cost
must not grow with the history). Run with ``make bench``; figures are in docs/performance.md.

- ``test_iteration_at_history_length``: one iteration of a two-step body (a model agent with no explicit
  input, then a HITL question rendered from its reply) through the real step policies, with a history of
  20 turns (iteration 10) or 2,000 turns (iteration 1,000) already in the context. The agent and the human
  answer instantly; the store is in memory, so what is measured is flujo's own work per iteration.
- ``test_hundred_iteration_loop``: a whole 100-iteration conversational loop through the engine.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from pytest_benchmark.fixture import BenchmarkFixture

from core import (
    AgentStep,
    Conversation,
    Engine,
    HistoryPolicy,
    HitlStep,
    LoopStep,
    NullReporter,
    Pipeline,
    Redactor,
    RunContext,
    RunRecord,
    Template,
)
from core.agents import EchoAgent
from core.conversation import turns as turn_rules
from core.policies.frame import Frame
from core.policies.leaf import run_agent_step, run_hitl_step
from core.store import MemoryStore
from core.testing import ScriptedHuman

SYSTEM = "You help a person sharpen a goal. Ask one short clarifying question at a time. " * 3
QUESTION = "Which of the options we discussed matters most to you, and by when do you need it done? " * 2
ANSWER = "The budget matters most; I need it by the end of next month, before the team offsite. " * 2
ITERATIONS_PER_ROUND = 10
# Small enough that the bound already applies at iteration 10 (about 20 turns of ~48 tokens): the comparison
# with iteration 1,000 then shows whether the cost grows with the stored history, not with the injected one.
MAX_TOKENS = 1024


class AlwaysAnswers:
    """A human who answers every question at once."""

    async def ask(self, question: Any) -> str:
        return ANSWER


def _loop(max_loops: int = 100) -> LoopStep:
    clarify = AgentStep(name="clarify", agent=EchoAgent(system_prompt=SYSTEM))
    answer = HitlStep(name="answer", message=Template("{{ steps.clarify.output }}"))
    policy = HistoryPolicy(strategy="truncate_tokens", max_tokens=MAX_TOKENS)
    return LoopStep(name="chat", body=(clarify, answer), max_loops=max_loops, conversation=Conversation(history=policy))


@pytest.mark.parametrize("turns", [20, 2000], ids=["iteration_10", "iteration_1000"])
def test_iteration_at_history_length(benchmark: BenchmarkFixture, turns: int) -> None:
    loop = _loop()
    clarify, answer = loop.body
    assert isinstance(clarify, AgentStep) and isinstance(answer, HitlStep)
    active = turn_rules.start(loop)
    ctx = RunContext(initial_prompt="Plan the offsite")
    ctx.conversation = active
    for _ in range(turns // 2):
        turn_rules.add_turn(ctx, "assistant", QUESTION)
        turn_rules.add_turn(ctx, "user", ANSWER)
    store = MemoryStore()
    runner = asyncio.new_event_loop()
    runner.run_until_complete(store.create_run(RunRecord(run_id="bench", pipeline_name="bench", status="running")))
    frame = Frame(run_id="bench", store=store, human=AlwaysAnswers(), reporter=NullReporter(), redactor=Redactor())
    counter = iter(range(10**9))

    async def iterations() -> None:
        nonlocal ctx
        for _ in range(ITERATIONS_PER_ROUND):
            number = next(counter)
            work = ctx.isolate()
            work.conversation = active.for_iteration(ANSWER)
            output = await run_agent_step(clarify, ANSWER, work, f"chat/{number}/clarify", frame)
            await run_hitl_step(answer, output, work, f"chat/{number}/answer", frame)
            ctx.adopt(work)

    def reset() -> None:
        del ctx.conversation_history[turns:]  # every round starts at the same history length

    benchmark.pedantic(lambda: runner.run_until_complete(iterations()), setup=reset, rounds=60, warmup_rounds=3)
    runner.close()
    assert len(ctx.conversation_history) == turns + 2 * ITERATIONS_PER_ROUND


def test_hundred_iteration_loop(benchmark: BenchmarkFixture) -> None:
    pipeline = Pipeline(steps=(_loop(100),), name="bench")

    def run() -> Any:
        engine = Engine(store=MemoryStore(), human=ScriptedHuman([ANSWER] * 100))
        return asyncio.run(engine.run(pipeline, "Plan the offsite"))

    outcome = benchmark.pedantic(run, rounds=5, warmup_rounds=1)
    assert outcome.status == "completed"
