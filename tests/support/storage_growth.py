"""How the run store grows with a conversation: shared by the storage test and the storage benchmark.

``measure(turns)`` runs what a user runs: a YAML blueprint compiled as ``flujo run`` compiles it, a
``conversation: true`` loop of a scripted agent and a HITL step, each saying 800 distinct characters of
prose-like text per turn, through the real engine (with redaction) and the SQLite store. ``history``
chooses what each agent call is sent: ``unbounded`` (the whole conversation so far, so every
``agent.prompt`` event holds it: the case where a store that re-serialises the history at every step
grows with its square) or ``bounded`` (the default history settings). It returns the size of the
database files after the store is closed next to the size of the raw text.
"""

from __future__ import annotations

import asyncio
import json
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from core import Engine, NullReporter, Redactor
from core.store import open_store
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


History = Literal["unbounded", "bounded"]

UNBOUNDED_TOKENS = 100_000_000
"""``max_tokens`` of the unbounded loop: more than any conversation measured here holds."""


def blueprint(replies: list[str], *, history: History) -> str:
    """The YAML of the measured conversation: ``len(replies)`` iterations of the agent, then the human."""
    manage = (
        f"      history_management: {{strategy: truncate_tokens, max_tokens: {UNBOUNDED_TOKENS}}}\n"
        if history == "unbounded"
        else ""
    )
    return (
        'version: "0.1"\n'
        "name: growth\n"
        "agents:\n"
        "  helper:\n"
        "    model: scripted\n"
        "    system_prompt: You help a person plan. Ask one question at a time.\n"
        f"    replies: {json.dumps(replies)}\n"
        "steps:\n"
        "  - kind: loop\n"
        "    name: chat\n"
        "    loop:\n"
        "      conversation: true\n"
        f"{manage}"
        f"      max_loops: {len(replies)}\n"
        "      body:\n"
        "        - {kind: step, name: ask, uses: agents.helper}\n"
        '        - {kind: hitl, name: answer, message: "{{ steps.ask.output }}"}\n'
    )


def measure(turns: int, db_path: Path, *, history: History = "unbounded", state_uri: str | None = None) -> Growth:
    """Run a conversation of ``turns`` turns (the seed turn, then alternating assistant/user) into a new
    database at ``db_path`` (or the store at ``state_uri``, whose size the caller measures) and return how
    big it is next to the raw text."""
    from blueprints import load_pipeline
    from core import load_settings

    rng = random.Random(turns)
    texts = [turn_text(rng, index) for index in range(turns)]
    seed, replies, answers = texts[0], texts[1::2], texts[2::2]
    db_path.parent.mkdir(parents=True, exist_ok=True)
    source = db_path.parent / "growth.yaml"
    source.write_text(blueprint(replies, history=history))
    pipeline = load_pipeline(source, load_settings())

    async def run() -> None:
        store = await open_store(state_uri or str(db_path))
        try:
            engine = Engine(store=store, human=ScriptedHuman(answers), reporter=NullReporter(), redactor=Redactor())
            outcome = await engine.run(pipeline, seed)
            assert outcome.status in ("completed", "paused"), outcome
        finally:
            await store.close()

    asyncio.run(run())
    size = sum(p.stat().st_size for p in db_path.parent.glob(db_path.name + "*"))
    return Growth(turns=turns, raw_bytes=sum(len(t.encode("utf-8")) for t in texts), db_bytes=size)
