"""How the run store grows with a conversation: shared by the storage test and the storage benchmark.

``measure(turns)`` runs what a user runs: a YAML blueprint compiled as ``flujo run`` compiles it, a
``conversation: true`` loop of a scripted agent and a HITL step, each saying a distinct turn of 800 (or
180) characters of English prose (sentences of a novel drawn at random: ``turn_texts``), through the real
engine (with redaction) and the SQLite store. ``history``
chooses what each agent call is sent: ``unbounded`` (the whole conversation so far, so every
``agent.prompt`` event holds it: the case where a store that re-serialises the history at every step
grows with its square) or ``bounded`` (the default history settings). It returns the size of the
database files after the store is closed next to the size of the raw text.
"""

from __future__ import annotations

import asyncio
import json
import random
import sqlite3
import zlib
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Literal

from core import Engine, NullReporter, Redactor
from core.store import open_store
from core.testing import ScriptedHuman

TURN_CHARS = 800
SHORT_TURN_CHARS = 180
"""The two turn lengths measured: a long reply, and a short exchange (where the fixed cost per turn shows)."""

PROSE = Path(__file__).resolve().parents[2] / "benchmarks" / "prose.txt"
"""English prose to draw turns from (a public-domain novel: its first lines say which, and how it compresses)."""

_NOT_AN_END = ("Mr.", "Mrs.", "Dr.", "St.")  # a full stop that ends a title, not a sentence


@dataclass(frozen=True)
class Growth:
    turns: int
    raw_bytes: int  # the UTF-8 size of every turn's text, the input included
    db_bytes: int  # the database file (and any WAL/shm left) after the store is closed
    packed_bytes: int = 0  # the turns' texts each compressed alone, or raw (``alone_bytes``)

    @property
    def ratio(self) -> float:
        return self.db_bytes / self.raw_bytes

    def fixed_cost(self, empty_bytes: int = 0) -> float:
        """Bytes per turn beyond its text compressed alone: (store - empty store - ``packed_bytes``) / turns."""
        return (self.db_bytes - empty_bytes - self.packed_bytes) / self.turns


def alone_bytes(text: str) -> int:
    """The size of ``text`` kept alone as a store can at least keep it: zlib level 6 when that makes 256 or
    more UTF-8 bytes a tenth smaller, else raw (``codec.pack`` on main before issue 36). The fixed cost of a
    turn is what the store holds beyond this (``Growth.fixed_cost``)."""
    raw = text.encode("utf-8")
    packed = len(zlib.compress(raw, 6))
    return packed if len(raw) >= 256 and packed * 10 <= len(raw) * 9 else len(raw)


@cache
def sentences() -> tuple[str, ...]:
    """The sentences of ``PROSE`` (after its header: the lines before the first blank line)."""
    text = PROSE.read_text(encoding="utf-8").split("\n\n", 1)[1]
    found: list[str] = []
    for paragraph in text.splitlines():
        start = 0
        for end in _ends(paragraph):
            piece = paragraph[start:end].strip()
            if piece:
                found.append(piece)
            start = end
        if paragraph[start:].strip():
            found.append(paragraph[start:].strip())
    return tuple(found)


def _ends(paragraph: str) -> list[int]:
    """Where the sentences of ``paragraph`` end: after ``.``, ``!`` or ``?`` (and a closing quote) before a space."""
    ends = []
    for index, char in enumerate(paragraph):
        if char in ".!?" and not paragraph[: index + 1].endswith(_NOT_AN_END):
            end = index + 1
            while end < len(paragraph) and paragraph[end] in "\"'":
                end += 1
            if end < len(paragraph) and paragraph[end] == " ":
                ends.append(end)
    return ends


def turn_texts(count: int, chars: int = TURN_CHARS, *, seed: int = 0) -> list[str]:
    """``count`` different turns of ``chars`` characters each: sentences of ``PROSE`` drawn at random (real
    sentences, the book's words at the book's frequencies), the last one cut at ``chars``."""
    rng = random.Random(f"{seed}:{count}:{chars}")
    pool = sentences()
    made: list[str] = []
    seen: set[str] = set()
    while len(made) < count:
        parts: list[str] = []
        size = 0
        while size < chars:
            parts.append(rng.choice(pool))
            size += len(parts[-1]) + 1
        text = " ".join(parts)[:chars]
        if text not in seen:  # every turn distinct: a repeated one would be stored once, flattering the store
            seen.add(text)
            made.append(text)
    return made


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


def measure(
    turns: int,
    db_path: Path,
    *,
    history: History = "unbounded",
    state_uri: str | None = None,
    turn_chars: int = TURN_CHARS,
) -> Growth:
    """Run a conversation of ``turns`` turns (the seed turn, then alternating assistant/user) into a new
    database at ``db_path`` (or the store at ``state_uri``, whose size the caller measures) and return how
    big it is next to the raw text."""
    from blueprints import load_pipeline
    from core import load_settings

    texts = turn_texts(turns, turn_chars)
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
    if state_uri is None:
        _checkpoint(db_path)
    size = sum(p.stat().st_size for p in db_path.parent.glob(db_path.name + "*"))
    return Growth(
        turns=turns,
        raw_bytes=sum(len(t.encode("utf-8")) for t in texts),
        db_bytes=size,
        packed_bytes=sum(alone_bytes(t) for t in texts),
    )


def _checkpoint(db_path: Path) -> None:
    """Copy what the write-ahead log holds into the database file and empty the log (closing the store's last
    connection does that already; done here so that the size measured never depends on it)."""
    db = sqlite3.connect(db_path)
    try:
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        db.close()
