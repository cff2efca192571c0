"""Long texts stored once per run (core/store/rows/texts.py and the SQLite store that uses it)."""

from __future__ import annotations

import contextlib
import sqlite3
from pathlib import Path
from typing import Any

import pytest

import core.store.rows.texts as texts_module
from core import RunRecord, StepRecord, TraceEvent
from core.model import codec
from core.store import open_store
from core.store.rows.texts import MIN_SHARED, join, references, split

LONG = "x" * MIN_SHARED
OTHER = "y" * (MIN_SHARED + 10)


def _ids() -> tuple[dict[str, int], Any]:
    ids: dict[str, int] = {}
    return ids, lambda text: ids.setdefault(text, len(ids) + 1)


@pytest.mark.parametrize(
    "value",
    [
        None,
        "short",
        LONG,
        [LONG, "short", LONG, 3, None, True],
        {"messages": [{"role": "user", "content": LONG}, {"role": "assistant", "content": OTHER}]},
        {"$text": 1},  # user data that looks like a reference
        {"$literal": {"$text": 2}},
        {"$text": LONG},
        {"$literal": "plain"},
        {"nested": {"$text": 7, "other": LONG}},
    ],
)
def test_split_and_join_are_inverses(value: Any) -> None:
    ids, text_id = _ids()
    stored = split(value, text_id)
    bodies = {number: text for text, number in ids.items()}
    assert sorted(set(references(stored))) == sorted(bodies)
    assert join(stored, bodies) == value


def test_only_long_texts_are_replaced() -> None:
    _, text_id = _ids()
    assert split({"a": "s" * (MIN_SHARED - 1), "b": LONG}, text_id) == {"a": "s" * (MIN_SHARED - 1), "b": {"$text": 1}}


def test_pack_compresses_long_compressible_text_and_keeps_short_text() -> None:
    assert codec.pack("short") == "short"
    packed = codec.pack("abc" * 400)
    assert isinstance(packed, bytes) and len(packed) < 200
    assert codec.unpack(packed) == "abc" * 400


def _query(path: Path, sql: str) -> list[Any]:
    with contextlib.closing(sqlite3.connect(path)) as db:
        return db.execute(sql).fetchall()


async def test_a_text_repeated_across_steps_and_events_is_stored_once(tmp_path: Path) -> None:
    path = tmp_path / "flujo.db"
    turn = "What matters most to you about the offsite, and by when must it be settled?"
    async with await open_store(str(path)) as store:
        await store.create_run(RunRecord(run_id="r", pipeline_name="p", status="running", input=turn))
        for n in range(5):
            messages = [{"role": "user", "content": turn}] * (n + 1)
            event = TraceEvent(kind="agent.prompt", path=str(n), payload={"messages": messages}, ts=1.0)
            step = StepRecord(
                run_id="r", path=str(n), name="s", kind="step", status="completed", input=turn, output=turn
            )
            await store.record_step(step, [event])
        assert [s.output for s in await store.steps("r")] == [turn] * 5
        assert (await store.events("r"))[4].payload == {"messages": [{"role": "user", "content": turn}] * 5}
    assert _query(path, "SELECT COUNT(*) FROM texts") == [(1,)]


async def test_texts_are_kept_apart_by_run_and_go_with_their_run(tmp_path: Path) -> None:
    path = tmp_path / "flujo.db"
    async with await open_store(str(path)) as store:
        for run_id in ("a", "b"):
            await store.create_run(RunRecord(run_id=run_id, pipeline_name="p", status="running", input=LONG))
        assert (await store.get_run("b")) is not None
    assert _query(path, "SELECT run_id FROM texts ORDER BY run_id") == [("a",), ("b",)]
    with contextlib.closing(sqlite3.connect(path)) as db, db:
        db.execute("PRAGMA foreign_keys = ON")
        db.execute("DELETE FROM runs WHERE run_id = 'a'")
    assert _query(path, "SELECT run_id FROM texts") == [("b",)]


async def test_a_digest_collision_never_makes_one_text_stand_for_another(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(texts_module, "digest", lambda text: b"same-digest-for-all")
    async with await open_store(str(tmp_path / "flujo.db")) as store:
        await store.create_run(RunRecord(run_id="r", pipeline_name="p", status="running", input=[LONG, OTHER]))
        step = StepRecord(run_id="r", path="1", name="s", kind="step", status="completed", input=OTHER, output=LONG)
        await store.record_step(step, [])
        record = await store.get_run("r")
        assert record is not None and record.input == [LONG, OTHER]
        [stored] = await store.steps("r")
        assert (stored.input, stored.output) == (OTHER, LONG)
