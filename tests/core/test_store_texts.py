"""Long texts stored once per run (core/store/rows/texts.py and the SQLite store that uses it)."""

from __future__ import annotations

import contextlib
import json
import shutil
import sqlite3
import zlib
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import core.store.rows.texts as texts_module
from core import RunRecord, StepRecord, TraceEvent
from core.model import codec, pack_tables
from core.model.errors import StoreError
from core.store import open_store
from core.store.rows.texts import MIN_SHARED, join, references, split
from tests.support.storage_growth import turn_texts

_KEYS = [key.strip('"') for key in pack_tables.JSON_CODE_KEYS]

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


PROSE = turn_texts(1, 800)[0]


def test_a_text_is_compressed_against_the_dictionary_smaller_than_alone() -> None:
    """Issue 36: a turn of English prose is compressed against ``pack_tables.DICTIONARY`` (its version byte,
    then raw deflate), smaller than zlib makes it alone; a long text is still compressed alone."""
    packed = codec.pack(PROSE)
    assert isinstance(packed, bytes) and packed[0] == pack_tables.VERSION
    assert len(packed) < len(zlib.compress(PROSE.encode(), 9)) - 20
    assert codec.unpack(packed) == PROSE
    long = " ".join(turn_texts(8, 800))
    alone = codec.pack(long)
    assert isinstance(alone, bytes) and alone[:1] == b"\x78" and codec.unpack(alone) == long  # a zlib stream


def test_every_form_stored_before_still_reads() -> None:
    assert codec.unpack(zlib.compress(PROSE.encode(), 6)) == PROSE  # what main's pack wrote
    assert codec.load('{"a": [1, "x\\u0001"]}') == {"a": [1, "x\u0001"]}  # JSON without codes reads as it is
    assert codec.load(zlib.compress(b'{"$text": 3}')) == {"$text": 3}


@pytest.mark.parametrize("cut", [1, 10, -1])
def test_a_damaged_compressed_value_is_a_store_error(cut: int) -> None:
    packed = codec.pack(PROSE)
    assert isinstance(packed, bytes)
    damaged = packed[:cut] if cut > 1 else packed[:1] + bytes(20) if cut == 1 else packed + b"more"
    with pytest.raises(StoreError, match="cannot be decompressed"):
        codec.unpack(damaged)


REPLY = {
    "output": {"$text": 1234},
    "model": "scripted",
    "attempts": 1,
    "usage": {"input_tokens": 0, "output_tokens": 0, "requests": 1, "cost_usd": 0.0},
}


def test_a_payloads_common_json_is_written_as_codes() -> None:
    text = codec.compact(REPLY)
    shrunk = codec.pack_json(text)
    assert isinstance(shrunk, str) and len(shrunk) * 4 < len(text)
    assert codec.load(shrunk) == REPLY and codec.grow(shrunk) == text


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.sampled_from([*_KEYS, "x", "$text", "role"]) | st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)


@given(_JSON)
def test_shrink_and_grow_are_inverses_on_json(value: Any) -> None:
    text = codec.compact(value)
    assert codec.grow(codec.shrink(text)) == text
    assert codec.load(codec.pack_json(text)) == value


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
    monkeypatch.setattr(texts_module, "run_digest", lambda run_id, text: b"same-digest-for-all")
    async with await open_store(str(tmp_path / "flujo.db")) as store:
        await store.create_run(RunRecord(run_id="r", pipeline_name="p", status="running", input=[LONG, OTHER]))
        step = StepRecord(run_id="r", path="1", name="s", kind="step", status="completed", input=OTHER, output=LONG)
        await store.record_step(step, [])
        record = await store.get_run("r")
        assert record is not None and record.input == [LONG, OTHER]
        [stored] = await store.steps("r")
        assert (stored.input, stored.output) == (OTHER, LONG)


DATA = Path(__file__).parents[1] / "data" / "store"


async def test_a_store_written_before_issue_36_reads_and_grows(tmp_path: Path) -> None:
    """tests/data/store/written_before_issue_36.db: a conversation of 12 turns of 400 characters
    (``tests/support/storage_growth.measure``, unbounded history) written by flujo before issue 36: its texts
    zlib-compressed, their 16-byte digests indexed with run ids, its usages whole; the .json holds what that
    flujo read back. Migrated on opening (m010), it reads the same; a text it holds is found by its old
    digest, not stored again; new rows, packed the new way, read beside the old."""
    path = tmp_path / "flujo.db"
    shutil.copy(DATA / "written_before_issue_36.db", path)
    expected = json.loads((DATA / "written_before_issue_36.json").read_text(encoding="utf-8"))
    run_id = expected["run"]["run_id"]
    assert _query(path, "SELECT typeof(body), count(*) FROM texts GROUP BY 1") == [("blob", 13), ("text", 3)]
    async with await open_store(str(path)) as store:
        run = await store.get_run(run_id)
        assert run is not None
        assert [run.input, run.output, run.usage.to_dict()] == [
            expected["run"][key] for key in ("input", "output", "usage")
        ]
        steps = [
            {"path": s.path, "input": s.input, "output": s.output, "usage": s.usage.to_dict()}
            for s in await store.steps(run_id)
        ]
        assert steps == expected["steps"]
        events = [{"kind": e.kind, "path": e.path, "payload": e.payload} for e in await store.events(run_id)]
        assert events == expected["events"]
        said = expected["steps"][0]["output"]
        [(before,)] = _query(path, "SELECT count(*) FROM texts")
        step = StepRecord(run_id=run_id, path="more", name="s", kind="step", status="completed", output=said)
        await store.record_step(step, [TraceEvent("agent.reply", "more", {**REPLY, "output": said}, 9.0)])
        assert _query(path, "SELECT count(*) FROM texts") == [(before,)]  # found by its digest of then
        assert (await store.steps(run_id))[-1].output == said
        assert (await store.events(run_id))[-1].payload == {**REPLY, "output": said}
        assert [e.payload for e in (await store.events(run_id))[:-1]] == [e["payload"] for e in expected["events"]]
    indexes = {row[0] for row in _query(path, "SELECT name FROM sqlite_master WHERE type = 'index'")}
    assert "texts_by_hash" in indexes and "texts_by_run_and_hash" not in indexes
    assert _query(path, "PRAGMA integrity_check") == [("ok",)]
