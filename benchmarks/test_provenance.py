"""What recording why each message is there costs (issue 34): a 1,000-iteration conversation with and
without the provenance, in the same sitting.

Each turn carries its origin (``ConversationTurn.origin``, a short text made once when it is said), the
event of the step that made it its number (``provenance.told``), and an agent call's ``agent.prompt`` event
a ``why`` of ids when it has something new to say: the origins no step's event gives, its message's when it
is not the newest turn, and what the bound left out when that changed (``core.conversation.injection``).
"without" turns all three off (no origins on the turns, no numbers on the events, no ``why`` on the
prompts), so the two cases differ by exactly that work: making the origins, the numbers and the ``why``,
and storing them (a JSON round trip in the memory store). The
conversation is ``benchmarks/test_conversation.py``'s (an echo agent with a system prompt, a HITL question,
``truncate_tokens`` 1,024: from iteration ~10 every call drops turns, so every call also says which and by
which rule), run through the engine into an in-memory store. Target: "with" within the noise of "without"
(docs/performance.md).
"""

from __future__ import annotations

import asyncio
import contextlib
import statistics
import time

from pytest_benchmark.fixture import BenchmarkFixture

from benchmarks import sizes
from benchmarks.provenance_run import provenance_off
from benchmarks.test_conversation import ANSWER, _loop
from core import Engine, Pipeline, RunOutcome
from core.model.provenance import read_why
from core.store import MemoryStore
from core.testing import ScriptedHuman

ITERATIONS = sizes.size(1000, 10)
ROUNDS = sizes.size(7, 1)


def _conversation(provenance: bool) -> tuple[RunOutcome, MemoryStore]:
    """One whole conversation through the engine, with the provenance or without it."""
    with contextlib.nullcontext() if provenance else provenance_off():
        store = MemoryStore()
        engine = Engine(store=store, human=ScriptedHuman([ANSWER] * ITERATIONS))
        pipeline = Pipeline(steps=(_loop(ITERATIONS),), name="bench")
        return asyncio.run(engine.run(pipeline, "Plan the offsite")), store


def test_thousand_iteration_conversation_with_and_without(benchmark: BenchmarkFixture) -> None:
    """Each round runs the conversation without the provenance, then with it, and times each in CPU time (the
    machine's other work shifts both alike); the round's own time is the pair. ``extra_info``: the medians
    and their ratio."""
    cpu: dict[bool, list[float]] = {True: [], False: []}
    outcomes: dict[bool, tuple[RunOutcome, MemoryStore]] = {}

    def pair() -> None:
        for provenance in (False, True):
            started = time.process_time()
            outcomes[provenance] = _conversation(provenance)
            cpu[provenance].append(time.process_time() - started)

    benchmark.pedantic(pair, rounds=ROUNDS, warmup_rounds=sizes.size(1, 0))
    with_, without = statistics.median(cpu[True]), statistics.median(cpu[False])
    benchmark.extra_info.update(
        with_ms=round(with_ * 1000, 1), without_ms=round(without * 1000, 1), ratio=round(with_ / without, 3)
    )
    for provenance, (outcome, store) in outcomes.items():
        assert outcome.status == "completed", outcome.error
        events = asyncio.run(store.events(outcome.run_id))
        prompts = [e for e in events if e.kind == "agent.prompt"]
        assert len(prompts) == ITERATIONS
        whys = [event.payload.get("why") for event in prompts]
        answers = [e.payload.get("turn") for e in events if e.kind == "hitl.answer"]
        if provenance:
            assert whys[0] == {"left_out": [], "said": [1, "s input"], "source": "last"}
            last = read_why(whys[-1] or {}, prompts[-1].payload["history"])
            assert last["message"] == 2 * ITERATIONS - 1  # the number of the last answer, which its event gives
            assert answers[-2:] == [2 * ITERATIONS - 1, 2 * ITERATIONS + 1]  # each iteration: a reply, an answer
        else:
            assert whys == [None] * ITERATIONS and answers == [None] * ITERATIONS
