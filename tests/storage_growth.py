"""How the run store grows with a conversation: shared by the storage test and the storage benchmark.

``measure(turns)`` runs a ``conversation: true`` loop whose agent and human each say 800 distinct
characters of prose-like text per turn, through the real engine and the SQLite store, with no bound on
the history, so every agent call is sent (and its ``agent.prompt`` event holds) the whole conversation so
far: the case where a store that re-serialises the history at every step grows with its square. It
returns the size of the database files after the store is closed next to the size of the raw text.
"""

from __future__ import annotations

import asyncio
import random
from dataclasses import dataclass
from pathlib import Path

from core.agents.offline import ScriptedAgent
from core.engine import Engine
from core.redaction import Redactor
from core.steps import AgentStep, Conversation, HistoryPolicy, HitlStep, LoopStep, Pipeline
from core.store import open_store
from core.templates import Template
from core.testing import ScriptedHuman

TURN_CHARS = 800
_VOCABULARY = (
    "the a plan budget team offsite june trip family question answer we you need by end of next month "
    "because would like to keep it simple and cheap but still fun for everyone who joins us there "
    "options venue travel hotel train flight food dinner lunch morning evening agenda talk workshop "
    "goal priority deadline risk cost quote approve decide review draft final list notes clear short"
)
_WORDS = _VOCABULARY.split()


@dataclass(frozen=True)
class Growth:
    turns: int
    raw_bytes: int  # the UTF-8 size of every turn's text, the input included
    db_bytes: int  # the database file (and any WAL/shm left) after the store is closed

    @property
    def ratio(self) -> float:
        return self.db_bytes / self.raw_bytes


def turn_text(rng: random.Random, index: int) -> str:
    """``TURN_CHARS`` characters of word salad, different for every turn (compresses like prose, not better)."""
    words = [f"#{index}"]
    while sum(len(w) + 1 for w in words) < TURN_CHARS:
        words.append(rng.choice(_WORDS))
    return " ".join(words)[:TURN_CHARS]


def measure(turns: int, db_path: Path) -> Growth:
    """Run a conversation of ``turns`` turns (the seed turn, then alternating assistant/user) into a new
    database at ``db_path`` and return how big it is next to the raw text."""
    rng = random.Random(turns)
    texts = [turn_text(rng, index) for index in range(turns)]
    seed, replies, answers = texts[0], texts[1::2], texts[2::2]
    agent = ScriptedAgent(replies, system_prompt="You help a person plan. Ask one question at a time.")
    loop = LoopStep(
        name="chat",
        body=(
            AgentStep(name="ask", agent=agent),
            HitlStep(name="answer", message=Template("{{ steps.ask.output }}")),
        ),
        max_loops=len(replies),
        conversation=Conversation(history=HistoryPolicy(strategy="truncate_tokens", max_tokens=None)),
    )

    async def run() -> None:
        store = await open_store(str(db_path))
        try:
            engine = Engine(store=store, human=ScriptedHuman(answers), redactor=Redactor())
            outcome = await engine.run(Pipeline(steps=(loop,), name="growth"), seed)
            assert outcome.status in ("completed", "paused"), outcome
        finally:
            await store.close()

    asyncio.run(run())
    size = sum(p.stat().st_size for p in db_path.parent.glob(db_path.name + "*"))
    return Growth(turns=turns, raw_bytes=sum(len(t.encode("utf-8")) for t in texts), db_bytes=size)
