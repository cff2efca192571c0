"""A run read a page at a time (``RunStore.step_page``, ``event_page``, ``marks``), on SQLite, PostgreSQL (a real
server) and in memory: the pages put together are what ``steps`` and ``events`` give, in their order and
numbered in it; ``until`` and ``under`` bound a page; a step recorded again moves to the end; and the lists of a
long conversation are read once, not again for each page."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any, Literal

import pytest

from core import RunRecord, RunStore, StepRecord, TraceEvent
from core.store import MemoryStore, SqliteStore, open_store
from core.store.postgres_backend.store import PostgresStore

RUN = "pagepagepage0001"
SYSTEM = {"role": "system", "content": "You help a person plan. Ask one question at a time, and keep it short."}


def turn(n: int) -> dict[str, str]:
    return {
        "role": "assistant" if n % 2 else "user",
        "content": f"Turn {n}: what matters most about the offsite, and by when?",
    }


def prompt(n: int) -> dict[str, Any]:
    """The payload of the n-th call of an unbounded conversation: every turn so far (a list stored once,
    extending the one before: ``core.store.rows.shared_lists``)."""
    return {"agent": "scripted", "messages": [SYSTEM, *(turn(i) for i in range(n + 8))], "history_injected": True}


def step(path: str, started_at: float, **fields: Any) -> StepRecord:
    values: dict[str, Any] = {"name": path.rsplit("/", 1)[-1], "kind": "step", "status": "completed"} | fields
    return StepRecord(run_id=RUN, path=path, started_at=started_at, **values)


@pytest.fixture(params=["sqlite", "postgres", "memory"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[RunStore]:
    opened: RunStore
    if request.param == "sqlite":
        opened = await open_store(str(tmp_path / "flujo.db"))
    elif request.param == "postgres":  # a real server (tests/support/postgres_server.py), a new schema per test
        opened = await open_store(request.getfixturevalue("postgres_uri"))
    else:
        opened = MemoryStore()
    await opened.create_run(RunRecord(RUN, "chat", "running", created_at=1000.0))
    await opened.create_run(RunRecord("otherotherother1", "chat", "running", created_at=1000.0))
    try:
        yield opened
    finally:
        await opened.close()


async def _conversation(store: RunStore, calls: int) -> None:
    """``calls`` iterations of a loop ``chat`` (an agent step ``ask`` each, its prompt and reply), another
    run's steps in between, then the loop's own record."""
    for n in range(1, calls + 1):
        here = f"chat/{n}/ask"
        events = [
            TraceEvent("agent.prompt", here, prompt(n), 1000.0 + n),
            TraceEvent("agent.reply", here, {"output": f"answer {n}"}, 1000.5 + n),
        ]
        await store.record_step(step(here, 1000.0 + n, output=f"answer {n}"), events)
        other = StepRecord(run_id="otherotherother1", path=f"x/{n}", name="x", kind="step", status="completed")
        await store.record_step(other, [TraceEvent("agent.reply", f"x/{n}", {"output": n}, 1000.0 + n)])
    await store.record_step(
        step("chat", 1000.0, kind="loop"), [TraceEvent("loop.exit", "chat", {"reason": "max"}, 2e3)]
    )


async def _all_pages(read: Callable[..., Awaitable[list[Any]]], **bounds: Any) -> list[Any]:
    found: list[Any] = []
    after = bounds.pop("after", 0)
    while page := await read(RUN, after=after, limit=3, **bounds):
        found.extend(page)
        after = page[-1][0] if isinstance(page[-1], tuple) else page[-1].seq
    return found


async def test_pages_put_together_are_the_whole_run_in_order(store: RunStore) -> None:
    await _conversation(store, 10)
    steps = await _all_pages(store.step_page)
    events = await _all_pages(store.event_page)
    assert [record for _, record in steps] == await store.steps(RUN)
    assert [record for _, record in events] == await store.events(RUN)
    for numbered in (steps, events):
        numbers = [seq for seq, _ in numbered]
        assert numbers == sorted(set(numbers))
    step_marks = await _all_pages(lambda run_id, **kw: store.marks(run_id, "steps", **kw))
    event_marks = await _all_pages(lambda run_id, **kw: store.marks(run_id, "events", **kw))
    assert [(m.seq, m.path, m.ts, m.kind) for m in step_marks] == [
        (seq, s.path, s.started_at, s.kind) for seq, s in steps
    ]
    assert [(m.seq, m.path, m.ts, m.kind) for m in event_marks] == [(seq, e.path, e.ts, e.kind) for seq, e in events]


async def test_a_page_is_bounded_by_until_and_under(store: RunStore) -> None:
    await _conversation(store, 12)
    events = await store.event_page(RUN, limit=1000)
    third = events[4][0]  # chat/3/ask's prompt
    upto = await _all_pages(store.event_page, until=third)
    assert [seq for seq, _ in upto] == [seq for seq, _ in events if seq <= third]
    # chat/1 and what is below it: not chat/10, chat/11 or chat/12, nor the loop's own event at "chat".
    below = await _all_pages(store.event_page, under="chat/1")
    assert [(e.path, e.kind) for _, e in below] == [("chat/1/ask", "agent.prompt"), ("chat/1/ask", "agent.reply")]
    assert [e.path for _, e in await _all_pages(store.event_page, under="chat/1/ask")] == ["chat/1/ask"] * 2
    assert [s.path for _, s in await _all_pages(store.step_page, under="chat")] == [
        *(f"chat/{n}/ask" for n in range(1, 13)),
        "chat",
    ]
    assert await store.step_page(RUN, under="chat/1/", limit=10) == []  # a path, not a prefix of text


async def test_a_step_recorded_again_moves_to_the_end_with_a_new_number(store: RunStore) -> None:
    await _conversation(store, 3)
    before = {s.path: seq for seq, s in await store.step_page(RUN, limit=100)}
    await store.record_step(step("chat/1/ask", 1001.0, output="again"), [])
    after = await store.step_page(RUN, limit=100)
    assert [s.path for _, s in after][-1] == "chat/1/ask" and after[-1][1].output == "again"
    assert after[-1][0] > max(before.values())
    assert [m.path for m in await store.marks(RUN, "steps", limit=100)] == [s.path for _, s in after]


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
async def test_the_lists_of_a_long_conversation_are_read_once(
    backend: Literal["sqlite", "postgres"], tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """Each prompt's list extends the one before: read page by page, a page reads the texts it needs, never
    the chain of lists back to the first (which ``events`` reads once for the whole run)."""
    uri = str(tmp_path / "flujo.db") if backend == "sqlite" else request.getfixturevalue("postgres_uri")
    store = await open_store(uri)
    assert isinstance(store, SqliteStore | PostgresStore)
    try:
        await store.create_run(RunRecord(RUN, "chat", "running", created_at=1000.0))
        calls = 60
        for n in range(1, calls + 1):
            await store.record_step(
                step(f"chat/{n}/ask", 1000.0 + n), [TraceEvent("agent.prompt", f"chat/{n}/ask", prompt(n), 1e3 + n)]
            )
        calls_made = 0
        texts = store._texts

        async def counted(ids: Any) -> dict[int, str]:
            nonlocal calls_made
            calls_made += 1
            return await texts(ids)

        store._texts = counted  # type: ignore[method-assign]  # the real reads, counted
        whole = await store.events(RUN)
        calls_made = 0
        after = 0
        per_page: list[int] = []
        read: list[TraceEvent] = []
        while page := await store.event_page(RUN, after=after, limit=5):
            per_page.append(calls_made)
            calls_made = 0
            read.extend(event for _, event in page)
            after = page[-1][0]
        assert read == whole
        # A page reads its lists, then the texts their new items refer to; without the lists read before, the
        # last page would read one list a round back to the first (a dozen rounds and more).
        assert len(per_page) == calls // 5 and max(per_page) <= 2, per_page
    finally:
        await store.close()
