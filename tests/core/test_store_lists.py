"""Long lists of event payloads stored once per run (core/store/rows/shared_lists.py and the stores using it):
the prompt events of an unbounded history grow with the conversation, not with its square, and read back
exactly as written, across pruning, copying between stores and stores written before lists were shared."""

from __future__ import annotations

import asyncio
import contextlib
import json
import shutil
import sqlite3
import uuid
from pathlib import Path
from typing import Any

import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from benchmarks import ensemble_run
from blueprints import load_pipeline
from core import Engine, NullReporter, Redactor, RunRecord, RunUpdate, StepRecord, StoreError, TraceEvent, load_settings
from core.model import codec
from core.store import copy_runs, open_store
from core.store.rows import shared_lists, texts
from core.store.rows.shared_lists import ListMemory, Pending
from core.testing import ScriptedHuman

DATA = Path(__file__).parents[1] / "data" / "store"
SYSTEM = {"role": "system", "content": "You help a person plan. Ask one question at a time, and keep it short."}


def turn(n: int) -> dict[str, Any]:
    role = "assistant" if n % 2 else "user"
    return {"role": role, "content": f"Turn {n}: what matters most about the offsite, and by when? ({n})" * 2}


def prompt(n: int) -> dict[str, Any]:
    """The payload of the n-th call of an unbounded conversation: every turn so far."""
    return {"agent": "scripted", "messages": [SYSTEM, *(turn(i) for i in range(2 * n + 1))], "history_injected": True}


def window(n: int, size: int = 10) -> dict[str, Any]:
    """The payload of the n-th call of a bounded conversation: the system prompt, then the newest turns."""
    newest = range(max(0, 2 * n + 1 - size), 2 * n + 1)
    return {"agent": "scripted", "messages": [SYSTEM, *(turn(i) for i in newest)], "history_injected": True}


def _query(path: Path, sql: str) -> list[Any]:
    with contextlib.closing(sqlite3.connect(path)) as db:
        return db.execute(sql).fetchall()


def _step(run_id: str, n: int) -> StepRecord:
    return StepRecord(run_id=run_id, path=f"chat/{n}/ask", name="ask", kind="step", status="completed", output=n)


async def _conversation(store: Any, run_id: str, calls: int) -> list[dict[str, Any]]:
    await store.create_run(RunRecord(run_id=run_id, pipeline_name="p", status="running"))
    written = []
    for n in range(calls):
        written.append(prompt(n))
        await store.record_step(_step(run_id, n), [TraceEvent("agent.prompt", f"chat/{n}/ask", prompt(n), float(n))])
    return written


async def _stored_bytes(path: Path, calls: int) -> int:
    async with await open_store(str(path)) as store:
        await _conversation(store, "r", calls)
    [(events,)] = _query(path, "SELECT SUM(LENGTH(payload)) FROM events")
    [(bodies,)] = _query(path, "SELECT SUM(LENGTH(body)) FROM texts")
    return int(events) + int(bodies)


def test_share_then_gather_gives_back_every_value() -> None:
    bodies: dict[int, str] = {}
    ids: dict[str, int] = {}

    def text_id(text: str) -> int:
        return ids.setdefault(text, len(ids) + 1000)

    def split(value: object) -> object:
        return texts.split(value, text_id)

    def store(body: str) -> int:
        bodies[len(bodies) + 1] = body
        return len(bodies)

    memory, pending = ListMemory(), Pending()
    values = [
        prompt(3),
        prompt(3),  # the same list again: referred to, not stored again
        prompt(5),  # extends the last one
        {"short": [turn(1), turn(2)], "nested": {"deep": [turn(i) for i in range(9)]}},
        prompt(2),  # a prefix of a remembered list, extending none: stored whole
        [[1, 2]] * 9,
        window(8),
        window(9),  # slid by two turns: the system prompt kept, two turns dropped, two added
        {"messages": [SYSTEM, turn(10), turn(99), *(turn(i) for i in range(11, 19))]},  # no slide of one
    ]
    stored = [
        shared_lists.finish(shared_lists.cut(v, "r", memory, pending), "r", pending, split, store) for v in values
    ]
    assert stored[0]["messages"] == stored[1]["messages"] == {"$text": [1]}
    assert json.loads(bodies[2])[0] == 1 and len(json.loads(bodies[2])[1]) == 4  # base 1, then 4 new turns
    slid = json.loads(bodies[stored[7]["messages"]["$text"][0]])
    assert slid[:3] == [stored[6]["messages"]["$text"][0], 1, 2] and len(slid[3]) == 2
    bodies.update({number: text for text, number in ids.items()})

    async def fetch(wanted: list[int]) -> dict[int, str]:
        return {i: bodies[i] for i in wanted}

    known = asyncio.run(shared_lists.gather(stored, fetch))
    assert [known.join(v) for v in stored] == values
    again = [known.join(v) for v in stored]
    again[0]["messages"].append("changed")
    assert known.join(stored[1]) == values[1]  # each read is a new list: nothing is shared between results


def test_a_list_that_extends_or_slides_a_remembered_one_costs_its_new_items(monkeypatch: pytest.MonkeyPatch) -> None:
    """The items a remembered list already holds are compared as given, never made plain or split again:
    what a step's write costs does not grow with the conversation."""
    made_plain: list[Any] = []
    split_sizes: list[int] = []
    plain = codec.plain
    monkeypatch.setattr(codec, "plain", lambda value: made_plain.append(value) or plain(value))
    memory, pending, bodies = ListMemory(), Pending(), [""]

    def split(value: Any) -> Any:
        split_sizes.append(len(value) if isinstance(value, list) else 0)
        return texts.split(value, lambda text: 7)

    def store(body: str) -> int:
        bodies.append(body)
        return len(bodies) - 1

    def write(value: dict[str, Any]) -> Any:
        stored = shared_lists.finish(shared_lists.cut(value, "r", memory, pending), "r", pending, split, store)
        memory.commit(pending)
        pending.lists.clear()
        return stored

    write(prompt(40))  # 82 messages, stored whole
    assert max(split_sizes) == 82
    for call in (prompt(41), window(42, size=80), window(43, size=80)):
        made_plain.clear()
        split_sizes.clear()
        stored = write(call)
        assert max(split_sizes) == 2, split_sizes  # the two turns said since: extended, then slid
        assert not any(isinstance(value, list) and len(value) > 2 for value in made_plain)
        assert json.loads(bodies[stored["messages"]["$text"][0]])[0] == len(bodies) - 2  # based on the last


def test_a_list_row_that_refers_to_itself_or_to_nothing_is_a_store_error() -> None:
    with pytest.raises(StoreError, match="refers to a list that is missing or itself"):
        shared_lists.expand({1: (1, None, 0, [])})
    with pytest.raises(StoreError, match="refers to a list that is missing or itself"):
        shared_lists.expand({1: (2, 1, 1, [])})


async def test_prompt_events_of_an_unbounded_history_read_back_as_written(tmp_path: Path) -> None:
    path = tmp_path / "flujo.db"
    async with await open_store(str(path)) as store:
        written = await _conversation(store, "r", 40)
    async with await open_store(str(path), mode="read") as store:
        assert [e.payload for e in await store.events("r")] == written
    # Each call's list is stored as the one before it plus what follows.
    [(payload,)] = _query(path, "SELECT payload FROM events ORDER BY seq DESC LIMIT 1")
    assert '"messages":{"$text":[' in codec.grow(codec.unpack(payload))


async def test_prompt_events_grow_linearly_with_the_conversation(tmp_path: Path) -> None:
    small = await _stored_bytes(tmp_path / "small.db", 40)
    large = await _stored_bytes(tmp_path / "large.db", 80)
    # Whole lists would make twice the calls take about four times the space.
    assert large <= 2.2 * small, (small, large)


async def test_prompt_events_of_a_bounded_history_store_what_slid_in(tmp_path: Path) -> None:
    path = tmp_path / "flujo.db"
    async with await open_store(str(path)) as store:
        await store.create_run(RunRecord(run_id="r", pipeline_name="p", status="running"))
        written = [window(n) for n in range(30)]
        for n, payload in enumerate(written):
            await store.record_step(_step("r", n), [TraceEvent("agent.prompt", f"chat/{n}/ask", payload, float(n))])
        assert [e.payload for e in await store.events("r")] == written
    rows = _query(path, "SELECT body FROM texts WHERE hash = x'' ORDER BY id")
    bodies = [json.loads(codec.grow(codec.unpack(row[0]))) for row in rows]
    assert [len(body) for body in bodies[-20:]] == [4] * 20  # each call: a slide of the one before
    assert all(len(body[3]) == 2 for body in bodies[-20:])


async def test_reading_prompts_joins_each_stored_message_once_and_gives_each_its_own_dict(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A conversation's prompts repeat its earlier turns (a sliding window here): reading them back joins
    each stored message once and copies it for the other prompts (``texts.join``'s ``flat``), so a replay
    reading 1,000 prompts of 21 messages does not join 21,000 (benchmarks/test_replay.py). Every message
    read is still a dict of its own, equal to the one written."""
    path = tmp_path / "flujo.db"
    written = [window(n) for n in range(30)]
    async with await open_store(str(path)) as store:
        await store.create_run(RunRecord(run_id="r", pipeline_name="p", status="running"))
        for n, payload in enumerate(written):
            await store.record_step(_step("r", n), [TraceEvent("agent.prompt", f"chat/{n}/ask", payload, float(n))])
    joined: list[Any] = []
    real = texts.join

    def counted(value: Any, *rest: Any) -> Any:
        joined.append(value)
        return real(value, *rest)

    monkeypatch.setattr(texts, "join", counted)
    async with await open_store(str(path), mode="read") as store:
        read = [event.payload for event in await store.events("r")]
    assert read == written
    messages = [message for payload in read for message in payload["messages"]]
    assert len({id(message) for message in messages}) == len(messages) == 30 * 11 - 25  # none shared
    read[1]["messages"][0]["content"] = "changed"
    assert read[2]["messages"][0] == SYSTEM  # a copy, not the message another prompt holds
    message_joins = sum(1 for value in joined if isinstance(value, dict) and "role" in value)
    # The first three prompts are shorter than a stored list (MIN_ITEMS), each joined whole; the others'
    # messages are the system prompt and turns 0-58, each joined once (there are 305 - 12 of them).
    assert message_joins == (2 + 4 + 6) + (1 + 59)


async def test_a_rolled_back_step_leaves_no_list_to_extend(tmp_path: Path) -> None:
    path = tmp_path / "flujo.db"
    async with await open_store(str(path)) as store:
        written = await _conversation(store, "r", 10)
        broken = TraceEvent(kind=None, path="x", payload={}, ts=1.0)  # type: ignore[arg-type]  # NOT NULL
        with pytest.raises(StoreError):
            await store.record_step(_step("r", 10), [TraceEvent("agent.prompt", "x", prompt(10), 1.0), broken])
        await store.record_step(_step("r", 11), [TraceEvent("agent.prompt", "y", prompt(11), 2.0)])
        assert [e.payload for e in await store.events("r")] == [*written, prompt(11)]


async def test_pruning_a_run_leaves_the_lists_of_the_others_whole(tmp_path: Path) -> None:
    path = tmp_path / "flujo.db"
    async with await open_store(str(path)) as store:
        await _conversation(store, "old", 12)
        kept = await _conversation(store, "new", 12)
        await store.update_run("old", RunUpdate(status="completed", finished_at=1.0))
        result = await store.prune_runs(keep=1)
        assert result.deleted == ("old",)
        await store.record_step(_step("new", 12), [TraceEvent("agent.prompt", "z", prompt(12), 3.0)])
        assert [e.payload for e in await store.events("new")] == [*kept, prompt(12)]
    assert _query(path, "SELECT DISTINCT run_id FROM texts") == [("new",)]


async def test_a_store_written_before_lists_were_shared_reads_and_grows(tmp_path: Path) -> None:
    path = tmp_path / "flujo.db"
    shutil.copy(DATA / "written_before_shared_lists.db", path)
    expected = json.loads((DATA / "written_before_shared_lists.json").read_text())
    run_id = expected["run"]["run_id"]
    async with await open_store(str(path)) as store:
        run = await store.get_run(run_id)
        assert run is not None and (run.input, run.output) == (expected["run"]["input"], expected["run"]["output"])
        steps = [{"path": s.path, "input": s.input, "output": s.output} for s in await store.steps(run_id)]
        assert steps == expected["steps"]
        events: list[dict[str, Any]] = [
            {"kind": e.kind, "path": e.path, "payload": e.payload} for e in await store.events(run_id)
        ]
        assert events == expected["events"]
        assert any(len(e["payload"].get("messages", [])) >= 8 for e in events)  # whole lists, as stored then
        await store.record_step(_step(run_id, 99), [TraceEvent("agent.prompt", "more", prompt(9), 9.0)])
        assert (await store.events(run_id))[-1].payload == prompt(9)


async def test_copying_between_sqlite_and_postgresql_keeps_every_payload(tmp_path: Path, postgres_uri: str) -> None:
    first, back = tmp_path / "first.db", tmp_path / "back.db"
    async with await open_store(str(first)) as store:
        written = await _conversation(store, "r", 15)
    async with await open_store(str(first), mode="read") as source, await open_store(postgres_uri) as target:
        await copy_runs(source, target)
        assert [e.payload for e in await target.events("r")] == written
    async with await open_store(postgres_uri, mode="read") as source, await open_store(str(back)) as target:
        await copy_runs(source, target)
        assert [e.payload for e in await target.events("r")] == written


async def test_postgresql_stores_each_call_as_the_one_before_plus_what_follows(postgres_uri: str) -> None:
    async with await open_store(postgres_uri) as store:
        written = await _conversation(store, "r", 20)
    async with await open_store(postgres_uri, mode="read") as store:
        assert [e.payload for e in await store.events("r")] == written
    with psycopg.connect(postgres_uri) as db:
        rows = db.execute("SELECT convert_from(body, 'UTF8') FROM texts WHERE hash = ''::bytea ORDER BY id").fetchall()
    bodies = [json.loads(row[0]) for row in rows]
    assert len(bodies) == 17  # calls 3 to 19 send 8 messages or more
    assert bodies[0][0] is None and all(len(items) == 2 for _, items in bodies[1:])  # two new turns a call


# Items whose Python equality is looser than their JSON (True == 1 == 1.0), beside messages and texts.
_ITEMS = st.one_of(
    st.sampled_from([1, True, 1.0, "1", 0, False, None, "x" * 60]),
    st.builds(
        lambda role, n: {"role": role, "content": f"turn {n} " * 8},
        st.sampled_from(["user", "assistant"]),
        st.integers(0, 5),
    ),
    st.builds(lambda n: {"role": "user", "content": n}, st.sampled_from([1, True, 1.0])),
)


@st.composite
def _conversations(draw: st.DrawFn) -> list[list[Any]]:
    """Lists of payload items, each the one before extended, slid, changed in place or new."""
    lists = [draw(st.lists(_ITEMS, min_size=shared_lists.MIN_ITEMS, max_size=12))]
    for _ in range(draw(st.integers(1, 5))):
        last = list(lists[-1])
        how = draw(st.sampled_from(["extend", "slide", "change", "new"]))
        if how == "extend":
            last += draw(st.lists(_ITEMS, min_size=1, max_size=3))
        elif how == "slide":
            last = last[:1] + last[3:] + draw(st.lists(_ITEMS, min_size=2, max_size=2))
        elif how == "change":
            last[draw(st.integers(0, len(last) - 1))] = draw(_ITEMS)
        else:
            last = draw(st.lists(_ITEMS, min_size=shared_lists.MIN_ITEMS, max_size=12))
        lists.append(last)
    return lists


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(conversation=_conversations())
def test_every_prompt_list_reads_back_exactly_as_written(tmp_path: Path, conversation: list[list[Any]]) -> None:
    """Whatever each list shares with the ones before, it reads back as its JSON: a true stays true, never
    the 1 an earlier list held in its place."""

    async def write_and_read(path: Path) -> list[dict[str, Any]]:
        async with await open_store(str(path)) as store:
            await store.create_run(RunRecord(run_id="r", pipeline_name="p", status="running"))
            for n, items in enumerate(conversation):
                event = TraceEvent("agent.prompt", f"chat/{n}/ask", {"agent": "a", "messages": items}, float(n))
                await store.record_step(_step("r", n), [event])
        async with await open_store(str(path), mode="read") as store:
            return [e.payload for e in await store.events("r")]

    path = tmp_path / f"{uuid.uuid4().hex}.db"
    read = asyncio.run(write_and_read(path))
    assert [json.dumps(p["messages"]) for p in read] == [json.dumps(codec.plain(items)) for items in conversation]


def test_each_participant_of_an_ensemble_extends_its_own_earlier_prompt(tmp_path: Path) -> None:
    """Three agents of an ensemble each see the conversation from their own point of view, so a prompt's
    list extends that agent's previous one, not the newest list of the run: the store remembers enough
    lists per run (``RECENT_LISTS``) that only each agent's first list is stored whole."""
    blueprint, answers = ensemble_run.write(30, tmp_path)
    path = tmp_path / "flujo.db"

    async def run() -> str:
        async with await open_store(str(path)) as store:
            human = ScriptedHuman(json.loads(answers.read_text())["editor"])
            engine = Engine(store=store, human=human, reporter=NullReporter(), redactor=Redactor())
            return (await engine.run(load_pipeline(blueprint, load_settings()), "Plan the offsite")).status

    assert asyncio.run(run()) == "completed"
    rows = _query(path, "SELECT body FROM texts WHERE hash = x''")
    bases = [json.loads(codec.grow(codec.unpack(body)))[0] for (body,) in rows]
    assert len(bases) > 40 and sum(base is None for base in bases) == 3  # notes, writer, critic


async def test_a_copy_holds_one_runs_values_at_a_time(tmp_path: Path) -> None:
    """``flujo store copy`` reads a run's input and output as it copies it, and the store copied into remembers
    at most ``TEXT_CACHE_CHARS`` of the texts it wrote: a store of 40 runs of 2 MB each is copied holding a
    few runs' worth of text, never all of them at once."""
    import tracemalloc

    big = 2_000_000
    async with await open_store(str(tmp_path / "source.db")) as store:
        for n in range(40):
            text = f"run {n} " + "x" * big
            await store.create_run(RunRecord(f"r{n}", "p", "completed", input=text, output=text, created_at=float(n)))
    tracemalloc.start()
    try:
        source = await open_store(str(tmp_path / "source.db"), mode="read")
        target = await open_store(str(tmp_path / "target.db"))
        async with source, target:
            copied, _ = await copy_runs(source, target)
            _, peak = tracemalloc.get_traced_memory()
            assert (await target.get_run("r7")) == (await source.get_run("r7"))
    finally:
        tracemalloc.stop()
    assert copied.runs == 40
    assert peak < 20 * big, peak  # all 40 runs' texts are 80 MB
