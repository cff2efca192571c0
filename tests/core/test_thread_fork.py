"""Forking a thread and finding a blueprint's latest run, on SqliteStore, PostgresStore (a real server) and
MemoryStore: ``RunStore.start_thread`` (a run and its turns in one transaction, only for a thread that has no
run yet), ``RunStore.latest_run`` (the newest top-level run of a blueprint file) and
``core.conversation.threads.fork_thread`` over them (what ``flujo threads fork`` and ``flujo run -c`` use)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from core import FORK_OPTION, ConversationTurn, RunError, RunRecord, RunStore, fork_thread
from core.store import MemoryStore, open_store

LONG = "a turn long enough to be stored once in the texts table of its run " * 3


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


def run(run_id: str, created_at: float, **fields: object) -> RunRecord:
    values: dict[str, object] = {"pipeline_name": "chat", "status": "completed", "source": "/bp/chat.yaml"} | fields
    return RunRecord(run_id=run_id, created_at=created_at, **values)  # type: ignore[arg-type]


def turns(*texts: str) -> list[ConversationTurn]:
    return [ConversationTurn("user" if i % 2 == 0 else "assistant", t, len(t.split())) for i, t in enumerate(texts)]


async def trip(store: RunStore) -> None:
    """Thread ``trip``: run r1 said two turns, run r2 (another blueprint) three, one of them long."""
    await store.create_run(run("r1", 10.0, thread="trip"))
    await store.record_thread_turns("r1", turns("Lisbon", "When?"))
    await store.create_run(run("r2", 20.0, thread="trip", pipeline_name="planner", source="/bp/planner.yaml"))
    await store.record_thread_turns("r2", turns("June", LONG, "Two adults"))


async def test_start_thread_creates_the_run_with_its_turns_only_for_a_new_thread(store: RunStore) -> None:
    await trip(store)
    assert await store.start_thread(run("f1", 30.0, thread="alt"), turns("Lisbon", LONG)) is True
    alt = await store.thread_turns("alt")
    assert [(t.run_id, t.index, t.role, t.content, t.tokens) for t in alt] == [
        ("f1", 0, "user", "Lisbon", 1),
        ("f1", 1, "assistant", LONG, len(LONG.split())),
    ]
    recorded = await store.get_run("f1")
    assert recorded is not None and recorded.thread == "alt" and recorded.status == "completed"
    # A thread that has a run is never started again: nothing is stored.
    for taken in ("alt", "trip"):
        assert await store.start_thread(run(f"x-{taken}", 40.0, thread=taken), turns("again")) is False
        assert await store.get_run(f"x-{taken}") is None
    assert [t.content for t in await store.thread_turns("trip")] == ["Lisbon", "When?", "June", LONG, "Two adults"]


async def test_a_fork_copies_the_first_turns_into_a_new_thread_that_later_runs_continue(store: RunStore) -> None:
    await trip(store)
    summary = await fork_thread(store, "trip", "alt", run_id="f1", at_turn=4)
    assert summary is not None and (summary.name, summary.runs, summary.turns) == ("alt", 1, 4)
    assert [t.content for t in await store.thread_turns("alt")] == ["Lisbon", "When?", "June", LONG]
    fork = await store.get_run("f1")
    assert fork is not None
    # The run that said the last copied turn names the fork's blueprint (so `flujo run FILE -c` continues it).
    assert (fork.pipeline_name, fork.source, fork.status) == ("planner", "/bp/planner.yaml", "completed")
    assert fork.options == {FORK_OPTION: {"thread": "trip", "turns": 4}}
    # A later run of the fork sees the copied turns as an earlier run's; the forked thread is unchanged.
    await store.create_run(run("r3", fork.created_at + 1, thread="alt"))
    assert [t.content for t in await store.thread_turns("alt", before_run="r3")] == ["Lisbon", "When?", "June", LONG]
    assert len(await store.thread_turns("trip")) == 5
    # All the turns when no turn is given; the fork of a fork works the same.
    whole = await fork_thread(store, "trip", "copy", run_id="f2")
    assert whole is not None and whole.turns == 5
    again = await fork_thread(store, "alt", "alt-2", run_id="f3", at_turn=1)
    assert again is not None and [t.content for t in await store.thread_turns("alt-2")] == ["Lisbon"]
    first = await store.get_run("f3")
    assert first is not None and first.pipeline_name == "planner"  # the copy's turns are the fork run's (f1)


async def test_what_a_fork_refuses(store: RunStore) -> None:
    await trip(store)
    assert await fork_thread(store, "nowhere", "alt", run_id="f1") is None
    for at_turn in (0, 6):
        with pytest.raises(RunError, match=f"--at-turn {at_turn}: thread trip has 5 turn"):
            await fork_thread(store, "trip", "alt", run_id="f1", at_turn=at_turn)
    with pytest.raises(RunError, match="thread trip already exists"):
        await fork_thread(store, "trip", "trip", run_id="f1")
    with pytest.raises(RunError, match="thread name 'no spaces' is not valid"):
        await fork_thread(store, "trip", "no spaces", run_id="f1")
    assert await store.get_run("f1") is None


async def test_a_thread_whose_runs_said_nothing_forks_into_an_empty_thread(store: RunStore) -> None:
    await store.create_run(run("r1", 10.0, thread="quiet", status="paused"))
    summary = await fork_thread(store, "quiet", "quiet-2", run_id="f1")
    assert summary is not None and (summary.runs, summary.turns) == (1, 0)
    fork = await store.get_run("f1")
    assert fork is not None and fork.source == "/bp/chat.yaml"


async def test_the_latest_run_of_a_blueprint_is_its_newest_top_level_run(store: RunStore) -> None:
    assert await store.latest_run(source="/bp/chat.yaml") is None
    await store.create_run(run("old", 10.0, thread="a"))
    await store.create_run(run("same-time-first", 20.0))
    await store.create_run(run("same-time-second", 20.0, thread="b"))
    await store.create_run(run("other", 30.0, source="/bp/other.yaml"))
    await store.create_run(run("child", 40.0, parent_run_id="other"))  # a sub-workflow run of chat.yaml
    latest = await store.latest_run(source="/bp/chat.yaml")
    assert latest is not None and (latest.run_id, latest.thread) == ("same-time-second", "b")
    latest = await store.latest_run(source="/bp/other.yaml")
    assert latest is not None and latest.run_id == "other"
    assert await store.latest_run(source="/bp/chat") is None  # the whole path, not a prefix


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
async def test_forks_into_one_name_from_several_stores_at_once_start_it_once(
    backend: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    """Each store its own connection (processes, on one machine or several): the check that the new thread has no
    run and the run's creation are one transaction, so one fork wins and the others are refused."""
    uri = str(tmp_path / "flujo.db") if backend == "sqlite" else request.getfixturevalue("postgres_uri")
    async with await open_store(uri) as first:
        await trip(first)
    stores = [await open_store(uri) for _ in range(4)]
    try:
        results = await asyncio.gather(
            *(fork_thread(s, "trip", "alt", run_id=f"f{i}") for i, s in enumerate(stores)), return_exceptions=True
        )
        assert sum(1 for r in results if not isinstance(r, BaseException)) == 1, results
        assert all(isinstance(r, RunError) for r in results if isinstance(r, BaseException))
        summary = await stores[0].get_thread("alt")
        assert summary is not None and (summary.runs, summary.turns) == (1, 5)
    finally:
        for opened in stores:
            await opened.close()
