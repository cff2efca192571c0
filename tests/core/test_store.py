"""The run stores: one set of behavioural tests run against SqliteStore, PostgresStore (on a real server)
and MemoryStore, then what only
the SQLite store does (WAL, reopening, migrations, refusing foreign or newer files, error translation,
several processes writing at once)."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import sqlite3
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiosqlite
import pytest

import core.store
import core.store.sqlite_backend.store as sqlite_module
from core import (
    ConversationTurn,
    RunRecord,
    RunStore,
    RunUpdate,
    StepRecord,
    StoreError,
    StoreUnavailable,
    ThreadSummary,
    ThreadTurn,
    TraceEvent,
    Usage,
)
from core.model import codec
from core.store import SCHEMA_VERSION, MemoryStore, SqliteStore, open_store
from core.store.rows import text_cache
from core.store.sqlite_backend import batch as sqlite_batch
from core.store.sqlite_backend.migrations import MIGRATIONS
from core.text.tokens import count_tokens

REPO = Path(__file__).resolve().parents[2]


def test_exports() -> None:
    # What flujo_cli takes from the store's front door (issue 31), imported when first asked for.
    for_the_cli = {"ELSEWHERE_HINT", "OpenMode", "PostgresStore", "RUNNABLE", "copy_runs", "describe", "is_postgres"}
    for_the_cli |= {"process_label"}
    for_the_cli |= {"StorePeek", "peek_store", "project_state_uri"}  # shell completion (issue 35)
    for_the_cli |= {"Taken"}  # what flujo worker is given when it takes a queued run (issue 36)
    assert set(core.store.__all__) - for_the_cli == {"MemoryStore", "SCHEMA_VERSION", "SqliteStore", "open_store"}
    assert for_the_cli <= set(core.store.__all__)
    assert SCHEMA_VERSION == 11


def run(run_id: str, *, created_at: float = 1000.0, **fields: Any) -> RunRecord:
    return RunRecord(run_id=run_id, pipeline_name="demo", status="running", created_at=created_at, **fields)


def step(run_id: str, path: str, **fields: Any) -> StepRecord:
    values: dict[str, Any] = {"name": f"step {path}", "kind": "agent", "status": "completed"} | fields
    return StepRecord(run_id=run_id, path=path, **values)


def event(path: str, kind: str = "agent.reply", **payload: Any) -> TraceEvent:
    return TraceEvent(kind=kind, path=path, payload=payload, ts=2000.5)


@pytest.fixture(params=["sqlite", "postgres", "memory"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[RunStore]:
    opened: RunStore
    if request.param == "sqlite":
        opened = await open_store(str(tmp_path / "state" / "flujo.db"))
    elif request.param == "postgres":  # a real server (tests/support/postgres_server.py), a new schema per test
        opened = await open_store(request.getfixturevalue("postgres_uri"))
    else:
        opened = MemoryStore()
    try:
        yield opened
    finally:
        await opened.close()


# --- the same behaviour from both stores -------------------------------------------------------------


async def test_a_run_round_trips_every_field(store: RunStore) -> None:
    record = RunRecord(
        run_id="r1",
        pipeline_name="ünïcode pipeline",
        status="paused",
        source="steps: []\n",
        source_hash="abc",
        input={"question": "¿qué? 日本語 🚀", "n": [1, 2.5, None, True]},
        output="partial",
        error=None,
        created_at=1234.5,
        finished_at=None,
        usage=Usage(input_tokens=10, output_tokens=5, requests=2, cost_usd=None),
        parent_run_id="r0",
        thread="support",
        pause_path="3",
        pause_message="Approve?",
        options={"set": ["history.max_tokens=12"], "max_cost_usd": 0.5},
    )
    await store.create_run(record)
    assert await store.get_run("r1") == record
    await store.update_run("r1", RunUpdate(status="running", options={"max_tokens": 900}))
    updated = await store.get_run("r1")
    assert updated is not None and updated.options == {"max_tokens": 900}
    await store.update_run("r1", RunUpdate(status="paused"))  # options given as None leave them as they are
    again = await store.get_run("r1")
    assert again is not None and again.options == {"max_tokens": 900}


async def test_a_run_whose_input_is_a_long_text_can_be_created(store: RunStore) -> None:
    # Long texts are stored once, apart from the row that refers to them (before the run row exists).
    long_input = "Plan a two-week family trip to Japan in June, on a budget, with a ten-year-old. " * 3
    await store.create_run(run("r1", input=long_input, output={"draft": long_input}))
    record = await store.get_run("r1")
    assert record is not None and record.input == long_input and record.output == {"draft": long_input}


async def test_creating_a_run_twice_is_an_error(store: RunStore) -> None:
    await store.create_run(run("r1"))
    with pytest.raises(StoreError, match="already exists"):
        await store.create_run(run("r1"))


async def test_update_run_sets_given_fields_and_keeps_the_others(store: RunStore) -> None:
    await store.create_run(run("r1", input="hi"))
    await store.update_run("r1", RunUpdate(status="paused", output={"draft": 1}, pause_path="2", pause_message="ok?"))
    paused = await store.get_run("r1")
    assert paused is not None
    assert (paused.status, paused.output, paused.pause_path, paused.pause_message) == (
        "paused",
        {"draft": 1},
        "2",
        "ok?",
    )

    usage = Usage(input_tokens=3, output_tokens=4, requests=1, cost_usd=0.25)
    await store.update_run("r1", RunUpdate(status="completed", usage=usage, finished_at=1500.0))
    done = await store.get_run("r1")
    assert done is not None
    assert done.status == "completed"
    assert done.output == {"draft": 1}  # None means "unchanged" for output, error, usage, finished_at
    assert (done.usage, done.finished_at, done.input) == (usage, 1500.0, "hi")
    assert (done.pause_path, done.pause_message) == (
        None,
        None,
    )  # a run that is not paused has no pause point


async def test_updating_an_unknown_run_is_an_error(store: RunStore) -> None:
    with pytest.raises(StoreError, match="no run nope"):
        await store.update_run("nope", RunUpdate(status="failed"))


async def test_list_runs_newest_first_with_limit_and_status(store: RunStore) -> None:
    await store.create_run(run("old", created_at=1.0))
    await store.create_run(run("new", created_at=3.0))
    await store.create_run(run("mid", created_at=2.0))
    await store.create_run(run("mid-too", created_at=2.0))  # same time: the later insert is newer
    await store.update_run("mid", RunUpdate(status="failed", error="boom"))

    assert [r.run_id for r in await store.list_runs()] == ["new", "mid-too", "mid", "old"]
    assert [r.run_id for r in await store.list_runs(limit=2)] == ["new", "mid-too"]
    failed = await store.list_runs(status="failed")
    assert [(r.run_id, r.error) for r in failed] == [("mid", "boom")]
    assert await store.list_runs(status="paused") == []
    assert await store.list_runs(limit=0) == []


async def test_list_runs_since_a_moment_and_past_an_offset(store: RunStore) -> None:
    for number, created in enumerate((1.0, 2.0, 2.0, 3.0, 4.0)):
        await store.create_run(run(f"r{number}", created_at=created))
    newest_first = ["r4", "r3", "r2", "r1", "r0"]
    assert [r.run_id for r in await store.list_runs(created_after=2.0)] == newest_first[:4]  # 2.0 itself too
    assert [r.run_id for r in await store.list_runs(offset=1, limit=2)] == newest_first[1:3]
    assert [r.run_id for r in await store.list_runs(offset=2, created_after=2.0)] == newest_first[2:4]
    assert await store.list_runs(offset=5) == []
    assert [r.run_id for r in await store.list_runs(created_after=3.5, status="running")] == ["r4"]


async def test_list_runs_without_values_reads_no_input_or_output(store: RunStore) -> None:
    """``lens list`` shows no run's input or output, which may be tens of MB each: it asks for none."""
    long = "a long input, stored once in the texts table " * 100
    await store.create_run(run("r1", input=long, created_at=1.0))
    await store.update_run("r1", RunUpdate(status="completed", output={"answer": long}, error="none"))
    await store.create_run(run("r2", input="short", created_at=2.0, thread="t"))
    [second, first] = await store.list_runs(values=False)
    assert (first.run_id, first.input, first.output, first.error, first.status) == (
        "r1",
        None,
        None,
        "none",
        "completed",
    )
    assert (second.run_id, second.input, second.output, second.thread) == ("r2", None, None, "t")
    assert [(r.input, r.output) for r in await store.list_runs()] == [("short", None), (long, {"answer": long})]
    whole = await store.list_runs(offset=1)
    assert [dataclasses.replace(r, input=None, output=None) for r in whole] == [first]


async def test_get_run_by_full_id_or_unique_prefix(store: RunStore) -> None:
    await store.create_run(run("a1b2c3"))
    await store.create_run(run("a1b2c3d4"))
    await store.create_run(run("ffee00"))

    assert (await store.get_run("ff")) == run("ffee00")
    found = await store.get_run("a1b2c3")  # an exact id wins over the longer id it prefixes
    assert found is not None and found.run_id == "a1b2c3"
    found = await store.get_run("a1b2c3d")
    assert found is not None and found.run_id == "a1b2c3d4"
    assert await store.get_run("zz") is None
    assert await store.get_run("A1") is None  # ids are case-sensitive
    assert await store.get_run("") is None


async def test_an_ambiguous_prefix_names_up_to_five_candidates(store: RunStore) -> None:
    for i in range(7):
        await store.create_run(run(f"ab{i}"))
    await store.create_run(run("ac0"))

    with pytest.raises(StoreError) as caught:
        await store.get_run("ab")
    message = str(caught.value)
    assert "ambiguous" in message and "ab0, ab1, ab2, ab3, ab4 and more" in message
    assert "ab5" not in message and "ac0" not in message
    assert caught.value.hint and "more characters" in caught.value.hint

    await store.create_run(run("xy0"))
    await store.create_run(run("xy1"))
    with pytest.raises(StoreError, match=r"it matches xy0, xy1$"):
        await store.get_run("xy")


async def test_steps_come_back_in_recorded_order(store: RunStore) -> None:
    await store.create_run(run("r1"))
    paths = ["0", "10", "2", "1.loop[0].0", "1.loop[1].0", "3"]
    for path in paths:
        await store.record_step(step("r1", path, output={"at": path}), [])
    steps = await store.steps("r1")
    assert [s.path for s in steps] == paths
    assert steps[1] == step("r1", "10", output={"at": "10"})
    assert await store.steps("other") == []


async def test_recording_the_same_path_again_replaces_the_step(store: RunStore) -> None:
    await store.create_run(run("r1"))
    await store.record_step(step("r1", "0"), [event("0", answer="a")])
    await store.record_step(step("r1", "1", status="paused"), [event("1", kind="hitl.ask", question="ok?")])
    await store.record_step(
        step("r1", "1", status="completed", output="yes"), [event("1", kind="hitl.answer", answer="yes")]
    )

    steps = await store.steps("r1")
    assert [(s.path, s.status, s.output) for s in steps] == [
        ("0", "completed", None),
        ("1", "completed", "yes"),
    ]
    # events are the trace: both attempts stay, in order
    assert [e.kind for e in await store.events("r1")] == ["agent.reply", "hitl.ask", "hitl.answer"]

    await store.record_step(step("r1", "0", output="again"), [])
    assert [s.path for s in await store.steps("r1")] == ["1", "0"]  # a re-recorded step moves to the end


async def test_events_round_trip_in_order_with_unicode(store: RunStore) -> None:
    await store.create_run(run("r1"))
    await store.create_run(run("r2"))
    first = TraceEvent(
        kind="agent.prompt",
        path="0",
        payload={"messages": [{"role": "user", "content": 'Grüße, 世界 — 👋\n"quoted"'}], "n": 1},
        ts=1.25,
    )
    second = event("0", text="réponse ✓")
    await store.record_events("r1", [first])
    await store.record_step(step("r1", "0"), [second, event("0", kind="loop.exit", reason="done")])
    await store.record_events("r2", [event("9", kind="other")])
    await store.record_events("r1", [])

    events = await store.events("r1")
    assert events == [first, second, event("0", kind="loop.exit", reason="done")]
    assert [e.kind for e in await store.events("r2")] == ["other"]
    assert await store.events("nope") == []


async def test_the_events_of_one_kind_are_read_alone_in_order(store: RunStore) -> None:
    await store.create_run(run("r1"))
    await store.create_run(run("r2"))
    calls = [event("0", kind="agent.call", n=1), event("1", kind="agent.call", n=2)]
    await store.record_events("r1", calls[:1])
    await store.record_step(step("r1", "0"), [event("0", text="hi"), calls[1]])
    await store.record_events("r2", [event("0", kind="agent.call", n=3)])
    assert await store.events("r1", kind="agent.call") == calls
    assert await store.events("r1", kind="loop.exit") == []


async def test_values_go_through_json_the_same_way_in_both_stores(store: RunStore) -> None:
    await store.create_run(run("r1", input=("a", 1), output={1: Path("out.txt")}))
    await store.record_events("r1", [event("0", when=Path("x"), pair=(1, 2))])
    found = await store.get_run("r1")
    assert found is not None
    assert (found.input, found.output) == (["a", 1], {"1": "out.txt"})
    assert (await store.events("r1"))[0].payload == {"when": "x", "pair": [1, 2]}


async def test_reads_never_alias_what_is_stored(store: RunStore) -> None:
    await store.create_run(run("r1", input={"k": [1]}))
    await store.record_step(step("r1", "0", output={"k": 1}), [event("0", k=1)])
    found = await store.get_run("r1")
    assert found is not None
    found.input["k"].append(2)
    (await store.steps("r1"))[0].output["k"] = 2
    (await store.events("r1"))[0].payload["k"] = 2  # type: ignore[index]
    again = await store.get_run("r1")
    assert again is not None and again.input == {"k": [1]}
    assert (await store.steps("r1"))[0].output == {"k": 1}
    assert (await store.events("r1"))[0].payload == {"k": 1}


async def test_usage_round_trips(store: RunStore) -> None:
    usages = [Usage(), Usage(1, 2, 3, None), Usage(1_000_000, 7, 1, 0.000123)]
    await store.create_run(run("r1", usage=usages[1]))
    for i, usage in enumerate(usages):
        await store.record_step(step("r1", str(i), usage=usage), [])
    assert [s.usage for s in await store.steps("r1")] == usages
    found = await store.get_run("r1")
    assert found is not None and found.usage == usages[1]


async def test_steps_or_events_of_an_unknown_run_are_an_error(store: RunStore) -> None:
    with pytest.raises(StoreError, match="no such run") as caught:
        await store.record_step(step("ghost", "0"), [event("0")])
    assert caught.value.hint
    with pytest.raises(StoreError, match="no such run"):
        await store.record_events("ghost", [event("0")])


async def test_concurrent_tasks_share_a_store(store: RunStore) -> None:
    await store.create_run(run("r1"))
    await asyncio.gather(*(store.record_step(step("r1", str(i)), [event(str(i))]) for i in range(50)))
    assert len(await store.steps("r1")) == 50
    assert len(await store.events("r1")) == 50


# --- threads ----------------------------------------------------------------------------------------

LONG = "a turn long enough to be stored once in the texts table " * 3


def said(*turns: tuple[str, str]) -> list[ConversationTurn]:
    return [ConversationTurn(role, content, len(content.split())) for role, content in turns]  # type: ignore[arg-type]


def contents(turns: list[ThreadTurn]) -> list[tuple[str, int, str, str]]:
    return [(t.run_id, t.index, t.role, t.content) for t in turns]


async def test_a_runs_thread_turns_are_replaced_as_a_whole_and_read_in_run_order(store: RunStore) -> None:
    await store.create_run(run("b-later", created_at=20.0, thread="trip"))
    await store.create_run(run("a-first", created_at=10.0, thread="trip"))
    await store.create_run(run("other", created_at=15.0, thread="work"))
    await store.record_thread_turns("b-later", said(("user", "June?")))
    await store.record_thread_turns("a-first", said(("user", "Lisbon"), ("assistant", "Noted.")))
    await store.record_thread_turns("other", said(("user", "Budget")))
    # Paused, then resumed to the end: the run's turns are replaced by the full set, never doubled.
    await store.record_thread_turns("b-later", said(("user", "June?"), ("assistant", "Yes."), ("user", LONG)))
    turns = await store.thread_turns("trip")
    assert contents(turns) == [
        ("a-first", 0, "user", "Lisbon"),
        ("a-first", 1, "assistant", "Noted."),
        ("b-later", 0, "user", "June?"),
        ("b-later", 1, "assistant", "Yes."),
        ("b-later", 2, "user", LONG),
    ]
    assert [t.tokens for t in turns] == [1, 1, 1, 1, len(LONG.split())]
    assert contents(await store.thread_turns("work")) == [("other", 0, "user", "Budget")]
    assert await store.thread_turns("nobody") == []
    await store.record_thread_turns("b-later", [])
    assert [t.run_id for t in await store.thread_turns("trip")] == ["a-first", "a-first"]


async def test_a_turns_text_as_a_person_reads_it_is_kept_beside_what_was_said(store: RunStore) -> None:
    await store.create_run(run("r1", created_at=10.0, thread="trip"))
    asked = '{"action": "ask", "question": "Who is it for?"}'
    await store.record_thread_turns(
        "r1",
        [
            ConversationTurn("user", "Lisbon", 1),
            ConversationTurn("assistant", asked, 9, shown="Who is it for?"),
            ConversationTurn("assistant", LONG, 30, shown=LONG + "!"),  # long texts are stored once, as content
        ],
    )
    turns = await store.thread_turns("trip")
    assert [(t.content, t.shown, t.text) for t in turns] == [
        ("Lisbon", None, "Lisbon"),
        (asked, "Who is it for?", "Who is it for?"),
        (LONG, LONG + "!", LONG + "!"),
    ]


async def test_the_turns_before_a_run_are_those_of_the_threads_runs_created_before_it(store: RunStore) -> None:
    for run_id, created_at in (("r1", 10.0), ("r2", 20.0), ("r2-twin", 20.0), ("r3", 30.0)):
        await store.create_run(run(run_id, created_at=created_at, thread="t"))
        await store.record_thread_turns(run_id, said(("user", run_id)))
    before = {rid: [t.content for t in await store.thread_turns("t", before_run=rid)] for rid in ("r1", "r2", "r3")}
    assert before == {"r1": [], "r2": ["r1"], "r3": ["r1", "r2", "r2-twin"]}
    # Created at the same moment: the run created first comes first, as in list_runs.
    assert [t.content for t in await store.thread_turns("t", before_run="r2-twin")] == ["r1", "r2"]
    assert await store.thread_turns("t", before_run="unknown") == []


async def test_threads_are_listed_latest_first_with_their_runs_turns_and_tokens(store: RunStore) -> None:
    await store.create_run(run("r1", created_at=10.0, thread="trip"))
    await store.create_run(run("r2", created_at=30.0, thread="work"))
    await store.create_run(run("r3", created_at=40.0, thread="trip"))
    await store.create_run(run("lone", created_at=50.0))
    await store.record_thread_turns("r1", said(("user", "one two"), ("assistant", "three")))
    await store.record_thread_turns("r2", [ConversationTurn("user", "not counted yet")])  # counted when stored
    trip = ThreadSummary(name="trip", runs=2, turns=2, tokens=3, first_run_at=10.0, last_run_at=40.0)
    work = ThreadSummary(
        name="work", runs=1, turns=1, tokens=count_tokens("not counted yet"), first_run_at=30.0, last_run_at=30.0
    )
    assert await store.list_threads() == [trip, work]
    assert await store.get_thread("trip") == trip
    assert await store.get_thread("lone") is None


async def test_deleting_a_thread_removes_its_turns_and_keeps_its_runs(store: RunStore) -> None:
    await store.create_run(run("r1", created_at=10.0, thread="trip"))
    await store.create_run(run("r2", created_at=20.0, thread="work"))
    await store.record_thread_turns("r1", said(("user", LONG)))
    await store.record_thread_turns("r2", said(("user", "kept")))
    removed = await store.delete_thread("trip")
    assert removed == ThreadSummary("trip", runs=1, turns=1, tokens=len(LONG.split()), first_run_at=10, last_run_at=10)
    assert await store.delete_thread("trip") is None
    assert await store.get_thread("trip") is None and await store.thread_turns("trip") == []
    found = await store.get_run("r1")
    assert found is not None and found.thread is None
    assert [t.name for t in await store.list_threads()] == ["work"]
    # A run whose thread was deleted stores no turns when it ends later (a resume, say).
    await store.record_thread_turns("r1", said(("user", "late")))
    assert await store.thread_turns("trip") == []


async def test_thread_turns_of_an_unknown_run_are_an_error_and_a_run_in_no_thread_stores_none(
    store: RunStore,
) -> None:
    with pytest.raises(StoreError, match="no such run"):
        await store.record_thread_turns("ghost", said(("user", "hi")))
    await store.create_run(run("lone"))
    await store.record_thread_turns("lone", said(("user", "hi")))
    assert await store.list_threads() == []


async def test_list_runs_of_a_thread(store: RunStore) -> None:
    await store.create_run(run("t1", created_at=1.0, thread="trip"))
    await store.create_run(run("w1", created_at=2.0, thread="work"))
    await store.create_run(run("t2", created_at=3.0, thread="trip"))
    await store.update_run("t2", RunUpdate(status="completed"))
    assert [r.run_id for r in await store.list_runs(thread="trip")] == ["t2", "t1"]
    assert [r.run_id for r in await store.list_runs(thread="trip", status="running")] == ["t1"]
    assert await store.list_runs(thread="nobody") == []


async def test_list_the_child_runs_of_a_run(store: RunStore) -> None:
    await store.create_run(run("p", created_at=1.0))
    await store.create_run(run("c1", created_at=2.0, parent_run_id="p"))
    await store.create_run(run("c2", created_at=3.0, parent_run_id="p"))
    await store.create_run(run("g", created_at=4.0, parent_run_id="c1"))
    assert [r.run_id for r in await store.list_runs(parent_run_id="p")] == ["c2", "c1"]
    assert [r.run_id for r in await store.list_runs(parent_run_id="c1")] == ["g"]
    assert await store.list_runs(parent_run_id="g") == []


async def test_step_counts(store: RunStore) -> None:
    await store.create_run(run("r1"))
    await store.create_run(run("r2"))
    for path in ("a", "b", "a"):  # recorded again at the same path: still one step
        await store.record_step(step("r1", path), [])
    assert await store.step_counts(["r1", "r2", "ghost"]) == {"r1": 2, "r2": 0, "ghost": 0}
    assert await store.step_counts([]) == {}


async def _family(store: RunStore) -> None:
    """Runs created at 10, 20, ... 50: ``r1`` with a child ``r1-c`` (and grandchild ``r1-c-g``), ``r3``
    in thread ``trip`` with turns, an orphan child ``o4`` whose parent is gone, and ``r5``; each with a
    step, an event and a long text."""
    for run_id, created_at, fields in (
        ("r1", 10.0, {}),
        ("r1-c", 11.0, {"parent_run_id": "r1"}),
        ("r1-c-g", 12.0, {"parent_run_id": "r1-c"}),
        ("r3", 30.0, {"thread": "trip"}),
        ("o4", 40.0, {"parent_run_id": "deleted-long-ago"}),
        ("r5", 50.0, {}),
    ):
        await store.create_run(run(run_id, created_at=created_at, **fields))
        await store.record_step(step(run_id, "s", output=LONG), [event("s", text=LONG)])
    await store.record_thread_turns("r3", said(("user", LONG)))


async def test_prune_keeps_the_newest_top_level_runs_and_deletes_child_runs_with_their_parent(
    store: RunStore,
) -> None:
    await _family(store)
    pruned = await store.prune_runs(keep=2)
    assert (pruned.deleted, pruned.children, pruned.live) == (("r3", "r1"), ("r1-c", "r1-c-g"), ())
    assert [r.run_id for r in await store.list_runs()] == ["r5", "o4"]
    for gone in ("r1", "r1-c", "r1-c-g", "r3"):
        assert await store.get_run(gone) is None
        assert await store.steps(gone) == [] and await store.events(gone) == []
    assert await store.thread_turns("trip") == [] and await store.get_thread("trip") is None
    assert [e.payload for e in await store.events("r5")] == [{"text": LONG}]  # the others' texts are intact


async def test_prune_by_age_and_by_both(store: RunStore) -> None:
    await _family(store)
    assert (await store.prune_runs(created_before=30.0)).deleted == ("r1",)  # strictly older
    assert [r.run_id for r in await store.list_runs()] == ["r5", "o4", "r3"]
    pruned = await store.prune_runs(created_before=45.0, keep=2)  # beyond the 2 newest *and* older
    assert pruned.deleted == ("r3",)
    assert (await store.prune_runs(created_before=45.0, keep=2)).deleted == ()
    assert (await store.prune_runs()).deleted == ()  # no criterion: nothing
    assert [r.run_id for r in await store.list_runs()] == ["r5", "o4"]


async def test_prune_never_deletes_a_run_being_executed_and_a_dry_run_deletes_nothing(store: RunStore) -> None:
    await _family(store)
    assert await store.claim_run("r3")
    dry = await store.prune_runs(keep=0, dry_run=True)
    assert (dry.deleted, dry.children, dry.live) == (("r5", "o4", "r1"), ("r1-c", "r1-c-g"), ("r3",))
    assert len(await store.list_runs()) == 6
    pruned = await store.prune_runs(keep=0)
    assert (pruned.deleted, pruned.live) == (("r5", "o4", "r1"), ("r3",))
    assert [r.run_id for r in await store.list_runs()] == ["r3"]
    await store.release_run("r3")
    assert (await store.prune_runs(keep=0)).deleted == ("r3",)
    assert await store.list_runs() == []


# --- SQLite only -------------------------------------------------------------------------------------


def _query(path: Path, sql: str) -> list[Any]:
    with contextlib.closing(sqlite3.connect(path)) as db:
        return db.execute(sql).fetchall()


async def test_sqlite_uses_wal_and_its_pragmas(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "er" / "flujo.db"
    async with await open_store(str(path)) as store:
        assert path.exists()  # the parent directories were created
        db = store._connection()  # white-box: the pragmas live on the connection
        pragmas = {}
        for name in ("journal_mode", "synchronous", "busy_timeout", "foreign_keys"):
            rows = list(await db.execute_fetchall(f"PRAGMA {name}"))
            pragmas[name] = rows[0][0]
    assert pragmas == {"journal_mode": "wal", "synchronous": 1, "busy_timeout": 10000, "foreign_keys": 1}
    assert _query(path, "PRAGMA journal_mode") == [("wal",)]


async def test_sqlite_data_survives_close_and_reopen(tmp_path: Path) -> None:
    uri = f"sqlite:///{tmp_path}/flujo.db"  # four slashes: an absolute path
    store = await open_store(uri)
    await store.create_run(run("r1", input="ñ"))
    await store.record_step(step("r1", "0", output=[1]), [event("0", text="ok")])
    await store.update_run("r1", RunUpdate(status="completed", output=[1]))
    await store.close()
    await store.close()  # closing twice is harmless

    async with SqliteStore(tmp_path / "flujo.db") as reopened:
        found = await reopened.get_run("r1")
        assert found is not None and (found.status, found.input, found.output) == ("completed", "ñ", [1])
        assert [s.output for s in await reopened.steps("r1")] == [[1]]
        assert [e.payload for e in await reopened.events("r1")] == [{"text": "ok"}]
    with pytest.raises(StoreError, match="not open"):
        await reopened.list_runs()


# The schema as m001_runs_steps_events left it, frozen here: the upgrade test must not depend on the code
# it tests.
_M001_DATABASE = """
CREATE TABLE schema_migrations (name TEXT PRIMARY KEY, applied_at REAL NOT NULL);
INSERT INTO schema_migrations VALUES ('m001_runs_steps_events', 1.0);
CREATE TABLE runs (run_id TEXT PRIMARY KEY, pipeline_name TEXT NOT NULL, status TEXT NOT NULL, source TEXT,
    source_hash TEXT, input TEXT, output TEXT, error TEXT, created_at REAL NOT NULL, finished_at REAL,
    usage TEXT NOT NULL, parent_run_id TEXT, thread TEXT, pause_path TEXT, pause_message TEXT);
CREATE TABLE steps (seq INTEGER PRIMARY KEY AUTOINCREMENT,
    run_id TEXT NOT NULL REFERENCES runs(run_id) ON DELETE CASCADE, path TEXT NOT NULL, name TEXT NOT NULL,
    kind TEXT NOT NULL, status TEXT NOT NULL, input TEXT, output TEXT, error TEXT, started_at REAL NOT NULL,
    duration_s REAL NOT NULL, usage TEXT NOT NULL, UNIQUE (run_id, path));
CREATE TABLE events (seq INTEGER PRIMARY KEY AUTOINCREMENT,
    run_id TEXT NOT NULL REFERENCES runs(run_id) ON DELETE CASCADE, path TEXT NOT NULL, kind TEXT NOT NULL,
    ts REAL NOT NULL, payload TEXT NOT NULL);
INSERT INTO runs (run_id, pipeline_name, status, input, created_at, usage)
    VALUES ('old-run', 'legacy', 'completed', '"hola"', 5.0, '{"input_tokens": 7}');
INSERT INTO steps (run_id, path, name, kind, status, output, started_at, duration_s, usage)
    VALUES ('old-run', '0', 'only', 'agent', 'completed', '{"x": 1}', 5.0, 0.5, '{}');
INSERT INTO events (run_id, path, kind, ts, payload)
    VALUES ('old-run', '0', 'agent.reply', 5.5, '{"t": "é"}');
"""


def _old_database(path: Path, script: str = _M001_DATABASE) -> None:
    with contextlib.closing(sqlite3.connect(path)) as db:
        db.executescript(script)


async def test_sqlite_upgrades_an_m001_database(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    _old_database(path)
    async with await open_store(str(path)) as store:
        found = await store.get_run("old")
        assert found is not None
        assert (found.pipeline_name, found.input, found.usage) == ("legacy", "hola", Usage(input_tokens=7))
        assert [(s.name, s.output) for s in await store.steps("old-run")] == [("only", {"x": 1})]
        assert [e.payload for e in await store.events("old-run")] == [{"t": "é"}]
        await store.record_step(step("old-run", "1"), [])
        await store.create_run(run("new-run", thread="trip"))
        await store.record_thread_turns("new-run", said(("user", "hola")))
        assert contents(await store.thread_turns("trip")) == [("new-run", 0, "user", "hola")]
    names = [r[0] for r in _query(path, "SELECT name FROM schema_migrations ORDER BY applied_at")]
    assert names == [step.__name__ for step in MIGRATIONS]  # every later migration applied, in order
    indexes = {r[0] for r in _query(path, "SELECT name FROM sqlite_master WHERE type = 'index'")}
    assert {"runs_by_created_at", "runs_by_status", "events_by_run", "runs_by_thread"} <= indexes
    assert _query(path, "PRAGMA integrity_check") == [("ok",)]


async def test_sqlite_stores_a_long_turn_once_with_the_step_that_said_it(tmp_path: Path) -> None:
    path = tmp_path / "flujo.db"
    async with await open_store(str(path)) as store:
        await store.create_run(run("r1", thread="trip"))
        await store.record_step(step("r1", "0", output=LONG), [event("0", output=LONG)])
        await store.record_thread_turns("r1", said(("assistant", LONG), ("user", "short")))
        await store.record_thread_turns("r1", said(("assistant", LONG), ("user", "short")))
        assert [t.content for t in await store.thread_turns("trip")] == [LONG, "short"]
    assert _query(path, "SELECT COUNT(*) FROM texts") == [(1,)]
    [(text_id,)] = _query(path, "SELECT id FROM texts")
    contents = [(idx, role, codec.grow(content)) for idx, role, content in _query(path, _TURNS_STORED)]
    assert contents == [(0, "assistant", f'{{"$text":{text_id}}}'), (1, "user", '"short"')]


_TURNS_STORED = "SELECT idx, role, content FROM thread_turns ORDER BY idx"


async def test_sqlite_stores_event_kinds_and_step_statuses_as_codes_and_reads_old_text_too(tmp_path: Path) -> None:
    path = tmp_path / "flujo.db"
    async with await open_store(str(path)) as store:
        await store.create_run(run("r1"))
        await store.record_step(step("r1", "0"), [event("0", kind="agent.prompt", n=1), event("0", n=2)])
    # One character each (core.model.pack_tables): a conversation's iteration stores two or three events.
    assert _query(path, "SELECT kind FROM events ORDER BY seq") == [("\x01",), ("\x02",)]
    assert _query(path, "SELECT status FROM steps") == [("\x01",)]
    # Rows an older flujo wrote (and a kind no code names) keep their text, and read as they did.
    with contextlib.closing(sqlite3.connect(path)) as db, db:
        db.execute("UPDATE steps SET status = 'failed'")
        db.execute("INSERT INTO events (run_id, path, kind, ts, payload) VALUES ('r1', '1', 'agent.reply', 1, '{}')")
        db.execute("INSERT INTO events (run_id, path, kind, ts, payload) VALUES ('r1', '2', 'x.new', 2, '{}')")
    async with await open_store(str(path)) as store:
        assert [e.kind for e in await store.events("r1")] == ["agent.prompt", "agent.reply", "agent.reply", "x.new"]
        assert [e.path for e in await store.events("r1", kind="agent.reply")] == ["0", "1"]
        assert [m.kind for m in await store.marks("r1", of="events")] == [
            "agent.prompt", "agent.reply", "agent.reply", "x.new",
        ]  # fmt: skip
        [recorded] = await store.steps("r1")
        assert recorded.status == "failed"


async def test_sqlite_inserts_a_new_text_of_a_run_it_created_without_looking_it_up(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run this store created holds no text the store does not know (core/store/rows/text_cache.py): a new
    one is inserted at once; a known one is referred to; nothing is stored twice."""
    path = tmp_path / "flujo.db"
    looked_up: list[str] = []
    find = sqlite_batch.Batch._find_text

    def counted(self: sqlite_batch.Batch, run_id: str, text: str, digest: bytes) -> int | None:
        looked_up.append(text)
        return find(self, run_id, text, digest)

    monkeypatch.setattr(sqlite_batch.Batch, "_find_text", counted)
    async with await open_store(str(path)) as store:
        await store.create_run(run("r1"))
        await store.record_step(step("r1", "0", output=LONG), [event("0", output=LONG)])
        await store.record_step(step("r1", "1", input=LONG, output=LONG + "!"), [])
        assert looked_up == []
        assert [s.output for s in await store.steps("r1")] == [LONG, LONG + "!"]
    assert _query(path, "SELECT COUNT(*) FROM texts") == [(2,)]


async def test_sqlite_looks_up_the_texts_of_a_run_another_store_created(tmp_path: Path) -> None:
    """A resumed run's earlier texts were stored by another process: they are found, not stored again."""
    path = tmp_path / "flujo.db"
    async with await open_store(str(path)) as first:
        await first.create_run(run("r1"))
        await first.record_step(step("r1", "0", output=LONG), [])
    async with await open_store(str(path)) as resumed:
        await resumed.record_step(step("r1", "1", input=LONG, output="short"), [event("1", output=LONG)])
        assert [s.input for s in await resumed.steps("r1")] == [None, LONG]
    assert _query(path, "SELECT COUNT(*) FROM texts") == [(1,)]


async def test_sqlite_looks_up_texts_again_once_its_cache_forgot_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """When the text cache overflows it forgets every id, so a run it created is no longer complete."""
    monkeypatch.setattr(text_cache, "TEXT_CACHE_SIZE", 2)
    path = tmp_path / "flujo.db"
    async with await open_store(str(path)) as store:
        await store.create_run(run("r1"))
        await store.record_step(step("r1", "0", input=LONG, output=LONG + "1"), [])
        await store.record_step(step("r1", "1", output=LONG + "2"), [])  # the cache overflows: cleared
        await store.record_step(step("r1", "2", input=LONG, output=LONG + "1"), [])
    assert _query(path, "SELECT COUNT(*) FROM texts") == [(3,)]


async def test_sqlite_refuses_a_database_from_a_newer_flujo(tmp_path: Path) -> None:
    path = tmp_path / "flujo.db"
    await (await open_store(str(path))).close()
    with contextlib.closing(sqlite3.connect(path)) as db, db:
        db.execute("INSERT INTO schema_migrations VALUES ('m999_something_new', 2.0)")
    newer = rf"written by a newer flujo \(schema {SCHEMA_VERSION + 1} > {SCHEMA_VERSION}\)"
    with pytest.raises(StoreError, match=newer) as caught:
        await open_store(str(path))
    assert caught.value.hint == "upgrade flujo"


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (b"this is a text file, not a database\n" * 50, "is not a flujo database"),
        (None, r"is not a flujo database \(it holds other tables: notes\)"),
    ],
    ids=["text-file", "someone-elses-sqlite"],
)
async def test_sqlite_refuses_a_file_that_is_not_a_flujo_database(
    tmp_path: Path, content: bytes | None, expected: str
) -> None:
    path = tmp_path / "flujo.db"
    if content is None:
        _old_database(path, "CREATE TABLE notes (body TEXT); INSERT INTO notes VALUES ('keep me');")
    else:
        path.write_bytes(content)
    before = path.read_bytes()
    with pytest.raises(StoreError, match=expected) as caught:
        await open_store(str(path))
    assert "\n" not in str(caught.value) and caught.value.hint and "FLUJO_STATE_URI" in caught.value.hint
    # Left alone: not a byte changed, not switched to WAL mode (which adds -wal and -shm files beside it).
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["flujo.db"]
    if content is None:
        assert _query(path, "SELECT body FROM notes") == [("keep me",)]
        assert _query(path, "PRAGMA journal_mode") == [("delete",)]


async def test_sqlite_reports_a_directory_it_cannot_create(tmp_path: Path) -> None:
    (tmp_path / "a-file").write_text("x")
    with pytest.raises(StoreError, match="is not a directory"):
        await open_store(str(tmp_path / "a-file" / "flujo.db"))


async def test_a_store_that_cannot_be_opened_leaves_no_thread_behind(tmp_path: Path) -> None:
    # aiosqlite's thread answered the loop once more after a failed connect: once asyncio.run had closed the
    # loop, the thread printed a traceback under the one-line error (a name too long for the file system,
    # say). The failure is raised only once that thread has ended.
    import threading

    def workers() -> list[threading.Thread]:
        return [t for t in threading.enumerate() if t.name.endswith("(_connection_worker_thread)") and t.is_alive()]

    before = workers()
    for _ in range(5):
        with pytest.raises(StoreError, match="cannot open the run store"):
            await open_store(str(tmp_path / ("x" * 300 + ".db")))  # SQLite cannot open it
        assert workers() == before


@pytest.mark.parametrize("mode", ["create", "read"])
async def test_a_store_path_that_is_a_folder_or_a_symlink_loop_is_said_to_be_one(tmp_path: Path, mode: str) -> None:
    # SQLite says only "unable to open database file", and a reader "there is no run store at ...".
    (tmp_path / "loop").symlink_to("loop")
    for name, what in (("", "a folder"), ("loop", "a symlink loop")):
        path = tmp_path / name
        with pytest.raises(StoreError) as refused:
            await open_store(str(path), mode=mode)  # type: ignore[arg-type]
        assert refused.value.message == f"{path} is {what}, not a run store file"
        assert refused.value.hint is not None and "give the path of a database file" in refused.value.hint


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="needs a non-root POSIX user")
async def test_sqlite_reports_an_unwritable_directory(tmp_path: Path) -> None:
    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(0o500)
    try:
        with pytest.raises(StoreError, match="not writable"):
            await open_store(str(folder / "flujo.db"))
    finally:
        folder.chmod(0o700)


async def test_sqlite_explains_a_lock_held_by_another_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sqlite_module, "BUSY_TIMEOUT_S", 0.1)
    path = tmp_path / "flujo.db"
    async with await open_store(str(path)) as store:
        await store.create_run(run("r1"))
        with contextlib.closing(sqlite3.connect(path, isolation_level=None)) as other:
            other.execute("BEGIN IMMEDIATE")
            with pytest.raises(StoreUnavailable, match=r"cannot record step '0' of run r1: .* is locked") as caught:
                await store.record_step(step("r1", "0"), [])
            with pytest.raises(StoreUnavailable):
                await store.reconnect()  # still held
            other.execute("ROLLBACK")
        assert caught.value.hint and "write lock" in caught.value.hint
        with pytest.raises(StoreUnavailable, match="unavailable since an earlier write"):
            await store.record_step(step("r1", "0"), [])  # refused at once until the store reconnects
        await store.reconnect()
        await store.record_step(step("r1", "0"), [])  # usable again once the lock is gone
        assert len(await store.steps("r1")) == 1


async def test_sqlite_record_step_is_all_or_nothing(tmp_path: Path) -> None:
    async with await open_store(str(tmp_path / "flujo.db")) as store:
        await store.create_run(run("r1"))
        broken = TraceEvent(kind=None, path="0", payload={}, ts=1.0)  # type: ignore[arg-type]  # NOT NULL
        with pytest.raises(StoreError, match="cannot record step '0'"):
            await store.record_step(step("r1", "0"), [event("0"), broken])
        assert await store.steps("r1") == []
        assert await store.events("r1") == []


async def test_sqlite_a_cancelled_write_leaves_the_store_usable(tmp_path: Path) -> None:
    async with await open_store(str(tmp_path / "flujo.db")) as store:
        await store.create_run(run("r1"))
        # Cancel at different points: while waiting for the lock, for BEGIN, mid-transaction, at COMMIT.
        waits = [("ticks", n) for n in range(6)] + [("seconds", n * 0.00005) for n in range(12)]
        for i, (unit, amount) in enumerate(waits):
            task = asyncio.create_task(store.record_step(step("r1", f"c{i}"), [event(f"c{i}")]))
            if unit == "ticks":
                for _ in range(int(amount)):
                    await asyncio.sleep(0)
            else:
                await asyncio.sleep(amount)
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):  # a task may finish before the cancel lands
                await task
        await store.record_step(step("r1", "after"), [event("after")])
        steps = [s.path for s in await store.steps("r1")]
        assert steps[-1] == "after"
        assert len(await store.events("r1")) == len(steps)  # every step committed with its event, or neither


async def test_open_store_rejects_other_uris(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="cannot use 'mysql://x/y' as a run store"):
        await open_store("mysql://x/y")
    async with await open_store(":memory:") as store:
        await store.create_run(run("m"))
        assert [r.run_id for r in await store.list_runs()] == ["m"]


_WRITER = """
import asyncio, sys, time
from core.model.records import RunRecord, StepRecord, TraceEvent
from core.model.records import RunRecord, RunUpdate, StepRecord, TraceEvent
from core.store import open_store

async def main(path: str, worker: int, start_at: float) -> None:
    store = await open_store(path)
    try:
        run_id = f"worker-{worker}"
        await store.create_run(RunRecord(run_id=run_id, pipeline_name="load", status="running",
                                         created_at=time.time()))
        await asyncio.sleep(max(0.0, start_at - time.time()))
        for i in range(200):
            events = [TraceEvent("agent.prompt", str(i), {"text": f"prompt {i} ✓"}, time.time()),
                      TraceEvent("agent.reply", str(i), {"text": f"reply {i}"}, time.time())]
            await store.record_step(StepRecord(run_id=run_id, path=str(i), name=f"s{i}", kind="agent",
                                               status="completed", output={"i": i}), events)
        await store.update_run(run_id, RunUpdate(status="completed", finished_at=time.time()))
    finally:
        await store.close()

asyncio.run(main(sys.argv[1], int(sys.argv[2]), float(sys.argv[3])))
"""


@pytest.mark.slow
async def test_sqlite_four_processes_write_at_once(tmp_path: Path) -> None:
    path = tmp_path / "shared" / "flujo.db"  # not created beforehand: the processes race to create it
    script = tmp_path / "writer.py"
    script.write_text(_WRITER, encoding="utf-8")
    env = os.environ | {"PYTHONPATH": str(REPO), "PYTHONWARNINGS": "error"}
    start_at = time.time() + 1.5
    writers = [
        subprocess.Popen(
            [sys.executable, str(script), str(path), str(i), str(start_at)],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for i in range(4)
    ]
    results = [w.communicate(timeout=60) for w in writers]
    assert [(w.returncode, err.decode()) for w, (_, err) in zip(writers, results, strict=True)] == [(0, "")] * 4

    async with await open_store(str(path)) as store:
        runs = await store.list_runs()
        assert sorted((r.run_id, r.status) for r in runs) == [(f"worker-{i}", "completed") for i in range(4)]
        for r in runs:
            steps = await store.steps(r.run_id)
            assert [s.path for s in steps] == [str(i) for i in range(200)]
            assert len(await store.events(r.run_id)) == 400
    assert _query(path, "SELECT count(*) FROM steps") == [(800,)]
    assert _query(path, "PRAGMA integrity_check") == [("ok",)]


async def test_a_store_another_process_created_while_this_one_looked_is_not_foreign(tmp_path: Path) -> None:
    """Opening a new file races with another process creating the store in it: seen first without
    ``schema_migrations`` and then with the other process's tables, it is a flujo database, not another
    program's (eight processes starting on one new file hit this)."""
    from core.store.sqlite_backend import migrations

    path = tmp_path / "flujo.db"
    async with await open_store(str(path)):
        pass  # the other process: it created and migrated the store
    db = await aiosqlite.connect(path)
    try:
        await migrations._refuse_foreign_tables(db, label=str(path))  # the second read of the race
    finally:
        await db.close()


async def test_sqlite_writes_a_step_on_the_loop_thread_without_a_hop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A step's write goes through the store's own connection on the event loop's thread
    (core/store/sqlite_backend/writer.py), not to aiosqlite's thread and back (docs/performance.md)."""
    async with await open_store(str(tmp_path / "flujo.db")) as store:
        await store.create_run(run("r1"))
        hops = 0
        execute = aiosqlite.Connection._execute

        async def counted(self: aiosqlite.Connection, fn: Any, *args: Any, **kwargs: Any) -> Any:
            nonlocal hops
            hops += 1
            return await execute(self, fn, *args, **kwargs)

        monkeypatch.setattr(aiosqlite.Connection, "_execute", counted)
        await store.record_step(step("r1", "0"), [event("0")])
        assert hops == 0
        assert [s.path for s in await store.steps("r1")] == ["0"]  # reads still go through aiosqlite
        assert hops > 0


async def test_sqlite_waits_for_another_writer_without_blocking_the_loop(tmp_path: Path) -> None:
    """While another process holds the write lock, a step's write waits with the loop free (other tasks
    run), then goes through once the lock is released."""
    path = tmp_path / "flujo.db"
    async with await open_store(str(path)) as store:
        await store.create_run(run("r1"))
        with contextlib.closing(sqlite3.connect(path, isolation_level=None)) as other:
            other.execute("BEGIN IMMEDIATE")
            write = asyncio.create_task(store.record_step(step("r1", "0"), [event("0")]))
            ticks = 0
            for _ in range(20):
                await asyncio.sleep(0.005)
                ticks += 1
            assert not write.done() and ticks == 20
            other.execute("ROLLBACK")
            await asyncio.wait_for(write, timeout=5)
        assert [s.path for s in await store.steps("r1")] == ["0"]
